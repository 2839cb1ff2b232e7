package targets

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stopServer ends a database server the harness started (LocalPostgres,
// LocalMariaDB): ask is the signal its own clean shutdown answers; past
// shutdownGrace its whole process group is killed, which also ends
// children (PostgreSQL's backends) that would otherwise linger until they
// noticed it gone. It returns once the server has been reaped.
func stopServer(cmd *exec.Cmd, exited <-chan struct{}, ask func(*os.Process) error) {
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	if err := ask(cmd.Process); err == nil {
		select {
		case <-exited:
			return
		case <-time.After(shutdownGrace):
		}
	}
	killGroup(cmd.Process)
	<-exited
}

// removeStaleDirs removes the data directories named prefix+PID-… whose
// owning process is gone: a run killed before Close leaves its directory
// (and, where the parent-death signal is missing, maybe its server, which
// killOrphan ends) behind. Directories of live processes, including
// concurrent runs and tests, are left alone. Failures are ignored: this is
// housekeeping, not part of the run.
func removeStaleDirs(prefix string, killOrphan func(dir string)) {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range matches {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		killOrphan(dir)
		_ = os.RemoveAll(dir)
	}
}
