package idemcheck

import (
	"runtime"
	"runtime/debug"
)

// ModulePath is the import path of idemcheck's module.
const ModulePath = "github.com/idemcheck/idemcheck"

// BuildTool is the build of idemcheck in the running binary, read from
// what the Go toolchain recorded in it: the module version for
// `go install …@v1.2.0` or a program that requires a release, "(devel)"
// with the VCS commit for a build from a checkout (make build, make
// install, go run). A report stamped with it says which idemcheck judged
// the target.
func BuildTool() Tool {
	t := Tool{Name: "idemcheck", Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return t
	}
	if bi.Main.Path != ModulePath {
		// A program of its own that uses idemcheck as a library: the
		// version it requires; the VCS settings are the program's.
		for _, d := range bi.Deps {
			if d.Path == ModulePath && d.Version != "" {
				t.Version = d.Version
			}
		}
		return t
	}
	if v := bi.Main.Version; v != "" {
		t.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			t.Commit = s.Value
			if len(t.Commit) > 12 {
				t.Commit = t.Commit[:12]
			}
		case "vcs.modified":
			t.Modified = s.Value == "true"
		}
	}
	return t
}
