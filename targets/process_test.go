//go:build unix

package targets_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/testctx"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// harnessEnv makes the test binary act as a harness instead of running
// tests: it starts the command in the variable as a process target and
// waits to be killed. TestNothingOutlivesAKilledHarness uses it.
const harnessEnv = "IDEMCHECK_TEST_PROCESS_HARNESS"

// binDirPrefix starts the name of the folder the helpers are built into,
// followed by this process's pid, so a later run can remove the folders of
// runs that have ended.
const binDirPrefix = "idemcheck-targets-test-"

func TestMain(m *testing.M) {
	if command := os.Getenv(harnessEnv); command != "" {
		runHarness(command)
		return
	}
	pgtest.Main(m, targets.CloseTestMariaDB)
}

// binDir is the folder the helper binaries are built into, made once.
// pgtest.Main exits without returning, so it cannot be removed at the end
// of the run; the next run removes it instead.
var binDir = sync.OnceValues(func() (string, error) {
	removeStaleBinDirs()
	return os.MkdirTemp("", fmt.Sprintf("%s%d-*", binDirPrefix, os.Getpid()))
})

// buildOnce returns a function that builds the main package pkg once per
// test binary, on first use: tests that startTarget no process do not wait for
// it, and tests of other helpers do not fail when it does not compile.
func buildOnce(pkg string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := binDir()
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, filepath.Base(pkg))
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("cannot build %s: %v\n%s", pkg, err, msg)
		}
		return out, nil
	})
}

var (
	ordersBin = buildOnce("github.com/idemcheck/idemcheck/examples/orders/cmd/orders")
	echoBin   = buildOnce("./testdata/echo")
)

// ordersCommand is the path of the orders example, built for these tests.
func ordersCommand(t *testing.T) string {
	t.Helper()
	path, err := ordersBin()
	require.NoError(t, err)
	return path
}

// echoCommand is the path of testdata/echo, built for these tests.
func echoCommand(t *testing.T) string {
	t.Helper()
	path, err := echoBin()
	require.NoError(t, err)
	return path
}

// removeStaleBinDirs removes the helper folders of test runs that ended.
func removeStaleBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), binDirPrefix), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 && pid != os.Getpid() && !running(pid) {
			_ = os.RemoveAll(dir)
		}
	}
}

// runHarness is the test binary acting as a harness: it prints the target's
// URL and leader pid, pauses the target when told "pause" on stdin, and
// waits to be killed.
func runHarness(command string) {
	p, err := targets.StartProcess(context.Background(), targets.ProcessConfig{Command: command})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(p.URL(), p.Instances()[0].PID())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "pause" {
			if err := p.Instances()[0].Pause(); err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("paused")
		}
	}
	for {
		time.Sleep(time.Hour)
	}
}

