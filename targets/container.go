package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Defaults of ContainerConfig.
const (
	// DefaultContainerReady is the HTTP path probed when ContainerConfig.Ready
	// is empty.
	DefaultContainerReady = "/healthz"
	// DefaultContainerReadyTimeout bounds each wait for readiness when
	// ContainerConfig.ReadyTimeout is zero. It is longer than a process's
	// because a container's start includes the engine's own work.
	DefaultContainerReadyTimeout = 60 * time.Second
)

// ErrNoDocker reports that no Docker engine answers, so container targets
// and PostgreSQL containers cannot run. Test for it with errors.Is.
var ErrNoDocker = errors.New("no Docker engine")

// ErrNoImage reports that the image asked for is not on the Docker host.
// idemcheck never pulls: its traffic stays on loopback, so an image must be
// built or pulled beforehand. Test for it with errors.Is.
var ErrNoImage = errors.New("image not on the Docker host")

// Labels on every container idemcheck starts. Together they let a later
// run recognise the containers of a run that was killed before it could
// remove them (its pid is gone) and remove those, and only those.
const (
	labelManaged = "com.github.idemcheck.managed"
	labelPID     = "com.github.idemcheck.pid"
	labelHost    = "com.github.idemcheck.host"
)

// Timings of a container's life. They are variables only so tests can
// shorten them.
var (
	// containerStopGrace is how long a graceful stop (Restart, Close) waits
	// after the stop signal before the engine kills the container.
	containerStopGrace = 5 * time.Second
	// containerReadyPoll is the pause between readiness probes.
	containerReadyPoll = 50 * time.Millisecond
	// containerProbeTimeout bounds one readiness probe, so a target that
	// accepts but never answers costs a second per probe.
	containerProbeTimeout = time.Second
	// containerCleanupTimeout bounds Close, which runs on a context of its
	// own so that an interrupted run still removes its containers.
	containerCleanupTimeout = 30 * time.Second
	// dockerPingTimeout bounds the question "does an engine answer?".
	dockerPingTimeout = 10 * time.Second
)

// ContainerConfig says how to start a container target: an image that
// serves HTTP on 127.0.0.1:$PORT, the contract examples/orders follows.
type ContainerConfig struct {
	// Image is the image to run, such as "idemcheck/orders:local". It must
	// already be on the Docker host: idemcheck never pulls.
	Image string
	// Env holds extra variables for the container. PORT, ADDR and (when
	// DatabaseURL is set) DATABASE_URL override them, because idemcheck
	// probes and sends traffic on exactly those.
	Env map[string]string
	// DatabaseURL is handed to the container as DATABASE_URL. The container
	// shares the host's network, so a DSN on 127.0.0.1 reaches a database
	// on this machine.
	DatabaseURL string
	// Ready is the HTTP path that must answer 2xx once the target serves
	// (default DefaultContainerReady).
	Ready string
	// ReadyTimeout bounds each wait for readiness, at start and at every
	// Restart (default DefaultContainerReadyTimeout).
	ReadyTimeout time.Duration
	// Name names the container on the Docker host; empty lets the engine
	// pick one. A name must be unique there.
	Name string
}

// Container is a running container target started by StartContainer. It
// shares the host's network and serves on a free loopback port, so its
// traffic never leaves loopback, and it has the powers a chaos check needs:
// crash (Kill), Restart, Pause and Resume. Close removes it; call Close on
// every path, also after a failed check.
type Container struct {
	cfg    ContainerConfig
	port   int
	ctr    *testcontainers.DockerContainer
	docker *testcontainers.DockerClient

	// mu guards the watch: deliberate says the harness stopped the current
	// start (Kill, Restart, Close); reported is the FinishedAt of the last
	// end that Exits reported.
	mu         sync.Mutex
	deliberate bool
	reported   string

	closeOnce sync.Once
	closeErr  error
}

