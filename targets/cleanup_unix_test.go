//go:build unix

package targets

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A data directory is removed once the process that made it is gone, even
// when that process was killed and could not clean up (kill -9 used to
// leave a 41 MB idemcheck-pg-* directory behind).
func TestDataDirRemovedWhenItsProcessIsKilled(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "idemcheck-pg-test")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "base"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "base", "1"), []byte("x"), 0o600))

	owner := exec.Command("sleep", "60")
	require.NoError(t, owner.Start())
	require.NoError(t, removeWhenGone(owner.Process.Pid, data))
	time.Sleep(1500 * time.Millisecond) // the watcher's poll: the owner is alive, nothing is removed
	require.DirExists(t, data, "removed while its process still ran")

	require.NoError(t, owner.Process.Kill())
	_ = owner.Wait()
	require.Eventually(t, func() bool {
		_, err := os.Stat(data)
		return os.IsNotExist(err)
	}, 30*time.Second, 50*time.Millisecond, "the data directory outlived its killed process")
}
