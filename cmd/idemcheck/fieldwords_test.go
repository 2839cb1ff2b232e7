package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// A library error that names the way out as a setting, however deep it is
// wrapped, is said with the command's flags.
func TestLibraryErrorsAreSaidInFlags(t *testing.T) {
	local := idemcheck.Fieldf(idemcheck.ExitUnavailable, "DSN", "no database: %s; the local PostgreSQL did not start: %w",
		idemcheck.Setting("DSN"), idemcheck.Fieldf(idemcheck.ExitUnavailable, "Powers", "needs %s", idemcheck.Setting("Powers")))
	err := idemcheck.Unavailablef("%w", local)
	assert.Equal(t, "no database: set DSN; the local PostgreSQL did not start: needs set Powers", err.Error(), "Go's words")
	assert.Equal(t, "no database: pass --db DSN (or set DATABASE_URL); the local PostgreSQL did not start: needs --cmd or --image", inFlagWords(err))
}

// The library's messages (every package a Go program can import, and the
// module's packages they depend on) name no flag of this command: a Go
// program, a suite, or a history made from either, never had that flag to
// pass. They name a setting as a Field or Setting (said here as its flag,
// inFlagWords) or in plain words. Only config.FlagWords, this command's
// own words, spells flags.
func TestLibraryMessagesNameNoFlag(t *testing.T) {
	const module = "github.com/idemcheck/idemcheck"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", module+"/...").Output()
	require.NoError(t, err)
	var public []string
	for _, p := range strings.Fields(string(out)) {
		rest := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if first, _, _ := strings.Cut(rest, "/"); first == "cmd" || first == "examples" || first == "bench" || first == "internal" {
			continue
		}
		public = append(public, p)
	}
	out, err = exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}|{{.Name}}|{{.Dir}}|{{join .GoFiles \",\"}}"}, public...)...).Output()
	require.NoError(t, err)
	var flags []string
	for _, f := range flagTable {
		if len(f.flag) > 1 {
			flags = append(flags, regexp.QuoteMeta(f.flag))
		}
	}
	named := regexp.MustCompile(`--(` + strings.Join(flags, "|") + `)\b([^-]|$)`)
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 || (f[0] != module && !strings.HasPrefix(f[0], module+"/")) || f[1] == "main" || f[3] == "" {
			continue
		}
		for _, name := range strings.Split(f[3], ",") {
			path := filepath.Join(f[2], name)
			if f[0] == module+"/internal/config" && name == "words.go" {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, path, nil, 0)
			require.NoError(t, err)
			files++
			ast.Inspect(file, func(n ast.Node) bool {
				if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
					if m := named.FindString(l.Value); m != "" {
						t.Errorf("%s: the library names the flag %s in %s: name the setting (idemcheck.Field, idemcheck.Setting) or say it in words",
							fset.Position(l.Pos()), strings.TrimRight(m, " )\"`.,;:"), l.Value)
					}
				}
				return true
			})
		}
	}
	assert.Greater(t, files, 50, "the library's files were read")
}