// StartContainer starts cfg.Image on host networking with PORT set to a
// free loopback port, ADDR=127.0.0.1 and DATABASE_URL, and returns once
// GET cfg.Ready answers 2xx. Containers left by runs that were killed are
// removed first. A container that exits or never gets ready is removed, and
// the error quotes its last output.
//
// The error wraps ErrNoDocker when no engine answers and ErrNoImage when
// the image is missing, so a caller can skip or fall back on either.
func StartContainer(ctx context.Context, cfg ContainerConfig) (*Container, error) {
	if cfg.Image == "" {
		return nil, errors.New("container target: no image given")
	}
	if cfg.Ready == "" {
		cfg.Ready = DefaultContainerReady
	}
	if !strings.HasPrefix(cfg.Ready, "/") {
		return nil, fmt.Errorf("container target: readiness path %q must start with /", cfg.Ready)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultContainerReadyTimeout
	}
	docker, err := dockerFor(ctx, cfg.Image)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			_ = docker.Close()
			return nil, fmt.Errorf("cannot find a free port on 127.0.0.1: %v", err)
		}
		c, err := startContainer(ctx, docker, cfg, port)
		if err == nil {
			return c, nil
		}
		// The port was free when picked; another process can take it
		// before the container binds it.
		if !errors.Is(err, errPortTaken) || attempt == portRetries {
			_ = docker.Close()
			return nil, err
		}
	}
}

func startContainer(ctx context.Context, docker *testcontainers.DockerClient, cfg ContainerConfig, port int) (*Container, error) {
	env := map[string]string{}
	for k, v := range cfg.Env {
		env[k] = v
	}
	env["PORT"] = strconv.Itoa(port)
	env["ADDR"] = "127.0.0.1"
	if cfg.DatabaseURL != "" {
		env["DATABASE_URL"] = cfg.DatabaseURL
	}
	c := &Container{cfg: cfg, port: port, docker: docker}
	opts := append(containerOptions(),
		testcontainers.WithEnv(env),
		testcontainers.WithWaitStrategyAndDeadline(cfg.ReadyTimeout, &httpReady{url: c.URL().String() + strings.TrimPrefix(cfg.Ready, "/"), timeout: cfg.ReadyTimeout}),
	)
	if cfg.Name != "" {
		opts = append(opts, testcontainers.WithName(cfg.Name))
	}
	ctr, err := testcontainers.Run(ctx, cfg.Image, opts...)
	if err != nil {
		return nil, failedStart(ctr, fmt.Sprintf("container %s on 127.0.0.1:%d", cfg.Image, port), err)
	}
	c.ctr = ctr
	return c, nil
}

// failedStart removes a container that did not get ready and builds the
// error: one line, with the container's last output, which says why far
// better than a timeout does.
func failedStart(ctr *testcontainers.DockerContainer, what string, err error) error {
	reason := oneLine(err.Error())
	if ctr == nil {
		return fmt.Errorf("%s did not start: %s", what, reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
	defer cancel()
	tail := lastLogLines(ctx, ctr, 4)
	_ = ctr.Terminate(ctx, testcontainers.StopTimeout(0))
	err = fmt.Errorf("%s did not get ready: %s; its last output: %s", what, reason, tail)
	if strings.Contains(strings.ToLower(tail), "address already in use") {
		return &portTakenError{msg: err.Error()}
	}
	return err
}

// URL returns the address clients use: http://127.0.0.1:PORT/, the same
// across restarts. Each call returns a fresh copy.
func (c *Container) URL() *url.URL {
	return &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(c.port), Path: "/"}
}

// ID returns the container's id on the Docker host.
func (c *Container) ID() string { return c.ctr.GetContainerID() }

// Kill crashes the target: SIGKILL to every process in the container, as
// a power cut would. It returns once the container has stopped, so the port
// refuses connections from then on. Restart brings it back.
func (c *Container) Kill(ctx context.Context) error {
	c.setDeliberate(true)
	if _, err := c.docker.ContainerKill(ctx, c.ID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("kill container %s: %w", c.cfg.Image, err)
	}
	return c.waitStopped(ctx)
}

// waitStopped polls until the engine reports the container stopped: the
// kill call returns once the signal is sent, before the process is gone.
// A SIGKILL takes milliseconds; the bound only keeps a stuck engine from
// hanging the run.
func (c *Container) waitStopped(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, containerCleanupTimeout)
	defer cancel()
	for {
		state, err := c.ctr.State(ctx)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.cfg.Image, err)
		}
		if !state.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %s still running after kill: %w", c.cfg.Image, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Restart starts the target again on the same port and waits until it is
