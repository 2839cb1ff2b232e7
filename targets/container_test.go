package targets

import (
	"github.com/idemcheck/idemcheck/internal/testctx"

	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/uuid"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ordersImage is the example API's image, built by make images.
const ordersImage = "idemcheck/orders:local"

// missingImage is a name no engine has: the tag is never built or pulled.
const missingImage = "idemcheck/no-such-image:never-built"

// requireContainers skips the test, with the reason, unless a Docker
// engine answers and the local images exist. Where the Makefile has set
// Docker up (IDEMCHECK_REQUIRE_DOCKER=1, as in CI) a skip would hide a
// broken setup, so the test fails instead.
func requireContainers(t *testing.T, images ...string) {
	t.Helper()
	ctx := testctx.UntilDeadline(t)
	skip := t.Skipf
	if os.Getenv("IDEMCHECK_REQUIRE_DOCKER") == "1" {
		skip = t.Fatalf
	}
	docker, err := connectDocker(ctx)
	if err != nil {
		skip("container tests need Docker: %v", err)
		return
	}
	defer docker.Close()
	for _, image := range images {
		if _, err := docker.ImageInspect(ctx, image); err != nil {
			skip("container tests need the local image %s (run make images): %v", image, err)
			return
		}
	}
}

// testDocker is a Docker client for the test's own checks, closed with it.
func testDocker(t *testing.T) *client.Client {
	t.Helper()
	docker, err := connectDocker(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = docker.Close() })
	return docker
}

// requireRemoved asserts that the engine holds no container with id, by
// inspecting it and by listing every container, stopped ones included; by
// names what should have removed it.
func requireRemoved(t *testing.T, docker *client.Client, id, by string) {
	t.Helper()
	ctx := context.Background()
	_, err := docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	require.Error(t, err, "container %s still exists after %s", id, by)
	require.True(t, cerrdefs.IsNotFound(err), "inspect %s: %v", id, err)
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("id", id)})
	require.NoError(t, err)
	require.Empty(t, list.Items)
}

// postOrder creates an order with an idempotency key and returns the
// status and body.
func postOrder(hc *http.Client, base, key, customer string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"orders", strings.NewReader(fmt.Sprintf(`{"customerId":%q,"totalCents":4000}`, customer)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// httpClient opens a new connection per request, so a request after a
// crash or a pause meets the target as it is now, not a pooled socket.
func httpClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
}

// The reference image on the PostgreSQL image, both built locally, with
// every container power: crash, restart, pause, resume, and removal.
func TestContainerPowers(t *testing.T) {
	requireContainers(t, ordersImage, DefaultPostgresImage)
	ctx := testctx.UntilDeadline(t)
	docker := testDocker(t)

	db, err := StartPostgresContainer(ctx, DefaultPostgresImage)
	require.NoError(t, err)
	pgID := containerOf(t, db)
	t.Cleanup(func() { closeDatabase(db) })
	assert.Equal(t, SourceContainer, db.Source)
	assert.Contains(t, db.DSN, "@127.0.0.1:", "the container's database is reached on loopback")
	var version string
	require.NoError(t, db.Pool.QueryRow(ctx, "SHOW server_version").Scan(&version))
	assert.True(t, strings.HasPrefix(version, "15."), "server version %s", version)

	c, err := StartContainer(ctx, ContainerConfig{Image: ordersImage, DatabaseURL: db.DSN})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	base := c.URL().String()
	assert.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)

	inspect, err := docker.ContainerInspect(ctx, c.ID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, container.NetworkMode("host"), inspect.Container.HostConfig.NetworkMode)
	assert.Equal(t, "true", inspect.Container.Config.Labels[labelManaged])

	hc := httpClient(5 * time.Second)
	key, customer := uuid.NewString(), "ic-container-"+uuid.NewString()
	status, created, err := postOrder(hc, base, key, customer)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status, created)
	// The order is in the container's database, counted over our own pool.
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer_id = $1", customer).Scan(&n))
	assert.Equal(t, 1, n)

	t.Run("kill refuses connections", func(t *testing.T) {
		require.NoError(t, c.Kill(ctx))
		_, err := hc.Get(base + "healthz")
		require.Error(t, err)
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "want connection refused, got %v", err)
	})

	t.Run("restart answers on the same port", func(t *testing.T) {
		require.NoError(t, c.Restart(ctx))
		assert.Equal(t, base, c.URL().String())
		// The retry after the crash is a replay of the order the database
		// kept, not a second order.
		status, replayed, err := postOrder(hc, base, key, customer)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, status)
		assert.JSONEq(t, created, replayed)
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer_id = $1", customer).Scan(&n))
		assert.Equal(t, 1, n)
	})

	t.Run("pause stalls, resume answers", func(t *testing.T) {
		require.NoError(t, c.Pause(ctx))
		_, err := httpClient(300 * time.Millisecond).Get(base + "healthz")
		require.Error(t, err, "a paused target answered")
		var ne net.Error
		assert.True(t, errors.As(err, &ne) && ne.Timeout(), "want a timeout, got %v", err)
		require.NoError(t, c.Resume(ctx))
		resp, err := hc.Get(base + "healthz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, c.Resume(ctx), "resuming a running container does nothing")
	})

	t.Run("logs span restarts", func(t *testing.T) {
		logs, err := c.Logs(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, strings.Count(logs, "orders: serving"), logs)
	})

	t.Run("close removes the containers", func(t *testing.T) {
		id := c.ID()
		// Close of a paused container too: it must still be removed.
		require.NoError(t, c.Pause(ctx))
		require.NoError(t, c.Close(ctx))
		requireRemoved(t, docker, id, "Container.Close")
		require.NoError(t, c.Close(ctx), "Close is idempotent")

		db.Close()
		requireRemoved(t, docker, pgID, "Database.Close (it must call closeContainer)")
	})
}

