package targets

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Readiness defaults of ProcessConfig, exported so flags can show them.
const (
	// DefaultProcessReady is the HTTP path probed when ProcessConfig.Ready is empty.
	DefaultProcessReady = "/healthz"
	// ReadyTCP as ProcessConfig.Ready waits only until the port accepts
	// connections, for targets without a health endpoint.
	ReadyTCP = "tcp"
	// DefaultProcessReadyTimeout bounds each wait for readiness when
	// ProcessConfig.ReadyTimeout is zero.
	DefaultProcessReadyTimeout = 30 * time.Second
)

// Timings of a process target's life. They are variables only so tests can
// shorten them.
var (
	// processStopGrace is how long Close lets a target shut down after SIGTERM
	// before the whole group is killed.
	processStopGrace = 5 * time.Second
	// processReadyPoll is the pause between readiness probes: short,
	// because every start and restart spends its time in this wait.
	processReadyPoll = 20 * time.Millisecond
	// processMissingRouteGrace is how long a readiness path may answer 404
	// or 405 before the start fails with a hint: such an answer proves the
	// server is up and has no such route, so waiting out ReadyTimeout would
	// only delay the fix; the grace covers a router that mounts its health
	// route a moment after it starts listening.
	processMissingRouteGrace = 3 * time.Second
	// processProbeTimeout bounds one readiness probe, so a target that accepts but
	// never answers costs a second per probe, not the whole wait.
	processProbeTimeout = time.Second
	// processDrainTimeout bounds the wait for a stopped target's last output.
	// Only a process that left the group (setsid, or setpgid) can hold the
	// pipe longer, and its output is not worth hanging for.
	processDrainTimeout = 2 * time.Second
	// processPauseTimeout bounds the wait for SIGSTOP to take effect on every
	// process of the group; a process in an uninterruptible system call
	// stops only when the call returns.
	processPauseTimeout = 5 * time.Second
	// processSettleTimeout bounds Settle's wait for an instance whose port
	// refuses connections to be reaped: one that is dying is gone within
	// milliseconds, one that closed its listener and lingers is left be.
	processSettleTimeout = 5 * time.Second
	// processSettlePoll is the pause between Settle's looks.
	processSettlePoll = 5 * time.Millisecond
)

// ExitTailLines is how many of its last output lines an Exit keeps.
const ExitTailLines = 20

// processTailSize is how much output each instance keeps for Tail.
const processTailSize = 64 << 10

// ProcessConfig says how to start a target: a command idemcheck runs
// itself, so that it can crash, restart and pause it.
type ProcessConfig struct {
	// Command is run with /bin/sh -c, for example
	// "./bin/orders -variant check-then-insert" or "go run ./cmd/api". It
	// must serve in the foreground: when the shell exits, the target has
	// stopped. It runs in its own process group, and everything it starts
	// is stopped with it.
	Command string
	// Name labels the instances in log lines and errors ("[orders#0] ").
	// Default: the command's program ("orders" for "./bin/orders -v x", the
	// package for "go run ./cmd/orders").
	Name string
	// Dir is the working directory; empty means idemcheck's own.
	Dir string
	// Env holds extra KEY=VALUE pairs on top of idemcheck's environment.
	// PORT, ADDR and (when DatabaseURL is set) DATABASE_URL override them,
	// because idemcheck probes and balances on exactly those.
	Env []string
	// Instances is how many copies run (default 1). With more, a
	// round-robin balancer stands in front, as for a deployment with
	// several replicas behind one address.
	Instances int
	// DatabaseURL is handed to every instance as DATABASE_URL.
	DatabaseURL string
	// Ready is the readiness probe: an HTTP path that must answer 2xx
	// (default DefaultProcessReady), or ReadyTCP to wait until the port
	// accepts connections.
	Ready string
	// ReadyTimeout bounds each wait for readiness, at start and at every
	// Restart (default DefaultProcessReadyTimeout).
	ReadyTimeout time.Duration
	// Logs receives each instance's stdout and stderr a line at a time,
	// each line prefixed "[name#i] " and written in one call. A writer that
	// blocks stalls the target once its pipe fills. Nil keeps the output
	// only in each instance's Tail.
	Logs io.Writer
}