// running reports whether pid is a process that has not exited. A zombie
// has exited: only its parent's reaping is pending, and orphans are reaped
// by init, not by these tests.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// Without /proc (macOS) the signal is all there is to go by; on
		// Linux the process exited just now.
		return runtime.GOOS != "linux"
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// requireGone fails unless every pid exits soon. A process killed with
// SIGKILL is gone within milliseconds; the minute only bounds a failure.
func requireGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, pid := range pids {
		for running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d is still running", what, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// startTarget starts a process target and closes it when the test ends.
func startTarget(t *testing.T, cfg targets.ProcessConfig) *targets.Process {
	t.Helper()
	ctx := testctx.UntilDeadline(t)
	p, err := targets.StartProcess(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// plainClient is a plain HTTP plainClient for the tests: one connection per request,
// so the balancer sees each request as a new connection, and never a
// proxy, so nothing leaves loopback.
func plainClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
}

// echoReply is what the echo helper answers on GET /.
type echoReply struct {
	Port        string `json:"port"`
	PID         int    `json:"pid"`
	Addr        string `json:"addr"`
	DatabaseURL string `json:"databaseURL"`
	Greeting    string `json:"greeting"`
}

func getEcho(c *http.Client, url string) (echoReply, error) {
	resp, err := c.Get(url)
	if err != nil {
		return echoReply{}, err
	}
	defer resp.Body.Close()
	var r echoReply
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

// postOrder creates (or replays) an order and returns its status and orderId.
func postOrder(c *http.Client, base, key, customer string) (int, string, error) {
	body := fmt.Sprintf(`{"customerId":%q,"totalCents":4000}`, customer)
	req, err := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", err
	}
	var created struct{ OrderID string }
	if err := json.Unmarshal(raw, &created); err != nil {
		return resp.StatusCode, "", fmt.Errorf("%s: %s", resp.Status, raw)
	}
	return resp.StatusCode, created.OrderID, nil
}

// syncBuffer is a Logs writer the tests can read while instances write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The orders example as a process target, through a crash, a restart and
// a pause, on a real database.
func TestProcessOrdersCrashRestartPause(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	p := startTarget(t, targets.ProcessConfig{Command: ordersCommand(t), DatabaseURL: pgtest.DSN(t), Logs: &logs})
	require.Len(t, p.Instances(), 1)
	inst := p.Instances()[0]
	port := inst.Port()
	base := p.URL().String()
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), base, "a single instance is served without a balancer")

	c := plainClient(30 * time.Second)
	key := uuid.NewString()
	status, orderID, err := postOrder(c, base, key, "c-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	require.NotEmpty(t, orderID)
	assert.Contains(t, logs.String(), "[orders#0] ", "output lines are prefixed with the instance")
	assert.Contains(t, inst.Tail(), "orders: serving")

	// Kill: a crash. The port refuses connections once Kill returns.
	oldPID := inst.PID()
	require.NoError(t, inst.Kill())
	_, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "after Kill the port refuses: %v", err)
	requireGone(t, "after Kill", oldPID)

	// Restart: the same port answers again, on the same database, so the
	// retry of the first order is replayed, not created again.
	ctx := testctx.UntilDeadline(t)
	require.NoError(t, inst.Restart(ctx))
	assert.Equal(t, port, inst.Port())
	assert.NotEqual(t, oldPID, inst.PID())
	status, replayedID, err := postOrder(c, base, key, "c-1")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, status)
	assert.Equal(t, orderID, replayedID, "the restarted instance replays the order it created before the crash")

	// Pause: the kernel still accepts, but nothing answers.
	require.NoError(t, inst.Pause())
	_, _, err = postOrder(plainClient(300*time.Millisecond), base, uuid.NewString(), "c-2")
	var netErr net.Error
	require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "a paused instance does not answer: %v", err)
	require.NoError(t, inst.Resume())
	status, _, err = postOrder(c, base, uuid.NewString(), "c-3")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, status, "after Resume the instance answers again")

	pid := inst.PID()
	require.NoError(t, p.Close())
	requireGone(t, "after Close", pid)
	assert.NoError(t, p.Close(), "Close is idempotent")
	assert.Error(t, inst.Restart(ctx), "a closed target does not restart")
}

