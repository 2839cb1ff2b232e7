package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// subcommand is how the interrupt test runs idemcheck as a process of its
// own: this test binary, told by TestMain to behave as the CLI.
const subcommand = "__idemcheck"

// Ctrl-C in the middle of a fault check: the run ends with exit 3 and
// leaves nothing behind: no target process, no PostgreSQL, no data folder,
// no report file.
func TestInterruptLeavesNothingBehind(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	var b [8]byte
	_, _ = rand.Read(b[:])
	mark := hex.EncodeToString(b[:])
	// The throwaway PostgreSQL runs as an unprivileged user, which must be
	// able to enter the temp folder.
	tmp, err := os.MkdirTemp("", "idemcheck-interrupt-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o777))
	report := filepath.Join(tmp, "report.json")

	cmd := exec.Command(self, subcommand, "certify",
		"--cmd", self+" "+exampleServerCommand+" orders -lease 1s", "--lease", "1s",
		"--path", "/orders", "--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--checks", "lease-fencing,crash-lease", "--json", report)
	cmd.Env = append(os.Environ(), "IDEMCHECK_INTERRUPT_MARK="+mark, "TMPDIR="+tmp, "DATABASE_URL=")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Wait until the run is inside a fault check (the target frozen at
	// BEGIN, its database link held), then interrupt it.
	var seen bytes.Buffer
	sc := bufio.NewScanner(stderr)
	started, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "lease-fencing") {
				close(started)
				for sc.Scan() {
				}
				return
			}
		}
	}()
	select {
	case <-started:
	case <-ended:
		_ = cmd.Wait()
		t.Fatalf("the run ended before lease-fencing:\n%s", seen.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the run never reached lease-fencing:\n%s", seen.String())
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, idemcheck.ExitUnavailable, exit.ExitCode())

	assert.NoFileExists(t, report, "no half-written report")
	// Every process idemcheck started inherited the mark; none may remain.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := marked(mark)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	for _, e := range entries {
		t.Errorf("left in the temp folder: %s", e.Name())
	}
}

// marked lists the pids whose environment holds IDEMCHECK_INTERRUPT_MARK=mark.
func marked(mark string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("IDEMCHECK_INTERRUPT_MARK="+mark)) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// SIGTERM is obeyed at any time, even while idemcheck is blocked reading
// an input (here --policy from a pipe that never ends, which no context
// can interrupt): past its grace, the program ends by itself, exit 3,
// saying so.
func TestSIGTERMWhileReadingInput(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, subcommand, "certify", "--url", "http://127.0.0.1:1", "--policy", "/dev/stdin")
	cmd.Env = append(os.Environ(), "IDEMCHECK_TEST_GRACE=1s")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_, err = stdin.Write([]byte("preset: ietf\n")) // and nothing more, ever
	require.NoError(t, err)
	// Time for the process to be blocked in its read (and to have set up
	// its signal handling, without which SIGTERM would kill it outright).
	time.Sleep(time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("SIGTERM ignored while reading --policy:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, idemcheck.ExitUnavailable, exit.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "stopping now")
}