// Process is a running target started by StartProcess: one or more
// instances of a command, and a balancer in front when there are several.
// Close it when done; it is safe to call Close from a deferred call on
// every path, cancelled ones included.
type Process struct {
	cfg       ProcessConfig
	instances []*Instance
	bal       *balancer // nil with a single instance
	url       url.URL

	probeTransport *http.Transport
	probeClient    *http.Client

	// logMu keeps the lines of concurrent instances whole in cfg.Logs.
	logMu sync.Mutex

	// exitMu guards exits, the unexpected ends not yet taken by Exits.
	exitMu sync.Mutex
	exits  []Exit

	// closed is set before the instances are stopped, so a Restart racing
	// Close either runs first (and is stopped by it) or sees it.
	closed    atomic.Bool
	closing   chan struct{} // closed by Close: ends readiness waits
	closeOnce sync.Once
	closeErr  error
}

// Instance is one copy of a target's command, on its own loopback port
// that stays the same across restarts, so clients and the balancer need
// no change when it comes back.
type Instance struct {
	p     *Process
	index int
	port  int    // set before the first start, never changed after StartProcess returns
	label string // "name#index", for log lines and errors
	mark  string // MarkEnv's value in its processes' environment

	tail processTail

	mu  sync.Mutex
	cur *processRun // the latest start; nil only before the first
}

// processRun is one start of an instance's command. groupKilled is guarded
// by Instance.mu; waitErr is set before exited closes; the rest never
// changes after start.
type processRun struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the group leader has been reaped
	waitErr error         // the leader's exit status, set before exited closes
	pipe    *os.File      // read end of the output pipe
	logDone chan struct{} // closed once every writer of the pipe is gone
	out     processOutput
	// groupKilled records that the group got its SIGKILL. The group is
	// never signalled again after that: once empty, its id may be reused.
	groupKilled bool
	// watched is closed once the end of the run has been looked at: an
	// unexpected end is in Process.exits by then.
	watched chan struct{}
	// life says whether the run got ready, whether the harness ended it,
	// and whether it ended; its decisions are made under one lock, so an
	// end racing readiness or a kill is judged once.
	life struct {
		sync.Mutex
		ready, deliberate, ended bool
	}
}

// Exit is an end of an instance that the harness did not cause: not Kill,
// Restart or Close, but the command exiting or dying by itself after it
// had got ready.
type Exit struct {
	// Instance is the instance's index, from 0.
	Instance int
	// Label is "name#index", as in log lines.
	Label string
	// Status says how the command ended: "exit status 1", "signal: killed".
	Status string
	// Tail is the command's last output lines, up to ExitTailLines.
	Tail string
	// Time is when the harness saw it end.
	Time time.Time
}

// processOutput is what one run's output says about its failure.
type processOutput struct {
	mu        sync.Mutex
	last      string   // the last non-blank line
	portTaken bool     // a line said the port was in use
	lines     []string // the last ExitTailLines lines, for an Exit
}

