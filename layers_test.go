package idemcheck

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/idemcheck/idemcheck"

// listed is what `go list -json` says of one package: its own imports and
// every package it depends on, tests aside.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// ours is p's path inside the module ("." for the root, "assert"), or ""
// for a package from elsewhere.
func ours(p string) string {
	if p == module {
		return "."
	}
	rest, ok := strings.CutPrefix(p, module+"/")
	if !ok {
		return ""
	}
	return rest
}

// The layering the package docs describe (doc.go, and each package's first
// comment) holds: which of the module's packages each may depend on, and
// the standard packages the pure ones stay away from.
func TestPackagesKeepTheirLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[ours(p.ImportPath)] = p
	}
	// mayUse: the only packages of the module a package may depend on,
	// directly or not.
	mayUse := map[string][]string{
		".":                  {},
		"assert":             {"."},
		"history":            {"."},
		"internal/render":    {"."},
		"faults":             {".", "internal/tcprelay", "internal/mysqlwire"},
		"internal/netguard":  {"."},
		"internal/mysqlwire": {},
		"internal/wire":      {"."},
		"internal/linkemu":   {"internal/tcprelay"},
		"targets/provider":   {"."},
		"targets":            {".", "faults", "targets/provider", "internal/netguard", "internal/tcprelay", "internal/mysqlwire"},
		"scenarios":          {".", "faults", "targets", "targets/provider", "internal/netguard", "internal/tcprelay", "internal/mysqlwire"},
		"runner":             {".", "faults", "history", "scenarios", "targets", "targets/provider", "internal/netguard", "internal/tcprelay", "internal/wire", "internal/mysqlwire"},
	}
	for name, allowed := range mayUse {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("no package %s", name)
			continue
		}
		for _, d := range p.Deps {
			if o := ours(d); o != "" && o != name && !slices.Contains(allowed, o) {
				t.Errorf("%s depends on %s; it may depend on %v of the module only", name, o, allowed)
			}
		}
	}
	// The root imports only the standard library (checked above: it
	// depends on nothing of the module, and a standard path has no dot in
	// its first element).
	for _, d := range pkgs["."].Deps {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
			t.Errorf("the root package depends on %s, outside the standard library", d)
		}
	}
	// The checker and the renderers are pure: no network, no processes,
	// no database.
	for _, name := range []string{"assert", "internal/render", "history"} {
		for _, imp := range pkgs[name].Imports {
			if imp == "net" || strings.HasPrefix(imp, "net/") || imp == "os/exec" || imp == "database/sql" {
				t.Errorf("%s imports %s", name, imp)
			}
		}
	}
	// Nothing the module ships depends on a front end or an example, and
	// certify, the entry point, on none of the configuration's front ends.
	never := map[string][]string{
		"":                {"examples", "cmd/idemcheck", "idemchecktest", "bench", "internal/linkemu"},
		"certify":         {"internal/config", "internal/suite", "internal/render"},
		"internal/config": {"internal/suite", "internal/render"},
	}
	for name, p := range pkgs {
		if strings.HasPrefix(name, "examples") || strings.HasPrefix(name, "bench") || name == "cmd/idemcheck" {
			// The command ships, but no emulated link.
			if name == "cmd/idemcheck" && slices.ContainsFunc(p.Deps, func(d string) bool { return ours(d) == "internal/linkemu" }) {
				t.Errorf("cmd/idemcheck depends on internal/linkemu")
			}
			continue
		}
		for _, d := range p.Deps {
			o := ours(d)
			for _, bad := range slices.Concat(never[""], never[name]) {
				if o == bad || strings.HasPrefix(o, bad+"/") {
					t.Errorf("%s depends on %s", name, o)
				}
			}
		}
	}
}
