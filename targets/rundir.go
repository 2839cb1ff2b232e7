package targets

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// runDirPrefix starts the name of a run's folder of private files,
// followed by the process id that owns it: idemcheck-run-4242-123456.
const runDirPrefix = "idemcheck-run-"

// keptMark, in a run's folder, keeps it past its run (KeepRunDir).
const keptMark = ".kept"

// NewRunDir makes the folder, private to this user, where a run keeps its
// private files in the temporary folder: a started target's output, which
// can hold what the target logs of its secrets. The run removes it when it
// ends; a run killed (SIGKILL) cannot, so every NewRunDir first removes the
// folders of earlier runs whose process is gone, unless kept on purpose
// (KeepRunDir). Folders of live processes, concurrent runs among them, are
// left alone.
func NewRunDir() (string, error) {
	sweepRunDirs()
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
}

// KeepRunDir marks a run's folder to outlive its run, for a person to
// read what it holds (the output of a target that died): the next runs'
// sweep leaves it.
func KeepRunDir(dir string) error {
	return os.WriteFile(filepath.Join(dir, keptMark), nil, 0o600)
}

// sweepRunDirs removes the folders of runs whose process is gone and that
// were not kept. Failures are ignored: this is housekeeping.
func sweepRunDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	for _, dir := range matches {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), runDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, keptMark)); err == nil {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}