// StartProcess starts cfg.Instances copies of cfg.Command, each on a free
// loopback port, and returns once all of them pass the readiness probe.
// Each instance gets PORT, ADDR=127.0.0.1 and DATABASE_URL in its
// environment. ctx bounds the start only; the target runs until Close.
//
// Every instance runs in its own process group. Nothing it starts outlives
// idemcheck, even when idemcheck is killed: on Linux the shell that runs
// the command gets SIGKILL when idemcheck dies, and a watchdog in the group
// kills the rest as soon as idemcheck's end of a pipe closes.
//
// Errors are one line. A command that exits before it is ready is named
// with its exit status and the last line of its output; a readiness
// timeout names the probe and the port. On error nothing is left running.
func StartProcess(ctx context.Context, cfg ProcessConfig) (*Process, error) {
	cfg, err := normalizeProcessConfig(cfg)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		Proxy: nil, // probes go to loopback, never through a proxy
		// No connection is kept: an idle probe connection would hold a slot
		// of the target and survive into the run.
		DisableKeepAlives: true,
	}
	p := &Process{
		cfg:            cfg,
		probeTransport: transport,
		probeClient: &http.Client{
			Transport: transport,
			// A redirect is not readiness, and following it could leave loopback.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		closing: make(chan struct{}),
	}
	for i := range cfg.Instances {
		p.instances = append(p.instances, &Instance{p: p, index: i, label: fmt.Sprintf("%s#%d", cfg.Name, i), mark: newMark(i)})
	}

	// Replicas start together, as a deployment's do; the first failure
	// cancels the others' waits, and is the one reported.
	startCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		firstErr error
	)
	for _, inst := range p.instances {
		wg.Go(func() {
			if err := inst.firstStart(startCtx); err != nil {
				failOnce.Do(func() {
					firstErr = err
					cancel(err)
				})
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		_ = p.Close()
		return nil, firstErr
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.instances[0].port))
	if len(p.instances) > 1 {
		backends := make([]string, len(p.instances))
		for i, inst := range p.instances {
			backends[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(inst.port))
		}
		p.bal, err = newBalancer(backends)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		addr = p.bal.addr()
	}
	p.url = url.URL{Scheme: "http", Host: addr}
	return p, nil
}

// normalizeProcessConfig fills in defaults and rejects what cannot run.
func normalizeProcessConfig(cfg ProcessConfig) (ProcessConfig, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return cfg, errors.New("process target: no command given")
	}
	if cfg.Instances == 0 {
		cfg.Instances = 1
	}
	if cfg.Instances < 0 {
		return cfg, fmt.Errorf("process target %q: instances must be at least 1, got %d", cfg.Command, cfg.Instances)
	}
	if cfg.Ready == "" {
		cfg.Ready = DefaultProcessReady
	}
	if cfg.Ready != ReadyTCP && !strings.HasPrefix(cfg.Ready, "/") {
		return cfg, fmt.Errorf("process target %q: readiness probe %q must be an HTTP path starting with / or %q", cfg.Command, cfg.Ready, ReadyTCP)
	}
	if cfg.ReadyTimeout < 0 {
		return cfg, fmt.Errorf("process target %q: readiness timeout must not be negative, got %v", cfg.Command, cfg.ReadyTimeout)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultProcessReadyTimeout
	}
	if cfg.Name == "" {
		cfg.Name = commandName(cfg.Command)
	}
	cfg.Env = slices.Clone(cfg.Env)
	return cfg, nil
}

// commandName picks a short label from a command: the program's base name,
// after a leading "cd DIR &&" (or ";"), variable assignments and exec, or
// the package of "go run".
func commandName(command string) string {
	fields := strings.Fields(command)
	for len(fields) > 0 && fields[0] == "cd" {
		i := slices.IndexFunc(fields, func(f string) bool { return f == "&&" || f == ";" })
		if i < 0 {
			break
		}
		fields = fields[i+1:]
	}
	for len(fields) > 0 && (fields[0] == "exec" || isAssignment(fields[0])) {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return "target"
	}
	prog := fields[0]
	if filepath.Base(prog) == "go" && len(fields) > 1 && fields[1] == "run" {
		for _, f := range fields[2:] {
			if !strings.HasPrefix(f, "-") {
				prog = f
				break
			}
		}
	}
	name := strings.TrimSuffix(filepath.Base(prog), ".go")
	if name == "." || name == ".." || name == "/" || name == "" || name == "run" {
		return "target"
	}
	return name
}