// ready: after Kill it is a restart after a crash; on a running target it
// stops it gracefully first (SIGTERM or the image's stop signal, then a
// kill after 5 s); a paused target is resumed first.
func (c *Container) Restart(ctx context.Context) error {
	state, err := c.ctr.State(ctx)
	if err != nil {
		return fmt.Errorf("restart container %s: %w", c.cfg.Image, err)
	}
	if state.Paused {
		if _, err := c.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("restart container %s: unpause: %w", c.cfg.Image, err)
		}
	}
	c.setDeliberate(true)
	if state.Running {
		grace := containerStopGrace
		if err := c.ctr.Stop(ctx, &grace); err != nil {
			return fmt.Errorf("restart container %s: %w", c.cfg.Image, err)
		}
	}
	// Start runs the readiness wait again.
	if err := c.ctr.Start(ctx); err != nil {
		tail := lastLogLines(ctx, c.ctr, 4)
		return fmt.Errorf("restart container %s on 127.0.0.1:%d: %s; its last output: %s", c.cfg.Image, c.port, oneLine(err.Error()), tail)
	}
	// From here on an end the harness did not cause is an Exit again.
	c.setDeliberate(false)
	return nil
}

// setDeliberate records whether the harness is ending the current start.
func (c *Container) setDeliberate(on bool) {
	c.mu.Lock()
	c.deliberate = on
	c.mu.Unlock()
}

// Exits returns the container's end that the harness did not cause (not
// Kill, Restart or Close), if it has ended since it was last started and
// that end was not reported yet: the engine's exit code and the last
// ExitTailLines lines of its output. The container stays down until
// Restart or Revive.
func (c *Container) Exits(ctx context.Context) ([]Exit, error) {
	state, err := c.ctr.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.cfg.Image, err)
	}
	if state.Running || state.Paused || state.Restarting {
		return nil, nil
	}
	c.mu.Lock()
	if c.deliberate || state.FinishedAt == c.reported {
		c.mu.Unlock()
		return nil, nil
	}
	c.reported = state.FinishedAt
	c.mu.Unlock()
	status := fmt.Sprintf("exit code %d", state.ExitCode)
	if state.OOMKilled {
		status += " (out of memory)"
	}
	if state.Error != "" {
		status += ": " + oneLine(state.Error)
	}
	text, _ := containerLogs(ctx, c.ctr)
	when, err := time.Parse(time.RFC3339Nano, state.FinishedAt)
	if err != nil {
		when = time.Now()
	}
	return []Exit{{Instance: 0, Label: c.cfg.Image, Status: status, Tail: lastLines(text, ExitTailLines), Time: when}}, nil
}

