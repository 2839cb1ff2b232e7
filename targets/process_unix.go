//go:build unix

package targets

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// targetWrapper is the shell script every target command runs inside. It
// forks a watchdog that blocks reading fd 3, the read end of a pipe whose
// only write end this process holds, then replaces itself with a plain
// "/bin/sh -c COMMAND". When this process dies, even by SIGKILL, the
// kernel closes the write end, the watchdog's read returns, and it kills
// the whole process group.
//
// The parent-death signal alone is not enough: it reaches only the shell
// this process started, while the server is usually the shell's child (the
// Debian /bin/sh forks even a single command) or a grandchild ("go run").
// The watchdog ignores INT, TERM and HUP so that a graceful stop, which
// signals the whole group, leaves it in place until the final SIGKILL; its
// standard streams are /dev/null so it never holds the log pipe open.
// Pause stops the watchdog with the rest of the group; if idemcheck dies
// then, the group is left orphaned with stopped members, and the kernel
// sends each member SIGHUP and SIGCONT, which wakes the watchdog. Before
// the group it kills, on Linux, every process whose environment carries
// the instance's mark (MarkEnv) but itself: the ones that left the group
// (setsid, a double fork).
const targetWrapper = `{ trap '' INT TERM HUP; read -r _ <&3
read -r me _ </proc/self/stat 2>/dev/null
if [ -n "$` + MarkEnv + `" ]; then for f in /proc/[0-9]*/environ; do p=${f#/proc/}; p=${p%/environ}
[ "$p" = "$me" ] || ! grep -qzx "` + MarkEnv + `=$` + MarkEnv + `" "$f" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done; fi
kill -KILL 0; } </dev/null >/dev/null 2>&1 &
exec 3<&-
exec /bin/sh -c "$1"`

// deathPipe is the watchdogs' pipe. Both ends stay referenced for the life
// of the process: a collected *os.File would close its descriptor, and a
// closed write end would make every watchdog kill its target.
var deathPipe struct {
	once sync.Once
	r, w *os.File
	err  error
}

// targetCommand returns the command that runs command in its own process
// group with the watchdog, the parent-death signal (on Linux) and fd 3 set
// up. The caller sets Dir, Env and the output streams.
func targetCommand(command string) (*exec.Cmd, error) {
	deathPipe.once.Do(func() {
		deathPipe.r, deathPipe.w, deathPipe.err = os.Pipe()
	})
	if deathPipe.err != nil {
		return nil, fmt.Errorf("cannot create the pipe that stops targets when idemcheck dies: %v", deathPipe.err)
	}
	cmd := exec.Command("/bin/sh", "-c", targetWrapper, "idemcheck-target", command)
	cmd.ExtraFiles = []*os.File{deathPipe.r}
	// The same attributes as a local postmaster: its own process group, so
	// signals reach everything the command started and a terminal Ctrl-C
	// reaches only idemcheck; on Linux, SIGKILL when idemcheck dies.
	cmd.SysProcAttr = sysProcAttr(nil, true)
	return cmd, nil
}

// signalGroup sends sig to the process group led by pid. A group that is
// already gone is not an error: every caller wants the group stopped or
// signalled only if it still exists.
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot send %v to process group %d: %w", sig, pid, err)
	}
	return nil
}

// The group signals Instance and Process send.
const (
	sigTerm = syscall.SIGTERM
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