// isAssignment reports whether a shell word is a NAME=value prefix.
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	return ok && name != "" && !strings.ContainsAny(name, "/-.$\"'")
}

// URL returns the address clients use: http://127.0.0.1:PORT of the
// balancer when there are several instances, or of the single instance.
// Each call returns a fresh copy.
func (p *Process) URL() *url.URL {
	u := p.url
	return &u
}

// Instances returns the instances in order; index i is labelled "name#i"
// in logs and errors.
func (p *Process) Instances() []*Instance {
	return slices.Clone(p.instances)
}

// Exits returns the instances' unexpected ends since the last call, oldest
// first: every time an instance that had got ready exited or died without
// the harness asking (Kill, Restart and Close are never reported). Each is
// reported once. The instance stays down until Restart or Revive.
func (p *Process) Exits() []Exit {
	p.exitMu.Lock()
	defer p.exitMu.Unlock()
	out := p.exits
	p.exits = nil
	return out
}

// Settle waits until each instance either shows it runs (it answers on
// its port, or holds a connection open; see serving) or has ended and had
// its end recorded, so that Exits then reports an instance that was dying
// when Settle was called. Call it when attempts went unanswered: the
// process that broke them may not have been reaped yet. An instance that
// neither runs nor ends is waited for at most 5 s; ctx bounds the whole
// wait.
func (p *Process) Settle(ctx context.Context) {
	for _, inst := range p.instances {
		inst.settle(ctx)
	}
}

// Close stops the target. It stops every instance at once: resumes it if
// paused, sends SIGTERM to its process group, waits up to 5 s for the
// command and everything holding its output to exit, then kills the whole
// group and waits until the command has been reaped. Then it closes the
// balancer with its live connections. It is idempotent and safe on nil.
func (p *Process) Close() error {
	if p == nil {
		return nil
	}
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		close(p.closing)
		errs := make([]error, len(p.instances)+1)
		var wg sync.WaitGroup
		for i, inst := range p.instances {
			wg.Go(func() { errs[i] = inst.stop() })
		}
		wg.Wait()
		// The balancer goes last, so requests in flight can finish during
		// the graceful stop, as behind a real load balancer.
		if p.bal != nil {
			errs[len(p.instances)] = p.bal.Close()
		}
		p.probeTransport.CloseIdleConnections()
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// env is an instance's environment; exec keeps the last of duplicate keys,
// so the values appended last win.
func (p *Process) env(port int) []string {
	env := append(os.Environ(), p.cfg.Env...)
	env = append(env, "PORT="+strconv.Itoa(port), "ADDR=127.0.0.1")
	if p.cfg.DatabaseURL != "" {
		env = append(env, "DATABASE_URL="+p.cfg.DatabaseURL)
	}
	return env
}

// probe runs the readiness probe once. It returns whether the instance is
// ready and, if not, what the probe saw, for the timeout error, and
// whether the answer proved the server up without that route (404, 405).
func (p *Process) probe(ctx context.Context, port int) (ready bool, seen string, noRoute bool) {
	ctx, cancel := context.WithTimeout(ctx, processProbeTimeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if p.cfg.Ready == ReadyTCP {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, fmt.Sprintf("tcp probe of %s: %v", addr, processProbeCause(err)), false
		}
		_ = conn.Close()
		return true, "", false
	}
	target := "http://" + addr + p.cfg.Ready
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return false, fmt.Sprintf("GET %s: %v", target, err), false
	}
	resp, err := p.probeClient.Do(req)
	if err != nil {
		return false, fmt.Sprintf("GET %s: %v", target, processProbeCause(err)), false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return true, "", false
	}
	noRoute = resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed
	return false, fmt.Sprintf("GET %s answered %s", target, resp.Status), noRoute
}