// Two instances behind the balancer: connections alternate between them,
// a dead instance is not skipped, and every process goes with Close.
func TestProcessInstancesBehindBalancer(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	p := startTarget(t, targets.ProcessConfig{
		Command:     echoCommand(t),
		Instances:   2,
		DatabaseURL: "postgres://app@127.0.0.1:1/app",
		Env:         []string{"ECHO_GREETING=hello", "PORT=1", "ADDR=0.0.0.0"},
		Logs:        &logs,
	})
	insts := p.Instances()
	require.Len(t, insts, 2)
	assert.NotEqual(t, insts[0].PID(), insts[1].PID())
	assert.NotEqual(t, insts[0].Port(), insts[1].Port())
	for _, inst := range insts {
		assert.NotEqual(t, p.URL().Host, net.JoinHostPort("127.0.0.1", strconv.Itoa(inst.Port())), "with several instances the URL is the balancer's")
	}

	c := plainClient(30 * time.Second)
	var served []string
	var serverPIDs []int
	for range 4 {
		r, err := getEcho(c, p.URL().String())
		require.NoError(t, err)
		served = append(served, r.Port)
		serverPIDs = append(serverPIDs, r.PID)
		assert.Equal(t, "hello", r.Greeting, "Env reaches the instance")
		assert.Equal(t, "postgres://app@127.0.0.1:1/app", r.DatabaseURL)
		assert.Equal(t, "127.0.0.1", r.Addr, "ADDR is always loopback")
	}
	ports := []string{strconv.Itoa(insts[0].Port()), strconv.Itoa(insts[1].Port())}
	assert.ElementsMatch(t, ports, served[:2], "each connection goes to the next instance")
	assert.Equal(t, served[:2], served[2:], "round robin: the order repeats")
	for _, want := range []string{"[echo#0] echo: serving", "[echo#1] echo: serving"} {
		assert.Contains(t, logs.String(), want)
	}

	// A killed instance is not skipped: of the next two connections, the
	// one handed to it fails.
	require.NoError(t, insts[1].Kill())
	var failed, answered int
	for range 2 {
		r, err := getEcho(c, p.URL().String())
		if err != nil {
			failed++
			continue
		}
		answered++
		assert.Equal(t, ports[0], r.Port)
	}
	assert.Equal(t, 1, failed, "exactly one connection met the dead instance")
	assert.Equal(t, 1, answered)

	ctx := testctx.UntilDeadline(t)
	require.NoError(t, insts[1].Restart(ctx))
	served = served[:0]
	for range 2 {
		r, err := getEcho(c, p.URL().String())
		require.NoError(t, err)
		served = append(served, r.Port)
	}
	assert.ElementsMatch(t, ports, served, "the restarted instance takes its turn again")

	// A live connection through the balancer ends with Close.
	conn, err := net.Dial("tcp", p.URL().Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	leaders := []int{insts[0].PID(), insts[1].PID()}
	require.NoError(t, p.Close())
	_, err = br.ReadByte()
	assert.Error(t, err, "Close ends live connections through the balancer")
	requireGone(t, "after Close", append(leaders, serverPIDs...)...)
	assert.Contains(t, logs.String(), "echo: stopping on terminated", "Close stops gracefully with SIGTERM first")
}

// Close stops a paused instance too: it resumes it, so SIGTERM acts.
// Every instance is sent its SIGKILL before any is waited for, so none
// outlives another's death: each instance's watcher, which looks every
// 2 ms whether the other is still there, is killed with it before it
// can see the other gone. (A queue's worker in the second instance would
// otherwise take the work the kill meant to leave undone.)
func TestProcessKillCrashesEveryInstanceAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	command := fmt.Sprintf(`echo $$ > %[1]s/$PORT.pid
( while :; do for f in %[1]s/*.pid; do [ "$f" = %[1]s/$PORT.pid ] && continue; kill -0 "$(cat "$f")" 2>/dev/null || touch %[1]s/outlived-$PORT; done; sleep 0.002; done ) &
exec %[2]s`, dir, echoCommand(t))
	p := startTarget(t, targets.ProcessConfig{Command: command, Instances: 2, DatabaseURL: "postgres://app@127.0.0.1:1/app"})
	for _, in := range p.Instances() {
		assert.Equal(t, []int{in.PID()}, readPIDFile(t, filepath.Join(dir, strconv.Itoa(in.Port())+".pid"), 1))
	}
	require.NoError(t, p.Kill())
	for _, in := range p.Instances() {
		requireGone(t, "instance", in.PID())
	}
	outlived, err := filepath.Glob(filepath.Join(dir, "outlived-*"))
	require.NoError(t, err)
	assert.Empty(t, outlived, "an instance saw another one dead before it died")
}

func TestProcessCloseStopsPausedInstance(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	p := startTarget(t, targets.ProcessConfig{Command: echoCommand(t), Logs: &logs})
	inst := p.Instances()[0]
	r, err := getEcho(plainClient(30*time.Second), p.URL().String())
	require.NoError(t, err)
	require.NoError(t, inst.Pause())
	leader := inst.PID()
	require.NoError(t, p.Close())
	requireGone(t, "after Close of a paused instance", leader, r.PID)
	assert.Contains(t, logs.String(), "[echo#0] echo: stopping on terminated")
	assert.Error(t, inst.Pause(), "a closed instance cannot be paused")
}

