package targets

import (
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

// Kill crashes every instance at once: every one is stopped (SIGSTOP)
// before any is killed (Instance.Kill), so none runs on after another
// died. A queue's worker in a second instance would otherwise go on,
// told by its broken connections or its database that the first one
// died, and take the work the kill meant to leave undone.
func (p *Process) Kill() error {
	for _, in := range p.Instances() {
		in.freeze()
	}
	var errs []error
	for _, in := range p.Instances() {
		// Every instance is confirmed dead, whatever became of the one
		// before.
		errs = append(errs, in.Kill())
	}
	return errors.Join(errs...)
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