// processProbeCause strips the layers that repeat the address the message names
// already: "dial tcp 127.0.0.1:P: connect: connection refused" becomes
// "connect: connection refused".
func processProbeCause(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var operr *net.OpError
	if errors.As(err, &operr) && operr.Err != nil {
		err = operr.Err
	}
	return err
}

// Port returns the instance's loopback port, the same across restarts.
func (i *Instance) Port() int { return i.port }

// PID returns the process id of the instance's latest start: the leader of
// its process group, which is the shell running the command (or the
// command itself, when the shell replaces itself with it, as with
// "exec ./bin/orders"). It is 0 if the instance never started.
func (i *Instance) PID() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cur == nil {
		return 0
	}
	return i.cur.cmd.Process.Pid
}

// Kill crashes the instance: SIGKILL to its whole process group and every
// process it started, those that left the group included (setsid), then a
// wait until the command has been reaped, nothing it started runs and its
// port refuses connections. A paused instance is killed too. Killing an
// instance that has already exited is not an error; one that cannot be
// confirmed dead is, a NotDeadError (ErrNotDead).
func (i *Instance) Kill() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cur != nil {
		i.cur.kill()
	}
	return i.confirmDead()
}

// Restart starts the instance again on the same port and waits until it
// passes the readiness probe, bounded by ctx and the readiness timeout. A
// running (or paused) instance is killed first, as by Kill. On error the
// new start is gone again when Restart returns.
func (i *Instance) Restart(ctx context.Context) error {
	i.mu.Lock()
	if i.p.closed.Load() {
		i.mu.Unlock()
		return fmt.Errorf("cannot restart target %s %q: it was closed", i.label, i.p.cfg.Command)
	}
	if i.cur != nil {
		i.cur.kill()
		if err := i.confirmDead(); err != nil {
			// A start now would meet the old process on the port.
			i.mu.Unlock()
			return err
		}
	}
	r, err := i.start()
	if err == nil {
		i.cur = r
	}
	i.mu.Unlock()
	if err != nil {
		return err
	}
	return i.waitReady(ctx, r)
}

// Revive restarts the instance, as Restart does, if it is not running (it
// exited by itself, or was killed), and reports whether it did. A running
// or paused instance is left alone.
func (i *Instance) Revive(ctx context.Context) (bool, error) {
	i.mu.Lock()
	_, err := i.running("revive")
	i.mu.Unlock()
	if err == nil {
		return false, nil
	}
	return true, i.Restart(ctx)
}

// Pause stops every process of the instance with SIGSTOP, as a long
// garbage-collection pause or a frozen VM would: connections are still
// accepted by the kernel but nothing is answered until Resume. On Linux it
// returns once every process in the group has actually stopped.
func (i *Instance) Pause() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r, err := i.running("pause")
	if err != nil {
		return err
	}
	pid := r.cmd.Process.Pid
	if err := signalGroup(pid, sigStop); err != nil {
		return err
	}
	deadline := time.Now().Add(processPauseTimeout)
	for !groupStopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("target %s %q got SIGSTOP but not all of its processes stopped within %v", i.label, i.p.cfg.Command, processPauseTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Resume continues a paused instance with SIGCONT. Resuming an instance
// that is not paused is harmless.
func (i *Instance) Resume() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r, err := i.running("resume")
	if err != nil {
		return err
	}
	return signalGroup(r.cmd.Process.Pid, sigCont)
}

// Tail returns the last 64 KiB or so of the instance's output, across
// restarts, for error messages.
func (i *Instance) Tail() string { return i.tail.String() }

// running returns the current run if its command is still running.
// Callers hold i.mu.
func (i *Instance) running(what string) (*processRun, error) {
	r := i.cur
	if r != nil && !r.groupKilled {
		select {
		case <-r.exited:
		default:
			return r, nil
		}
	}
	return nil, fmt.Errorf("cannot %s target %s %q: it is not running", what, i.label, i.p.cfg.Command)
}

