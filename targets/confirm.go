package targets

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// MarkEnv is the environment variable every process of a started target
// inherits, set to a value unique to the instance: a process that left
// the target's process group (setsid, a daemon that forked twice) still
// carries it, so a kill finds it.
const MarkEnv = "IDEMCHECK_TARGET_MARK"

// processConfirmTimeout bounds how long a kill waits for everything the
// target started to be gone and its port closed.
var processConfirmTimeout = 5 * time.Second

// straggler is a process of a killed target that outlived its group's
// SIGKILL.
type straggler struct {
	pid          int
	why, cmdline string
}

// ErrNotDead is what a kill returns (wrapped in a NotDeadError) when the
// target could not be confirmed dead: a process it started still runs, or
// its port still accepts connections. A restart then would not test a
// fresh process.
var ErrNotDead = errors.New("the killed target is still running")

// NotDeadError says what was left of a target after its kill.
type NotDeadError struct {
	// Label names the instance ("orders#0"), Port its port.
	Label string
	Port  int
	// Left describes the processes still running ("pid 123 (./orders):
	// listening on the target's port 4000").
	Left []string
	// PortOpen: the port still accepted connections.
	PortOpen bool
}

func (e *NotDeadError) Error() string {
	var what []string
	if len(e.Left) > 0 {
		what = append(what, "still running: "+strings.Join(e.Left, "; "))
	}
	if e.PortOpen {
		what = append(what, fmt.Sprintf("port %d still accepts connections (a process idemcheck cannot see, in another namespace or container, serves it)", e.Port))
	}
	return fmt.Sprintf("target %s was killed but is not gone after %v: %s", e.Label, processConfirmTimeout, strings.Join(what, "; "))
}

// Is makes errors.Is(err, ErrNotDead) hold.
func (e *NotDeadError) Is(target error) bool { return target == ErrNotDead }

// newMark returns a mark unique to this idemcheck process and instance.
func newMark(index int) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(index) + "-" + hex.EncodeToString(b)
}

// confirmDead kills whatever the instance's killed run left behind (its
// marked processes, whatever listens on its port) and waits until none is
// left and the port refuses connections, or returns a NotDeadError.
func (i *Instance) confirmDead() error {
	deadline := time.Now().Add(processConfirmTimeout)
	for {
		left := stragglers(i.mark, i.port)
		for _, s := range left {
			killPID(s.pid)
		}
		open := i.port > 0 && portOpen(i.port)
		if len(left) == 0 && !open {
			return nil
		}
		if time.Now().After(deadline) {
			e := &NotDeadError{Label: i.label, Port: i.port, PortOpen: open}
			for _, s := range left {
				e.Left = append(e.Left, fmt.Sprintf("pid %d (%s): %s", s.pid, s.cmdline, s.why))
			}
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// portOpen reports whether something accepts connections on
// 127.0.0.1:port.
func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
