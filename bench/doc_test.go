package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRewriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	begin, end := SectionBegin("figures"), SectionEnd("figures")
	other := SectionBegin("soak") + "\nkept\n" + SectionEnd("soak")
	require.NoError(t, os.WriteFile(path, []byte("# T\n\nintro\n"+begin+"\nold\n"+end+"\n\n"+other+"\nafter\n"), 0o644))
	require.NoError(t, RewriteSection(path, "figures", "new figures"))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# T\n\nintro\n"+begin+"\nnew figures\n"+end+"\n\n"+other+"\nafter\n", string(got))

	require.NoError(t, os.WriteFile(path, []byte("no markers"), 0o644))
	err = RewriteSection(path, "figures", "x")
	assert.ErrorContains(t, err, "has no figures section")
	got, _ = os.ReadFile(path)
	assert.Equal(t, "no markers", string(got), "left as it was")
}