// firstStart starts the instance on a fresh port. A port is free when
// picked but another process can take it before the command binds it, so
// a start that fails saying so is retried on another port.
func (i *Instance) firstStart(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return fmt.Errorf("cannot find a free port on 127.0.0.1 for target %s: %v", i.label, err)
		}
		i.port = port
		err = i.Restart(ctx)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portRetries {
			return err
		}
	}
}

// start starts the command once. Callers hold i.mu.
func (i *Instance) start() (*processRun, error) {
	cmd, err := targetCommand(i.p.cfg.Command)
	if err != nil {
		return nil, err
	}
	cmd.Dir = i.p.cfg.Dir
	cmd.Env = append(i.p.env(i.port), MarkEnv+"="+i.mark)
	// Our own pipe rather than exec's copying goroutine: Wait then returns
	// when the command exits, even while a child still holds the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start target %s %q: %v", i.label, i.p.cfg.Command, err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return nil, fmt.Errorf("cannot start target %s %q: %v", i.label, i.p.cfg.Command, err)
	}
	_ = pw.Close()
	r := &processRun{cmd: cmd, exited: make(chan struct{}), pipe: pr, logDone: make(chan struct{}), watched: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.exited)
		i.watch(r)
	}()
	go i.copyOutput(r)
	return r, nil
}

// waitReady probes until the instance is ready. On any failure it kills
// the run before returning, so nothing is left of a start that failed.
func (i *Instance) waitReady(ctx context.Context, r *processRun) error {
	timeout := time.NewTimer(i.p.cfg.ReadyTimeout)
	defer timeout.Stop()
	var noRouteSince time.Time
	for {
		select {
		case <-r.exited:
			return i.failStart(r, nil)
		default:
		}
		ready, seen, noRoute := i.p.probe(ctx, i.port)
		switch {
		case !noRoute:
			noRouteSince = time.Time{}
		case noRouteSince.IsZero():
			noRouteSince = time.Now()
		case time.Since(noRouteSince) >= min(processMissingRouteGrace, i.p.cfg.ReadyTimeout):
			// The fix names its setting (Ready) for each caller to say in
			// its words: --ready for the command.
			ready := idemcheck.Field("Ready")
			hint := idemcheck.Fieldf(idemcheck.ExitUnavailable, ready, "give %s PATH, a path that answers 2xx once it serves, or %s tcp to wait only until its port accepts connections", ready, ready)
			err := fmt.Errorf("target %s %q is up but has no readiness route: %s for %v: %w",
				i.label, i.p.cfg.Command, oneLine(seen), min(processMissingRouteGrace, i.p.cfg.ReadyTimeout), hint)
			return i.failStart(r, err)
		}
		if ready {
			// Something answered; make sure it was not another process on
			// a port ours failed to bind. From here on an end of the run
			// that the harness did not cause is an Exit.
			if !r.markReady() {
				return i.failStart(r, nil)
			}
			return nil
		}
		select {
		case <-r.exited:
			return i.failStart(r, nil)
		case <-ctx.Done():
			return i.failStart(r, fmt.Errorf("start of target %s %q was cancelled: %w", i.label, i.p.cfg.Command, context.Cause(ctx)))
		case <-i.p.closing:
			return i.failStart(r, fmt.Errorf("target %s %q was closed while starting", i.label, i.p.cfg.Command))
		case <-timeout.C:
			err := fmt.Errorf("target %s %q was not ready after %v: %s", i.label, i.p.cfg.Command, i.p.cfg.ReadyTimeout, oneLine(seen))
			return i.failStart(r, err)
		case <-time.After(processReadyPoll):
		}
	}
}