// Settle waits until the container shows it runs (it answers on its port,
// see serving) or the engine reports it stopped, for at most 5 s, so that Exits then reports a
// container that was dying when a step's attempts went unanswered.
func (c *Container) Settle(ctx context.Context) {
	deadline := time.Now().Add(processSettleTimeout)
	for {
		state, err := c.ctr.State(ctx)
		if err != nil || !state.Running || state.Paused {
			return
		}
		if serving(ctx, c.port, c.cfg.Ready) {
			return
		}
		if !time.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Revive restarts the container, as Restart does, if it is not running,
// and reports whether it did. A running or paused container is left alone.
func (c *Container) Revive(ctx context.Context) (bool, error) {
	state, err := c.ctr.State(ctx)
	if err != nil {
		return false, fmt.Errorf("container %s: %w", c.cfg.Image, err)
	}
	if state.Running || state.Paused {
		return false, nil
	}
	return true, c.Restart(ctx)
}

// Pause freezes every process in the container (the cgroup freezer): the
// kernel still accepts connections on its port, but nothing answers, as
// with a server stuck in a long garbage collection. Resume thaws it.
func (c *Container) Pause(ctx context.Context) error {
	if _, err := c.docker.ContainerPause(ctx, c.ID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container %s: %w", c.cfg.Image, err)
	}
	return nil
}

// Resume thaws a paused container; the requests that queued meanwhile are
// answered then. Resuming a container that is not paused does nothing.
func (c *Container) Resume(ctx context.Context) error {
	state, err := c.ctr.State(ctx)
	if err != nil {
		return fmt.Errorf("resume container %s: %w", c.cfg.Image, err)
	}
	if !state.Paused {
		return nil
	}
	if _, err := c.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume container %s: %w", c.cfg.Image, err)
	}
	return nil
}

// Logs returns what the container wrote to stdout and stderr, across
// restarts, interleaved as the engine recorded it.
func (c *Container) Logs(ctx context.Context) (string, error) {
	return containerLogs(ctx, c.ctr)
}

// Close removes the container and its anonymous volumes, stopping it
// first if it runs (a paused one is thawed so it can stop). It runs on a
// context of its own, bounded by 30 s, so that a run interrupted by a
// cancelled ctx still cleans up; ctx only carries values. It is idempotent
// and safe on nil.
func (c *Container) Close(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.setDeliberate(true)
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerCleanupTimeout)
		defer cancel()
		if state, err := c.ctr.State(ctx); err == nil && state.Paused {
			_, _ = c.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{})
		}
		if err := c.ctr.Terminate(ctx, testcontainers.StopTimeout(containerStopGrace)); err != nil {
			c.closeErr = fmt.Errorf("remove container %s (%s): %v: remove it with docker rm -fv %s", c.cfg.Image, c.ID(), oneLine(err.Error()), c.ID())
		}
		_ = c.docker.Close()
	})
	return c.closeErr
}

// DockerAvailable returns nil when a Docker engine answers, found the way
// testcontainers-go finds one (DOCKER_HOST, the Docker context, the default
// socket). Otherwise the error wraps ErrNoDocker and says why.
func DockerAvailable(ctx context.Context) error {
	docker, err := connectDocker(ctx)
	if err != nil {
		return err
	}
	return docker.Close()
}

// connectDocker returns a client of an engine that answered a ping.
func connectDocker(ctx context.Context) (*testcontainers.DockerClient, error) {
	setupTestcontainers()
	ctx, cancel := context.WithTimeout(ctx, dockerPingTimeout)
	defer cancel()
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		// testcontainers-go reports only its last way of looking.
		return nil, fmt.Errorf("%w answers at DOCKER_HOST, the Docker context or the default socket (%s)", ErrNoDocker, oneLine(err.Error()))
	}
	if _, err := docker.Ping(ctx, client.PingOptions{}); err != nil {
		_ = docker.Close()
		return nil, fmt.Errorf("%w answers at %s: %s", ErrNoDocker, docker.DaemonHost(), oneLine(err.Error()))
	}
	return docker, nil
}

// dockerFor connects to the engine, checks that image is there and removes
// the containers of killed runs: what every container start needs first.
func dockerFor(ctx context.Context, image string) (*testcontainers.DockerClient, error) {
	docker, err := connectDocker(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := docker.ImageInspect(ctx, image); err != nil {
		_ = docker.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s: build it (make images builds idemcheck/orders:local and %s) or pull it first; idemcheck never pulls", ErrNoImage, image, DefaultPostgresImage)
		}
		return nil, fmt.Errorf("cannot inspect image %s: %s", image, oneLine(err.Error()))
	}
	removeStaleContainers(ctx, docker)
	return docker, nil
}

// hostRuntime is the name under which setupTestcontainers registers the
// Docker runtime with "host" as its default network.
const hostRuntime = "idemcheck-host-network"

var setupOnce sync.Once

