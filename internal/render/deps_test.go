package render

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// render needs nothing of the harness but the root package's vocabulary.
func TestImportsOnlyTheRootAndTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.ElementsMatch(t, []string{"github.com/idemcheck/idemcheck", "github.com/idemcheck/idemcheck/internal/render"}, strings.Fields(string(out)))
}