// failStart kills a start that did not become ready and returns err, or,
// when err is nil, the error of a command that exited on its own. That
// one is built after the output is drained, so it quotes the real last line.
func (i *Instance) failStart(r *processRun, err error) error {
	i.mu.Lock()
	r.kill()
	i.mu.Unlock()
	if err != nil {
		if last := r.out.lastLine(); last != noOutput {
			return fmt.Errorf("%w; last output: %s", err, last)
		}
		return err
	}
	if i.p.closed.Load() {
		// Close killed it: that, not the command, ended the start.
		return fmt.Errorf("target %s %q was closed while starting", i.label, i.p.cfg.Command)
	}
	status := "exit status 0"
	if r.waitErr != nil {
		status = r.waitErr.Error()
	}
	msg := fmt.Sprintf("target %s %q exited before it was ready (%s): %s", i.label, i.p.cfg.Command, status, r.out.lastLine())
	if r.out.sawPortTaken() {
		return &portTakenError{msg}
	}
	return errors.New(msg)
}

// stop is the graceful stop Close performs on one instance.
func (i *Instance) stop() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.cur
	if r == nil || r.groupKilled {
		return nil
	}
	pid := r.cmd.Process.Pid
	r.markDeliberate()
	// A stopped process acts on SIGTERM only once continued.
	err := errors.Join(signalGroup(pid, sigCont), signalGroup(pid, sigTerm))
	grace, cancel := context.WithTimeout(context.Background(), processStopGrace)
	defer cancel()
	// The leader is often only the shell; the server is its child and may
	// still be finishing requests, so wait for the output pipe too: it
	// closes when the last process writing to it exits.
	select {
	case <-r.exited:
	case <-grace.Done():
	}
	select {
	case <-r.logDone:
	case <-grace.Done():
	}
	r.kill()
	// Nothing the target started outlives idemcheck.
	return errors.Join(err, i.confirmDead())
}

// kill sends SIGKILL to the run's process group (once), waits until the
// leader has been reaped and collects the last output. Callers hold the
// instance's mu.
func (r *processRun) kill() {
	r.markDeliberate()
	if !r.groupKilled {
		select {
		case <-r.exited:
		default:
			// The leader is not reaped, so no pid in its tree was reused:
			// its descendants that left the group (setsid) die with it.
			for _, pid := range treeOf(r.cmd.Process.Pid) {
				killPID(pid)
			}
		}
		killGroup(r.cmd.Process)
		r.groupKilled = true
	}
	<-r.exited
	select {
	case <-r.logDone:
	case <-time.After(processDrainTimeout):
		// A process outside the group still holds the pipe; closing our
		// end ends the reader, and that process gets EPIPE on its next write.
		_ = r.pipe.Close()
		<-r.logDone
	}
}

// markReady records that the run passed its readiness probe, unless it has
// already ended; it reports whether it had not.
func (r *processRun) markReady() bool {
	r.life.Lock()
	defer r.life.Unlock()
	if r.life.ended {
		return false
	}
	r.life.ready = true
	return true
}

// markDeliberate records that the harness is ending the run, before it
// sends the signal that does.
func (r *processRun) markDeliberate() {
	r.life.Lock()
	r.life.deliberate = true
	r.life.Unlock()
}

// watch runs once the run's leader has been reaped. An end the harness did
// not cause, of a run that had got ready, becomes an Exit with the run's
// last output, read once every writer of the output is gone (or, when a
// process outside the group holds the pipe, after a bounded wait).
func (i *Instance) watch(r *processRun) {
	defer close(r.watched)
	r.life.Lock()
	r.life.ended = true
	unexpected := r.life.ready && !r.life.deliberate
	r.life.Unlock()
	if !unexpected {
		return
	}
	t := time.NewTimer(processDrainTimeout)
	select {
	case <-r.logDone:
	case <-t.C:
	}
	t.Stop()
	status := "exit status 0"
	if r.waitErr != nil {
		status = r.waitErr.Error()
	}
	e := Exit{Instance: i.index, Label: i.label, Status: status, Tail: r.out.tail(), Time: time.Now()}
	i.p.exitMu.Lock()
	i.p.exits = append(i.p.exits, e)
	i.p.exitMu.Unlock()
}