// setupTestcontainers configures testcontainers-go once per process,
// before its configuration is first read (it is read once and cached):
//
//   - the Ryuk reaper is disabled unless TESTCONTAINERS_RYUK_DISABLED says
//     otherwise: its image would have to be pulled, and idemcheck removes
//     its containers itself (Close, and the label sweep at every start);
//   - unless TESTCONTAINERS_PROVIDER names a runtime, the Docker runtime is
//     registered with "host" as its default network. testcontainers-go
//     otherwise attaches every container to the engine's "bridge" network
//     and, on an engine started with --bridge=none (as CI starts it, so that
//     traffic stays on loopback), creates a bridge network of its own and
//     fails to start the container in it;
//   - its own logging, a multi-line banner and a line per container step,
//     is silenced: callers get one-line errors that carry the container's
//     output instead.
//
// The variables are set only while the configuration is read, so child
// processes never inherit them.
func setupTestcontainers() {
	setupOnce.Do(func() {
		var restore []func()
		setenv := func(key, value string) {
			if _, ok := os.LookupEnv(key); ok {
				return
			}
			_ = os.Setenv(key, value)
			restore = append(restore, func() { _ = os.Unsetenv(key) })
		}
		setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		if os.Getenv("TESTCONTAINERS_PROVIDER") == "" && !strings.Contains(os.Getenv("DOCKER_HOST"), "podman") {
			err := testcontainers.RegisterProvider(hostRuntime, func() testcontainers.RuntimeProvider { return hostNetworkRuntime{} })
			if err == nil {
				setenv("TESTCONTAINERS_PROVIDER", hostRuntime)
			}
		}
		testcontainers.ReadConfig()
		for _, f := range restore {
			f()
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// hostNetworkRuntime is the standard Docker runtime (empty endpoints keep
// testcontainers-go's discovery) whose default network is "host".
type hostNetworkRuntime struct{}

// Initialize implements testcontainers.RuntimeProvider.
func (hostNetworkRuntime) Initialize(context.Context) (testcontainers.RuntimeConfig, error) {
	return testcontainers.RuntimeConfig{DefaultBridgeNetwork: "host"}, nil
}

// containerOptions are the options every container idemcheck starts gets:
// host networking, the labels of the stale-container sweep, and quiet
// logging.
func containerOptions() []testcontainers.ContainerCustomizer {
	host, _ := os.Hostname()
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		testcontainers.WithLabels(map[string]string{
			labelManaged: "true",
			labelPID:     strconv.Itoa(os.Getpid()),
			labelHost:    host,
		}),
	}
}

// removeStaleContainers removes the containers (and their volumes) that
// idemcheck runs on this machine started and did not remove because they
// were killed: their pid is gone. Containers of live runs, including
// concurrent tests, are left alone. Failures are ignored: this is
// housekeeping, not part of the run.
func removeStaleContainers(ctx context.Context, docker *testcontainers.DockerClient) {
	host, _ := os.Hostname()
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", labelManaged+"=true", labelHost+"="+host),
	})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		pid, err := strconv.Atoi(c.Labels[labelPID])
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_, _ = docker.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// httpReady is the readiness wait of a container target: GET url until it
// answers 2xx. It dials 127.0.0.1 itself instead of the host
// testcontainers-go reports, which on host networking can name another
// interface of the machine.
type httpReady struct {
	url     string
	timeout time.Duration
}

// WaitUntilReady implements wait.Strategy. It gives up as soon as the
// container stops, since a target that exited will never answer.
func (h *httpReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	hc := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		Timeout:   containerProbeTimeout,
	}
	defer hc.CloseIdleConnections()
	last := "no answer yet"
	for {
		state, err := target.State(ctx)
		if err != nil {
			return err
		}
		if !state.Running {
			return fmt.Errorf("the container stopped (exit code %d) before GET %s answered 2xx", state.ExitCode, h.url)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("GET %s did not answer 2xx within %s (last: %s)", h.url, h.timeout, last)
		case <-time.After(containerReadyPoll):
		}
	}
}

// containerLogs reads all of a container's output.
func containerLogs(ctx context.Context, ctr *testcontainers.DockerContainer) (string, error) {
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of container %s: %w", ctr.GetContainerID(), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return string(b), fmt.Errorf("logs of container %s: %w", ctr.GetContainerID(), err)
	}
	return string(b), nil
}

// lastLines returns the last n non-blank lines of text, one per line.
func lastLines(text string, n int) string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimRight(line, " \t\r"); strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lastLogLines returns the container's last n non-empty output lines
// joined with " | ", or "(no output)".
func lastLogLines(ctx context.Context, ctr *testcontainers.DockerContainer, n int) string {
	text, _ := containerLogs(ctx, ctr)
	return joinLastLines(text, n, nil)
}
