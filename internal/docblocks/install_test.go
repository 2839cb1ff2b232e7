package docblocks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// installPathLines are the README install block's PATH lines: every line
// of the block that runs `make install` except make install itself and the
// commands that need what it installed.
func installPathLines(t *testing.T) string {
	t.Helper()
	root := filepath.Join("..", "..")
	for _, b := range blocksOf(t, root, filepath.Join(root, "README.md")) {
		if !strings.Contains(b.Text, "make install") {
			continue
		}
		var lines []string
		for _, l := range strings.Split(b.Text, "\n") {
			if strings.Contains(l, "export PATH") {
				lines = append(lines, l)
			}
		}
		require.NotEmpty(t, lines, "README.md:%d: the install block sets no PATH", b.Line)
		return strings.Join(lines, "\n")
	}
	t.Fatal("README.md has no block running make install")
	return ""
}

// The README's install block puts the folder make install wrote to first
// on PATH, whatever GOBIN is, and never an empty entry: an empty entry
// (a leading ':') is the working folder, where a stray ./idemcheck of
// another build would run instead.
func TestInstallBlockPathWithAndWithoutGOBIN(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	lines := installPathLines(t)
	gopath := filepath.Join(t.TempDir(), "gopath")
	for _, gobin := range []string{"", filepath.Join(t.TempDir(), "gobin")} {
		name := "GOBIN unset"
		want := filepath.Join(gopath, "bin")
		if gobin != "" {
			name, want = "GOBIN set", gobin
		}
		t.Run(name, func(t *testing.T) {
			base := filepath.Dir(goBin) + ":/usr/bin:/bin"
			cmd := exec.Command("bash", "-c", "set -e\n"+lines+"\nprintf %s \"$PATH\"")
			// GOENV=off: a GOBIN in the user's go env file must not
			// decide this test.
			cmd.Env = []string{"PATH=" + base, "HOME=" + os.Getenv("HOME"), "GOPATH=" + gopath, "GOENV=off", "GOFLAGS="}
			if gobin != "" {
				cmd.Env = append(cmd.Env, "GOBIN="+gobin)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			path := string(out)
			entries := strings.Split(path, ":")
			for i, e := range entries {
				assert.NotEmpty(t, e, "PATH=%q: entry %d is empty, so the working folder is searched", path, i)
			}
			assert.Equal(t, want, entries[0], "PATH=%q: make install's folder must come first", path)
			assert.True(t, strings.HasSuffix(path, ":"+base), "PATH=%q: the old PATH is kept", path)
		})
	}
}