// settle waits until the instance shows it runs, or its current run has
// ended and been watched, or the settle bound passes.
func (i *Instance) settle(ctx context.Context) {
	deadline := time.Now().Add(processSettleTimeout)
	for {
		i.mu.Lock()
		r := i.cur
		i.mu.Unlock()
		if r == nil {
			return
		}
		select {
		case <-r.watched:
			return
		default:
		}
		if i.p.cfg.Ready == ReadyTCP && serving(ctx, i.port, "") || i.p.cfg.Ready != ReadyTCP && serving(ctx, i.port, i.p.cfg.Ready) {
			return
		}
		if !time.Now().Before(deadline) {
			return
		}
		t := time.NewTimer(processSettlePoll)
		select {
		case <-r.watched:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// serving reports whether a process runs code behind 127.0.0.1:port: it
// answers GET path with any HTTP reply, or (with path empty, or when it
// answers nothing) it keeps a new connection open rather than refusing or
// resetting it. A process in the middle of exiting may still have its
// listening socket, since the kernel releases a dying process's sockets in
// no useful order, so a connection it accepts is reset moments later; it
// never answers.
func serving(ctx context.Context, port int, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, processProbeTimeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if path != "" {
		_, _ = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	var b [1]byte
	_, err = conn.Read(b[:])
	if err == nil {
		return true // it answered: it runs
	}
	// Held without an answer until the probe's bound: a slow or stuck
	// process, but not a dying one, whose connections are reset.
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// copyOutput reads a run's output a line at a time into the instance's
// tail and, prefixed, into Logs.
func (i *Instance) copyOutput(r *processRun) {
	defer close(r.logDone)
	defer r.pipe.Close()
	prefix := []byte("[" + i.label + "] ")
	br := bufio.NewReaderSize(r.pipe, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			// A line longer than the buffer arrives in pieces; each is
			// passed on as a line of its own.
			line = bytes.TrimRight(line, "\r\n")
			i.tail.writeLine(line)
			r.out.note(line)
			if w := i.p.cfg.Logs; w != nil {
				msg := make([]byte, 0, len(prefix)+len(line)+1)
				msg = append(append(append(msg, prefix...), line...), '\n')
				i.p.logMu.Lock()
				_, _ = w.Write(msg)
				i.p.logMu.Unlock()
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// note records a line of output.
func (o *processOutput) note(line []byte) {
	text := strings.TrimSpace(string(line))
	if text == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = text
	// The tail keeps indentation (a stack trace's, say).
	kept := strings.TrimRight(string(line), " \t")
	if len(kept) > maxTailLine {
		kept = kept[:maxTailLine] + "…"
	}
	if len(o.lines) == ExitTailLines {
		o.lines = append(o.lines[:0], o.lines[1:]...)
	}
	o.lines = append(o.lines, kept)
	// Go, Node and Python all say it this way; the retry is worth it only
	// at the first start, where the port is ours to choose.
	if strings.Contains(strings.ToLower(text), "address already in use") {
		o.portTaken = true
	}
}

// maxTailLine bounds each line an Exit's tail keeps, in bytes.
const maxTailLine = 1000

// tail returns the run's last non-blank lines, one per line.
func (o *processOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

func (o *processOutput) lastLine() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == "" {
		return noOutput
	}
	return o.last
}

func (o *processOutput) sawPortTaken() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.portTaken
}

// processTail keeps the last processTailSize bytes of an instance's output.
type processTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *processTail) writeLine(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(append(t.buf, line...), '\n')
	if over := len(t.buf) - processTailSize; over > 0 {
		// Cut at a line start, so the tail never begins mid-line.
		if nl := bytes.IndexByte(t.buf[over:], '\n'); nl >= 0 {
			over += nl + 1
		}
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *processTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
