// Package testbin builds a program for tests that start it as a process:
// once per test binary, on first use, into a folder of its own that the
// test binary's TestMain removes at the end. It is for tests only.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Program is a main package to build, such as
// "github.com/idemcheck/idemcheck/examples/orders/cmd/orders".
type Program struct {
	pkg  string
	once sync.Once
	dir  string
	path string
	err  error
}

// New returns the program of the main package pkg, not built yet.
func New(pkg string) *Program { return &Program{pkg: pkg} }

// Path builds the program the first time it is asked for, and returns the
// path of the binary; a build that fails fails t, with the compiler's
// output.
func (p *Program) Path(t testing.TB) string {
	t.Helper()
	p.once.Do(func() {
		if p.dir, p.err = os.MkdirTemp("", "idemcheck-test-bin-"); p.err != nil {
			return
		}
		p.path = filepath.Join(p.dir, filepath.Base(p.pkg))
		if out, err := exec.Command("go", "build", "-o", p.path, p.pkg).CombinedOutput(); err != nil {
			p.err = fmt.Errorf("cannot build %s: %v\n%s", p.pkg, err, out)
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.path
}

// Remove deletes the built binary and its folder, if it was built; a
// TestMain calls it when the tests are over.
func (p *Program) Remove() {
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}
