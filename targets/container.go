package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
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
	cfg  ContainerConfig
	port int
	ctr  *engineContainer

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

func startContainer(ctx context.Context, docker *client.Client, cfg ContainerConfig, port int) (*Container, error) {
	env := map[string]string{}
	for k, v := range cfg.Env {
		env[k] = v
	}
	env["PORT"] = strconv.Itoa(port)
	env["ADDR"] = "127.0.0.1"
	if cfg.DatabaseURL != "" {
		env["DATABASE_URL"] = cfg.DatabaseURL
	}
	c := &Container{cfg: cfg, port: port}
	ctr, err := runContainer(ctx, docker, containerSpec{
		image: cfg.Image, name: cfg.Name, env: env,
		ready:        httpReady(c.URL().String()+strings.TrimPrefix(cfg.Ready, "/"), cfg.ReadyTimeout),
		readyTimeout: cfg.ReadyTimeout,
	})
	if err != nil {
		return nil, failedStart(ctr, fmt.Sprintf("container %s on 127.0.0.1:%d", cfg.Image, port), err)
	}
	c.ctr = ctr
	return c, nil
}

// failedStart removes a container that did not get ready and builds the
// error: one line, with the container's last output, which says why far
// better than a timeout does.
func failedStart(ctr *engineContainer, what string, err error) error {
	reason := oneLine(err.Error())
	if ctr == nil {
		return fmt.Errorf("%s did not start: %s", what, reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
	defer cancel()
	tail := ctr.lastLogLines(ctx, 4)
	_ = ctr.remove(ctx, 0)
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
func (c *Container) ID() string { return c.ctr.id }

// Kill crashes the target: SIGKILL to every process in the container, as
// a power cut would. It returns once the container has stopped, so the port
// refuses connections from then on. Restart brings it back.
func (c *Container) Kill(ctx context.Context) error {
	c.setDeliberate(true)
	if _, err := c.ctr.docker.ContainerKill(ctx, c.ID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
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
		state, err := c.ctr.state(ctx)
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
	state, err := c.ctr.state(ctx)
	if err != nil {
		return fmt.Errorf("restart container %s: %w", c.cfg.Image, err)
	}
	if state.Paused {
		if _, err := c.ctr.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("restart container %s: unpause: %w", c.cfg.Image, err)
		}
	}
	c.setDeliberate(true)
	if state.Running {
		if err := c.ctr.stop(ctx, containerStopGrace); err != nil {
			return fmt.Errorf("restart container %s: %w", c.cfg.Image, err)
		}
	}
	// start runs the readiness wait again.
	if err := c.ctr.start(ctx); err != nil {
		tail := c.ctr.lastLogLines(ctx, 4)
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
	state, err := c.ctr.state(ctx)
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
	text, _ := c.ctr.logs(ctx)
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
		state, err := c.ctr.state(ctx)
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
	state, err := c.ctr.state(ctx)
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
	if _, err := c.ctr.docker.ContainerPause(ctx, c.ID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container %s: %w", c.cfg.Image, err)
	}
	return nil
}

// Resume thaws a paused container; the requests that queued meanwhile are
// answered then. Resuming a container that is not paused does nothing.
func (c *Container) Resume(ctx context.Context) error {
	state, err := c.ctr.state(ctx)
	if err != nil {
		return fmt.Errorf("resume container %s: %w", c.cfg.Image, err)
	}
	if !state.Paused {
		return nil
	}
	if _, err := c.ctr.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume container %s: %w", c.cfg.Image, err)
	}
	return nil
}

// Logs returns what the container wrote to stdout and stderr, across
// restarts, interleaved as the engine recorded it.
func (c *Container) Logs(ctx context.Context) (string, error) {
	return c.ctr.logs(ctx)
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
		if state, err := c.ctr.state(ctx); err == nil && state.Paused {
			_, _ = c.ctr.docker.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{})
		}
		if err := c.ctr.remove(ctx, containerStopGrace); err != nil {
			c.closeErr = fmt.Errorf("remove container %s (%s): %v: remove it with docker rm -fv %s", c.cfg.Image, c.ID(), oneLine(err.Error()), c.ID())
		}
		_ = c.ctr.docker.Close()
	})
	return c.closeErr
}

// httpReady is the readiness wait of a container target: GET target until
// it answers 2xx, within timeout (the context's bound, named in the error).
// It dials 127.0.0.1 itself, where the target listens on host networking,
// and gives up as soon as the container stops, since a target that exited
// will never answer.
func httpReady(target string, timeout time.Duration) func(context.Context, *engineContainer) error {
	return func(ctx context.Context, ctr *engineContainer) error {
		hc := &http.Client{
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
			Timeout:   containerProbeTimeout,
		}
		defer hc.CloseIdleConnections()
		last := "no answer yet"
		for {
			// An inspect cut short by the deadline ends in the deadline's
			// error below.
			if err := ctr.stopped(ctx, "GET "+target+" answered 2xx"); err != nil && ctx.Err() == nil {
				return err
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
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
				return fmt.Errorf("GET %s did not answer 2xx within %s (last: %s)", target, timeout, last)
			case <-time.After(containerReadyPoll):
			}
		}
	}
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
