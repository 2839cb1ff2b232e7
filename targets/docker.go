package targets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The Docker engine under container targets and PostgreSQL containers,
// spoken to through the engine's own API client: finding an engine,
// checking an image, and creating, starting, stopping and removing the
// containers idemcheck owns.

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

// dockerPingTimeout bounds the question "does an engine answer?" at each
// address tried.
const dockerPingTimeout = 10 * time.Second

// DockerAvailable returns nil when a Docker engine answers: the one
// DOCKER_HOST names when it is set, else the first that answers on the
// system's socket or on the sockets of a rootless engine or Docker Desktop.
// Otherwise the error wraps ErrNoDocker and says why.
func DockerAvailable(ctx context.Context) error {
	docker, err := connectDocker(ctx)
	if err != nil {
		return err
	}
	return docker.Close()
}

// connectDocker returns a client of an engine that answered a ping.
// DOCKER_HOST is final when set, as it is for the docker command; the
// variables of client.FromEnv (TLS, API version) apply either way.
func connectDocker(ctx context.Context) (*client.Client, error) {
	if host := os.Getenv(client.EnvOverrideHost); host != "" {
		docker, err := pingDocker(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("%w answers at DOCKER_HOST=%s: %s", ErrNoDocker, host, oneLine(err.Error()))
		}
		return docker, nil
	}
	hosts := dockerSockets()
	var reasons []string
	for _, host := range hosts {
		docker, err := pingDocker(ctx, host)
		if err == nil {
			return docker, nil
		}
		reasons = append(reasons, host+": "+oneLine(err.Error()))
		if ctx.Err() != nil {
			break
		}
	}
	if len(reasons) == 0 {
		return nil, fmt.Errorf("%w answers: DOCKER_HOST is not set and no socket exists at %s", ErrNoDocker, strings.Join(socketPaths(), ", "))
	}
	return nil, fmt.Errorf("%w answers at %s", ErrNoDocker, strings.Join(reasons, "; "))
}

// pingDocker returns a client of the engine at host once it answered.
func pingDocker(ctx context.Context, host string) (*client.Client, error) {
	docker, err := client.New(client.FromEnv, client.WithHost(host))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dockerPingTimeout)
	defer cancel()
	if _, err := docker.Ping(ctx, client.PingOptions{}); err != nil {
		_ = docker.Close()
		return nil, err
	}
	return docker, nil
}

