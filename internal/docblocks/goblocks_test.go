package docblocks

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goImports are the packages a Go block of the documentation may use, by
// the name it calls them.
var goImports = map[string]string{
	"certify": "github.com/idemcheck/idemcheck/certify", "idemcheck": "github.com/idemcheck/idemcheck",
	"idemchecktest": "github.com/idemcheck/idemcheck/idemchecktest", "scenarios": "github.com/idemcheck/idemcheck/scenarios",
	"runner":  "github.com/idemcheck/idemcheck/runner",
	"targets": "github.com/idemcheck/idemcheck/targets", "faults": "github.com/idemcheck/idemcheck/faults", "pgxpool": "github.com/jackc/pgx/v5/pgxpool",
	"context": "context", "fmt": "fmt", "http": "net/http", "url": "net/url", "testing": "testing", "time": "time",
}

// goGiven declares what a Go block takes as given: a handler and a pool.
const goGiven = `package snippet

import (
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	api  http.Handler
	pool *pgxpool.Pool
)
`

var (
	goFence = regexp.MustCompile("(?m)^```go\n")
	goUse   = regexp.MustCompile(`\b([a-z]+)\.[A-Z]`)
)

// Every Go block of the README and docs/ compiles against the module as it
// is. A block is whole declarations (a func the reader can paste), built
// as a package of its own through go build's -overlay, so nothing is
// written into the tree; the compiler's errors name the page and line.
func TestGoBlocksCompile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dir := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(b)
		rel, _ := filepath.Rel(root, f)
		for _, m := range goFence.FindAllStringIndex(text, -1) {
			end := strings.Index(text[m[1]:], "\n```")
			require.GreaterOrEqual(t, end, 0, "%s: a go block is never closed", rel)
			block := text[m[1] : m[1]+end+1]
			line := strings.Count(text[:m[1]], "\n") + 1
			where := fmt.Sprintf("%s:%d", rel, line)
			require.Regexp(t, `^(func|type|var|const) `, block, "%s: a go block is whole declarations, so that it can be compiled", where)

			var imports []string
			for _, u := range goUse.FindAllStringSubmatch(block, -1) {
				if p, ok := goImports[u[1]]; ok && !slices.Contains(imports, p) {
					imports = append(imports, p)
				}
			}
			src := "package snippet\n\nimport (\n"
			for _, p := range imports {
				src += fmt.Sprintf("\t%q\n", p)
			}
			// The block's lines keep their numbers in the compiler's errors.
			src += ")\n\n//line " + where + "\n" + block

			pkg := fmt.Sprintf("internal/docblocks/goblock%d", len(pkgs))
			name := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(where)+".go")
			require.NoError(t, os.WriteFile(name, []byte(src), 0o644))
			given := filepath.Join(dir, fmt.Sprintf("given%d.go", len(pkgs)))
			require.NoError(t, os.WriteFile(given, []byte(goGiven), 0o644))
			overlay[filepath.Join(root, pkg, "block.go")] = name
			overlay[filepath.Join(root, pkg, "given.go")] = given
			pkgs = append(pkgs, "./"+pkg)
		}
	}
	require.NotEmpty(t, pkgs, "the README shows certify.Run from Go")
	o, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	oFile := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(oFile, o, 0o644))
	cmd := exec.Command("go", append([]string{"build", "-overlay", oFile}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "a Go block of the documentation does not compile:\n%s", out)
	t.Logf("%d Go blocks compile", len(pkgs))
}
