package targets

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run killed with SIGKILL leaves its folder (its target's log, which can
// hold secrets) behind; the next run's NewRunDir removes it. A folder kept
// on purpose (a dead target's log, named to the user) and those of live
// runs stay.
func TestNewRunDirSweepsKilledRuns(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid
	require.False(t, processAlive(dead))

	killed, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, dead))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(killed, "idemcheck-target-1.log"), []byte("Authorization: Bearer tok-SECRET\n"), 0o600))
	kept, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, dead))
	require.NoError(t, err)
	require.NoError(t, KeepRunDir(kept))
	live, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, os.Getppid()))
	require.NoError(t, err)

	dir, err := NewRunDir()
	require.NoError(t, err)
	assert.DirExists(t, dir)
	assert.Equal(t, os.TempDir(), filepath.Dir(dir))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "private to its user")
	assert.NoDirExists(t, killed, "the killed run's folder is swept")
	assert.DirExists(t, kept)
	assert.DirExists(t, live)
}