// A command that exits before it is ready fails the startTarget with one line
// naming the command, its exit status and its last output line.
func TestProcessExitBeforeReady(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command func(t *testing.T) string
		want    []string
	}{
		{"shell", func(*testing.T) string { return "echo starting; echo config file missing >&2; exit 3" },
			[]string{"exit status 3", "config file missing"}},
		{"orders with a bad variant", func(t *testing.T) string { return ordersCommand(t) + " -variant nope" },
			[]string{"exit status 1", `orders: unknown variant "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command := tt.command(t)
			p, err := targets.StartProcess(context.Background(), targets.ProcessConfig{Command: command, DatabaseURL: "postgres://app@127.0.0.1:1/app"})
			require.Error(t, err)
			assert.Nil(t, p)
			msg := err.Error()
			t.Log(msg)
			assert.NotContains(t, msg, "\n", "the error is one line")
			assert.Contains(t, msg, strconv.Quote(command))
			assert.Contains(t, msg, "exited before it was ready")
			for _, want := range tt.want {
				assert.Contains(t, msg, want)
			}
		})
	}
}

// readPIDFile waits for a command to write pids into file.
func readPIDFile(t *testing.T, file string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, _ := os.ReadFile(file)
		if fields := strings.Fields(string(data)); len(fields) == n && strings.HasSuffix(string(data), "\n") {
			pids := make([]int, n)
			for i, f := range fields {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids[i] = pid
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %d pids to %s (got %q)", n, file, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A target that never becomes ready fails with the probe and the port
// named, and leaves nothing running.
func TestProcessReadyTimeout(t *testing.T) {
	t.Parallel()
	// The wait is long enough for the shell to write its pids and the echo
	// server to answer its 503 on a loaded machine (at 500ms, under two
	// busy loops, neither had happened in 8 runs of 10): the target never
	// becomes ready, so the test always waits it out, both subtests at once.
	const readyTimeout = 5 * time.Second
	tests := []struct {
		name, command, ready string
		want                 *regexp.Regexp
	}{
		{"tcp", "exec sleep 300", targets.ReadyTCP,
			regexp.MustCompile(`was not ready after 5s: tcp probe of 127\.0\.0\.1:\d+: `)},
		{"http", "exec " + echoCommand(t), "/unready",
			regexp.MustCompile(`was not ready after 5s: GET http://127\.0\.0\.1:\d+/unready answered 503 Service Unavailable; last output: echo: serving`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			// The child runs in the background, so the group has two
			// processes; both must go.
			command := fmt.Sprintf("sleep 300 & echo $$ $! > %s; %s", pidFile, tt.command)
			_, err := targets.StartProcess(context.Background(), targets.ProcessConfig{
				Command: command, Ready: tt.ready, ReadyTimeout: readyTimeout,
			})
			require.Error(t, err)
			t.Log(err)
			assert.Regexp(t, tt.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			requireGone(t, "after a failed startTarget", readPIDFile(t, pidFile, 2)...)
		})
	}
}

// Cancelling the startTarget while it waits for readiness returns the
// cancellation, not a timeout, and leaves nothing running.
func TestProcessStartCancelled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the command runs, so the cancellation meets the
		// readiness wait rather than the startTarget.
		for {
			if data, _ := os.ReadFile(pidFile); strings.HasSuffix(string(data), "\n") {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	_, err := targets.StartProcess(ctx, targets.ProcessConfig{
		Command:      fmt.Sprintf("sleep 300 & echo $$ $! > %s; wait", pidFile),
		Ready:        targets.ReadyTCP,
		ReadyTimeout: time.Minute, // a startTarget that ignored ctx would end in a timeout error instead
	})
	require.Error(t, err)
	t.Log(err)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.NotContains(t, err.Error(), "not ready after")
	requireGone(t, "after a cancelled startTarget", readPIDFile(t, pidFile, 2)...)
}

// When the harness itself is killed (SIGKILL: no Close, no deferred
// calls), the target still goes: the shell with the parent-death signal,
// and the server, its child, through the watchdog in its process group;
// also while the target is paused, when the watchdog is stopped too.
func TestNothingOutlivesAKilledHarness(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		pause, setsid bool
	}{{"running", false, false}, {"paused", true, false}, {"setsid", false, true}} {
		pause := c.pause
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			exe, err := os.Executable()
			require.NoError(t, err)
			harness := exec.Command(exe, "-test.run=^$")
			// In the background, the server is surely a grandchild of the
			// harness, whatever /bin/sh does with a single command.
			command := echoCommand(t) + " & wait"
			if c.setsid {
				// A server that left the group: the watchdog's group kill
				// misses it, its mark does not.
				command = "setsid " + command
			}
			harness.Env = append(os.Environ(), harnessEnv+"="+command)
			stdin, err := harness.StdinPipe()
			require.NoError(t, err)
			stdout, err := harness.StdoutPipe()
			require.NoError(t, err)
			harness.Stderr = os.Stderr
			require.NoError(t, harness.Start())
			t.Cleanup(func() {
				_ = harness.Process.Kill()
				_ = harness.Wait()
			})

			lines := make(chan string, 2)
			go func() {
				br := bufio.NewReader(stdout)
				for {
					s, err := br.ReadString('\n')
					if err != nil {
						close(lines)
						return
					}
					lines <- s
				}
			}()
			next := func() string {
				select {
				case s := <-lines:
					return s
				case <-time.After(2 * time.Minute):
					t.Fatal("the harness did not answer")
					return ""
				}
			}
			first := next()
			fields := strings.Fields(first)
			require.Len(t, fields, 2, "harness said %q", first)
			leader, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			r, err := getEcho(plainClient(30*time.Second), fields[0])
			require.NoError(t, err)
			t.Cleanup(func() {
				// Only if the test failed: do not leak the target.
				_ = syscall.Kill(r.PID, syscall.SIGKILL)
				_ = syscall.Kill(leader, syscall.SIGKILL)
			})
			require.NotEqual(t, leader, r.PID, "the server is not the group leader")
			if pause {
				_, err := io.WriteString(stdin, "pause\n")
				require.NoError(t, err)
				require.Equal(t, "paused\n", next())
			}

			require.NoError(t, harness.Process.Signal(syscall.SIGKILL))
			_ = harness.Wait()
			requireGone(t, "after the harness was killed", leader, r.PID)
		})
	}
}

