package idemcheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The size limits of the module's own code, tests aside (issue 31): a
// function a newcomer can read at once, a file that holds one mechanism.
const (
	maxFuncLines  = 120 // from func to its closing brace
	maxCyclomatic = 40  // as gocyclo counts
	maxFileLines  = 799 // a file stays under 800 lines
)

// sizeExceptions are the functions ("path:name", the name as gocyclo
// prints it) and files ("path") still over a limit, with the issue that
// brings them under it. Each is in a file being reshaped by that issue's
// other work: remove its line once that work is merged. A line that no
// longer excuses anything fails the test, so the list only shrinks.
var sizeExceptions = map[string]string{}

// Every non-test Go file of the module, examples and benchmarks included,
// keeps under the size limits: no function over maxFuncLines lines or
// cyclomatic complexity maxCyclomatic, no file over maxFileLines lines.
func TestCodeKeepsItsSizeLimits(t *testing.T) {
	fset := token.NewFileSet()
	over := map[string]string{} // what is over a limit, and by how much
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// What the go command leaves out of the module's packages.
			if path != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		path = filepath.ToSlash(path)
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			over[path] = fmt.Sprintf("%d lines (limit %d)", n, maxFileLines)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := path + ":" + funcName(fn)
			var why []string
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				why = append(why, fmt.Sprintf("%d lines (limit %d)", n, maxFuncLines))
			}
			if c := cyclomatic(fn); c > maxCyclomatic {
				why = append(why, fmt.Sprintf("cyclomatic complexity %d (limit %d)", c, maxCyclomatic))
			}
			if len(why) > 0 {
				over[key] = strings.Join(why, ", ")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := sizeExceptions[k]; !ok {
			t.Errorf("%s: %s: split it by meaning (a function per thing it does, a file per mechanism)", k, over[k])
		}
	}
	for k, issue := range sizeExceptions {
		if _, ok := over[k]; !ok {
			t.Errorf("%s is within the size limits now: remove its line from sizeExceptions (%s)", k, issue)
		}
	}
}

// funcName names fn as gocyclo does: "f", "(T).m" or "(*T).m".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, _ := t.(*ast.Ident)
	if id == nil {
		return fn.Name.Name
	}
	return "(" + star + id.Name + ")." + fn.Name.Name
}

// cyclomatic is fn's cyclomatic complexity as gocyclo counts it: one, plus
// one for each if, for, range, case and select case other than a default,
// && and ||, function literals inside fn included.
func cyclomatic(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
