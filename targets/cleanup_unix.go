//go:build unix

package targets

import (
	"os/exec"
	"strconv"
	"syscall"
)

// removeWhenGone starts a small watcher, in a session of its own so that
// nothing aimed at idemcheck's process group reaches it, that removes dir
// once process pid has ended. A run killed with SIGKILL cannot clean up
// after itself: its PostgreSQL dies with it (the parent-death signal), and
// the watcher then removes the data directory within a second, instead of
// leaving it in the temporary folder until a later run's sweep. After a
// clean exit the directory is already gone and the watcher just ends.
func removeWhenGone(pid int, dir string) error {
	// The directory is passed as an argument, never spliced into the script.
	cmd := exec.Command("/bin/sh", "-c", `while kill -0 "$1" 2>/dev/null; do sleep 1; done; rm -rf -- "$2"`,
		"idemcheck-cleanup", strconv.Itoa(pid), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	// Not waited for: it outlives this process by design. Release frees
	// what os/exec holds for it.
	return cmd.Process.Release()
}