// A port is free when picked but can be taken before the command binds it;
// such a first start is retried on another port.
func TestProcessRetriesATakenPort(t *testing.T) {
	echo := echoCommand(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	var picked []int
	restore := targets.SwapPickPort(func() (int, error) {
		if len(picked) == 0 {
			picked = append(picked, takenPort)
			return takenPort, nil
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		picked = append(picked, l.Addr().(*net.TCPAddr).Port)
		return picked[len(picked)-1], nil
	})
	defer restore()

	p := startTarget(t, targets.ProcessConfig{Command: echo})
	inst := p.Instances()[0]
	require.Len(t, picked, 2, "one retry")
	assert.Equal(t, picked[1], inst.Port())
	assert.Contains(t, inst.Tail(), "address already in use", "the failed attempt's output stays in the tail")
	_, err = getEcho(plainClient(30*time.Second), p.URL().String())
	assert.NoError(t, err)
}

// An instance that exits by itself is reported once, with its exit status
// and its last output; Kill, Restart and Close are never reported, and
// Revive brings back only an instance that is down.
func TestProcessExitIsWatched(t *testing.T) {
	t.Parallel()
	p := startTarget(t, targets.ProcessConfig{Command: echoCommand(t), Instances: 2})
	ctx := testctx.UntilDeadline(t)
	insts := p.Instances()
	require.Len(t, insts, 2)

	// Instance 1 is killed on purpose: not an exit.
	require.NoError(t, insts[1].Kill())

	// Instance 0 exits by itself, before it answers.
	exitURL := fmt.Sprintf("http://127.0.0.1:%d/exit?code=3", insts[0].Port())
	resp, err := plainClient(30*time.Second).Post(exitURL, "text/plain", nil)
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the instance exits before it answers")

	p.Settle(ctx)
	exits := p.Exits()
	require.Len(t, exits, 1, "one exit, and the kill is not one: %+v", exits)
	e := exits[0]
	assert.Equal(t, 0, e.Instance)
	assert.Equal(t, "echo#0", e.Label)
	assert.Equal(t, "exit status 3", e.Status)
	assert.Contains(t, e.Tail, "echo: serving on")
	assert.True(t, strings.HasSuffix(e.Tail, "echo: exiting with status 3 as asked"), "the tail ends with the last line: %q", e.Tail)
	assert.False(t, e.Time.IsZero())
	assert.Empty(t, p.Exits(), "an exit is reported once")

	// Both are down; Revive starts both, then leaves them alone.
	for i, inst := range insts {
		revived, err := inst.Revive(ctx)
		require.NoError(t, err)
		assert.True(t, revived, "instance %d was down", i)
		_, err = getEcho(plainClient(30*time.Second), fmt.Sprintf("http://127.0.0.1:%d/", inst.Port()))
		require.NoError(t, err, "instance %d answers after Revive", i)
	}
	revived, err := insts[0].Revive(ctx)
	require.NoError(t, err)
	assert.False(t, revived, "a running instance is left alone")

	// A restart of a running instance, a kill and Close are the harness's
	// doing: none is an exit.
	require.NoError(t, insts[0].Restart(ctx))
	require.NoError(t, insts[1].Kill())
	p.Settle(ctx)
	assert.Empty(t, p.Exits(), "Restart and Kill are not exits")
	require.NoError(t, p.Close())
	assert.Empty(t, p.Exits(), "Close is not an exit")
}

// An exit is reported with the tail of the run that ended, at most
// ExitTailLines lines, even when an earlier run of the instance wrote more.
func TestProcessExitTailIsItsOwn(t *testing.T) {
	t.Parallel()
	// The first run writes a few lines and is restarted; the second writes
	// 30, then echo's own two (serving, exiting).
	script := `if [ -e "$MARK" ]; then i=0; while [ $i -lt 30 ]; do echo second-run-$i; i=$((i+1)); done; exec "$ECHO"; fi; : > "$MARK"; echo first-run; exec "$ECHO"`
	p := startTarget(t, targets.ProcessConfig{
		Command: script,
		Env:     []string{"MARK=" + filepath.Join(t.TempDir(), "mark"), "ECHO=" + echoCommand(t)},
	})
	ctx := testctx.UntilDeadline(t)
	inst := p.Instances()[0]
	require.NoError(t, inst.Restart(ctx))
	assert.Contains(t, inst.Tail(), "first-run", "the instance's Tail spans restarts")

	resp, err := plainClient(30*time.Second).Post(p.URL().String()+"/exit?code=7", "text/plain", nil)
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	p.Settle(ctx)
	exits := p.Exits()
	require.Len(t, exits, 1)
	assert.Equal(t, "exit status 7", exits[0].Status)
	assert.NotContains(t, exits[0].Tail, "first-run", "the tail is the ended run's own output")
	lines := strings.Split(exits[0].Tail, "\n")
	require.Len(t, lines, targets.ExitTailLines, "tail: %q", exits[0].Tail)
	assert.Equal(t, "second-run-12", lines[0], "the last 20 lines: 18 of the loop, then serving and exiting")
	assert.Equal(t, "echo: exiting with status 7 as asked", lines[len(lines)-1])
}

// A service with no health route (ECHO_NO_HEALTHZ) is started as a target
// all the same when told how to see it is ready: its port accepting
// connections (ReadyTCP), or a path it does serve. Without the option the
// default probe, GET /healthz, would answer 404 until the wait ran out.
func TestProcessTargetReadyWithoutAHealthRoute(t *testing.T) {
	for _, ready := range []string{targets.ReadyTCP, "/"} {
		t.Run(ready, func(t *testing.T) {
			ctx := context.Background()
			pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
				Command: echoCommand(t), DSN: pgtest.DSN(t), Env: []string{"ECHO_NO_HEALTHZ=1"}, Ready: ready,
			})
			require.NoError(t, err)
			defer pt.Close()
			r, err := getEcho(plainClient(5*time.Second), pt.URL.String()+"/")
			require.NoError(t, err)
			assert.NotEmpty(t, r.DatabaseURL)
			resp, err := plainClient(5 * time.Second).Get(pt.URL.String() + "/healthz")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the target really has no health route")
		})
	}
}

// A target whose default readiness probe answers 404 is up, with no such
// route: the start fails soon, after a short grace rather than the whole
// wait, and says which readiness probe to give instead. The wait here is
// long, so a start that waited it out would fail this test with the
// timeout's message, not pass it late.
func TestProcessReadyWithoutTheRouteSaysWhatToGive(t *testing.T) {
	t.Parallel()
	_, err := targets.StartProcess(context.Background(), targets.ProcessConfig{
		Command: "exec " + echoCommand(t), Env: []string{"ECHO_NO_HEALTHZ=1"}, ReadyTimeout: 2 * time.Minute,
	})
	require.Error(t, err)
	t.Log(err)
	assert.Regexp(t, `is up but has no readiness route: GET http://127\.0\.0\.1:\d+/healthz answered 404 Not Found for 3s: give Ready PATH, .* or Ready tcp `, err.Error())
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe, "the hint names its setting, for the command to say --ready")
	assert.Equal(t, idemcheck.Field("Ready"), fe.Field)
	assert.NotContains(t, err.Error(), "was not ready after")
	assert.NotContains(t, err.Error(), "\n")
}