// dockerSockets are the addresses of the sockets of socketPaths that
// exist, in that order.
func dockerSockets() []string {
	var hosts []string
	for _, path := range socketPaths() {
		host := "unix://" + path
		if _, err := os.Stat(path); err == nil && !slices.Contains(hosts, host) {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// socketPaths are where an engine listens when DOCKER_HOST does not say:
// the system's socket first, then those where a rootless engine and Docker
// Desktop put theirs.
func socketPaths() []string {
	paths := []string{"/var/run/docker.sock"}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		paths = append(paths, filepath.Join(dir, "docker.sock"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".docker", "run", "docker.sock"), filepath.Join(home, ".docker", "desktop", "docker.sock"))
	}
	if uid := os.Getuid(); uid >= 0 {
		paths = append(paths, fmt.Sprintf("/run/user/%d/docker.sock", uid))
	}
	return paths
}

// dockerFor connects to the engine, checks that image is there and removes
// the containers of killed runs: what every container start needs first.
func dockerFor(ctx context.Context, image string) (*client.Client, error) {
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

// removeStaleContainers removes the containers (and their volumes) that
// idemcheck runs on this machine started and did not remove because they
// were killed: their pid is gone. Containers of live runs, including
// concurrent tests, are left alone. Failures are ignored: this is
// housekeeping, not part of the run.
func removeStaleContainers(ctx context.Context, docker *client.Client) {
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

// containerSpec says what runContainer creates.
type containerSpec struct {
	image string
	// name is the container's name on the engine; empty lets it pick one.
	name string
	env  map[string]string
	// cmd replaces the image's command when not empty.
	cmd []string
	// ready waits until the container serves, on a context bounded by
	// readyTimeout; it runs at every start.
	ready        func(context.Context, *engineContainer) error
	readyTimeout time.Duration
}

// engineContainer is a container idemcheck created on the engine, with
// the readiness wait that each of its starts runs.
type engineContainer struct {
	docker       *client.Client
	id           string
	ready        func(context.Context, *engineContainer) error
	readyTimeout time.Duration
}

// runContainer creates spec's container on host networking, labelled for
// the stale-container sweep, starts it and waits until it is ready. The
// image is never pulled: dockerFor has checked that it is there. After a
// failed start the container is returned with the error, so the caller can
// read its output and remove it.
func runContainer(ctx context.Context, docker *client.Client, spec containerSpec) (*engineContainer, error) {
	host, _ := os.Hostname()
	env := make([]string, 0, len(spec.env))
	for k, v := range spec.env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	res, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: spec.name,
		Config: &container.Config{
			Image: spec.image,
			Env:   env,
			Cmd:   spec.cmd,
			Labels: map[string]string{
				labelManaged: "true",
				labelPID:     strconv.Itoa(os.Getpid()),
				labelHost:    host,
			},
		},
		HostConfig: &container.HostConfig{NetworkMode: "host"},
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	c := &engineContainer{docker: docker, id: res.ID, ready: spec.ready, readyTimeout: spec.readyTimeout}
	return c, c.start(ctx)
}

// start starts the container and waits until it is ready.
func (c *engineContainer) start(ctx context.Context) error {
	if _, err := c.docker.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.readyTimeout)
	defer cancel()
	return c.ready(ctx, c)
}

// state is the container's state as the engine reports it now.
func (c *engineContainer) state(ctx context.Context) (*container.State, error) {
	res, err := c.docker.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	if res.Container.State == nil {
		return nil, fmt.Errorf("the engine reports no state for container %s", c.id)
	}
	return res.Container.State, nil
}

// stop sends the stop signal (SIGTERM or the image's) and has the engine
// kill the container if it has not ended after grace; a stopped container
// stays as it is.
func (c *engineContainer) stop(ctx context.Context, grace time.Duration) error {
	seconds := int(grace.Seconds())
	_, err := c.docker.ContainerStop(ctx, c.id, client.ContainerStopOptions{Timeout: &seconds})
	return err
}

// remove stops the container within grace and removes it with its
// anonymous volumes. A container that is gone already counts as removed.
func (c *engineContainer) remove(ctx context.Context, grace time.Duration) error {
	// A failed stop is not final: the forced removal kills what still runs.
	_ = c.stop(ctx, grace)
	_, err := c.docker.ContainerRemove(ctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// logs reads all of the container's output, across its starts.
func (c *engineContainer) logs(ctx context.Context) (string, error) {
	rc, err := c.docker.ContainerLogs(ctx, c.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", fmt.Errorf("logs of container %s: %w", c.id, err)
	}
	defer rc.Close()
	// Without a TTY the engine frames stdout and stderr apart; both go to
	// one writer, so they stay interleaved as the engine recorded them.
	var out strings.Builder
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		return out.String(), fmt.Errorf("logs of container %s: %w", c.id, err)
	}
	return out.String(), nil
}

// lastLogLines returns the container's last n non-empty output lines
// joined with " | ", or "(no output)".
func (c *engineContainer) lastLogLines(ctx context.Context, n int) string {
	text, _ := c.logs(ctx)
	return joinLastLines(text, n, nil)
}

// stopped returns an error saying how the container ended if it is not
// running, for a readiness wait to give up on at once: a container that
// exited will never get ready.
func (c *engineContainer) stopped(ctx context.Context, waitingFor string) error {
	state, err := c.state(ctx)
	if err != nil {
		return err
	}
	if state.Running {
		return nil
	}
	how := fmt.Sprintf("exit code %d", state.ExitCode)
	if state.OOMKilled {
		how += ", out of memory"
	}
	return fmt.Errorf("the container stopped (%s) before %s", how, waitingFor)
}