// closeDatabase closes db and removes its container even if Database.Close
// did not, so that a failing test leaves nothing behind; the tests check
// that Database.Close alone removes it.
func closeDatabase(db *Database) {
	db.Close()
	_ = db.closeContainer()
}

// containerOf returns the id of the container behind a container database.
func containerOf(t *testing.T, db *Database) string {
	t.Helper()
	v, ok := containerDatabases.Load(db)
	require.True(t, ok, "database has no container")
	return v.(*engineContainer).id
}

// A target that exits during start-up fails the start at once, with its
// own words, and leaves no container behind.
func TestContainerThatExitsFailsFast(t *testing.T) {
	requireContainers(t, ordersImage)
	docker := testDocker(t)
	ctx := testctx.UntilDeadline(t)
	name := "idemcheck-test-exits-" + uuid.NewString()[:8]
	start := time.Now()
	// No DATABASE_URL: the orders binary refuses to start.
	c, err := StartContainer(ctx, ContainerConfig{Image: ordersImage, Name: name})
	require.Error(t, err)
	assert.Nil(t, c)
	assert.Contains(t, err.Error(), "PORT and DATABASE_URL are required")
	assert.NotContains(t, err.Error(), "\n")
	assert.Less(t, time.Since(start), DefaultContainerReadyTimeout, "the start waited for the timeout")
	requireRemoved(t, docker, name, "a failed start")
}

func TestMissingImage(t *testing.T) {
	requireContainers(t)
	ctx := testctx.UntilDeadline(t)
	_, err := StartContainer(ctx, ContainerConfig{Image: missingImage})
	require.ErrorIs(t, err, ErrNoImage)
	assert.Contains(t, err.Error(), missingImage)
	assert.Contains(t, err.Error(), "make images")

	_, err = StartPostgresContainer(ctx, missingImage)
	require.ErrorIs(t, err, ErrNoImage)
}

// A killed run cannot remove its containers; the next start removes them,
// and leaves alone those of runs that are still alive.
func TestStaleContainersAreRemoved(t *testing.T) {
	requireContainers(t, ordersImage)
	ctx := testctx.UntilDeadline(t)
	docker := testDocker(t)
	host, _ := os.Hostname()
	create := func(pid int) string {
		res, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: ordersImage, Labels: map[string]string{
				labelManaged: "true", labelPID: fmt.Sprint(pid), labelHost: host,
			}},
			HostConfig: &container.HostConfig{NetworkMode: "host"},
		})
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = docker.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		})
		return res.ID
	}
	dead := create(deadPID(t))
	alive := create(os.Getppid())

	removeStaleContainers(ctx, docker)
	requireRemoved(t, docker, dead, "the stale-container sweep")
	_, err := docker.ContainerInspect(ctx, alive, client.ContainerInspectOptions{})
	assert.NoError(t, err, "the container of a live run was removed")
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	require.False(t, processAlive(p.Pid))
	return p.Pid
}

// The provider order: a DSN wins; then a PostgreSQL container; then the
// local binaries, with the reason logged in one line.
func TestProvideDatabaseWithOrder(t *testing.T) {
	ctx := testctx.UntilDeadline(t)

	t.Run("falls back to the local binaries", func(t *testing.T) {
		if _, err := FindPostgres(); err != nil {
			t.Skipf("needs the PostgreSQL server binaries: %v", err)
		}
		var lines []string
		db, err := ProvideDatabaseWith(ctx, "", ProvideOptions{DBImage: missingImage, Log: func(s string) { lines = append(lines, s) }})
		require.NoError(t, err)
		defer db.Close()
		assert.Equal(t, SourceLocal, db.Source)
		require.Len(t, lines, 1)
		assert.NotContains(t, lines[0], "\n")
		// Without Docker the reason is the engine, with it the image.
		if DockerAvailable(ctx) == nil {
			assert.Contains(t, lines[0], missingImage)
		} else {
			assert.Contains(t, lines[0], "no Docker engine")
		}

		// The DSN comes first, with nothing to log.
		lines = nil
		byDSN, err := ProvideDatabaseWith(ctx, db.DSN, ProvideOptions{DBImage: missingImage, Log: func(s string) { lines = append(lines, s) }})
		require.NoError(t, err)
		defer byDSN.Close()
		assert.Equal(t, SourceDSN, byDSN.Source)
		assert.Empty(t, lines)
	})

	t.Run("prefers a PostgreSQL container", func(t *testing.T) {
		requireContainers(t, DefaultPostgresImage)
		var lines []string
		db, err := ProvideDatabaseWith(ctx, "", ProvideOptions{Log: func(s string) { lines = append(lines, s) }})
		require.NoError(t, err)
		id := containerOf(t, db)
		defer closeDatabase(db)
		assert.Equal(t, SourceContainer, db.Source)
		assert.Empty(t, lines)
		require.NoError(t, db.Pool.Ping(ctx))
		db.Close()
		requireRemoved(t, testDocker(t), id, "Database.Close (it must call closeContainer)")
	})
}
