package certify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/uuid"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/testctx"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// ordersImage is the example API's image, built by make images.
const ordersImage = "idemcheck/orders:local"

// containerTimeout bounds one container test: the fault checks wait out the
// image's lease (30 s, its binary's default) a few times over.
const containerTimeout = 6 * time.Minute

// startContainerTarget starts a container target for the test and removes
// it with the test; it skips (or, where Docker is required, fails) when
// containers cannot run here.
func startContainerTarget(t *testing.T, ctx context.Context, o targets.ContainerOptions) *targets.ContainerTarget {
	t.Helper()
	if err := targets.DockerAvailable(ctx); err != nil {
		skipWithoutContainers(t, err)
	}
	o.Log = testLog{t}
	// A short lease keeps the crash and stall checks quick; the policy
	// reads the lease the container really runs with from its output.
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	if _, ok := o.Env["ORDERS_LEASE"]; !ok {
		o.Env["ORDERS_LEASE"] = "1s"
	}
	ct, err := targets.StartContainerTarget(ctx, o)
	if errors.Is(err, targets.ErrNoDocker) || errors.Is(err, targets.ErrNoImage) {
		skipWithoutContainers(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ct.Close()) })
	return ct
}

// testLog shows the database provider's fallback lines in the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

var leaseLine = regexp.MustCompile(`orders: serving .*\blease=(\S+)`)

// imageLease is the lease the orders binary in the container runs with,
// read from its start-up line. The image's entrypoint passes no flags and
// the binary reads its lease only from -lease, so it runs with the
// default. The policy must promise the lease the target really has (the
// fault checks wait out and stall past exactly that lease, and a shorter
// one makes a healthy claim look stuck), so it is read from the target
// rather than assumed.
func imageLease(t *testing.T, ctx context.Context, ct *targets.ContainerTarget) time.Duration {
	t.Helper()
	// The engine collects a container's output on its own schedule, so the
	// line the target wrote before it served can reach the log a moment
	// after the target answered its readiness probe.
	deadline := time.Now().Add(15 * time.Second)
	var m []string
	for {
		logs, err := ct.Container.Logs(ctx)
		require.NoError(t, err)
		if m = leaseLine.FindStringSubmatch(logs); m != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no start-up line with the lease in the container's output:\n%s", logs)
		time.Sleep(50 * time.Millisecond)
	}
	lease, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	require.Positive(t, lease)
	return lease
}

// certifyContainer certifies a container target of the orders image with
// every fault check's needs met: its powers, its lease, a second endpoint
// and a body it declines.
func certifyContainer(t *testing.T, ctx context.Context, ct *targets.ContainerTarget, checks ...string) *certify.Result {
	t.Helper()
	cfg := ordersConfig(ct.URL, ct.DB.Pool)
	cfg.Name = "orders (container)"
	cfg.Policy.Lease = imageLease(t, ctx, ct)
	// lease-fencing holds its first attempt past the lease: an attempt
	// that times out before then is cut, its server's work dies with it,
	// and a missing fence can no longer show.
	cfg.Timeout = cfg.Policy.Lease + scenarios.LeaseMargin + 10*time.Second
	cfg.Powers = ct.Powers()
	cfg.Checks = checks
	cfg.Endpoint.Other = &scenarios.OtherEndpoint{Method: "POST", Path: idemcheck.MustTemplate("/payments")}
	failing := idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":402}`)
	cfg.Endpoint.FailingBody = &failing
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res
}

// The reference image, on a database the provider chose (a PostgreSQL
// container where the image is built), passes every check with zero
// anomalies, the crash and stall checks included: they ran and held.
func TestContainerTargetReferencePassesEveryCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ct := startContainerTarget(t, ctx, targets.ContainerOptions{Image: ordersImage})
	t.Logf("database from %s", ct.DB.Source)
	if os.Getenv("IDEMCHECK_REQUIRE_DOCKER") == "1" {
		// make images builds the PostgreSQL image too, so no fallback.
		assert.Equal(t, targets.SourceContainer, ct.DB.Source)
	}

	res := certifyContainer(t, ctx, ct, scenarios.Names()...)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	ran := map[string]bool{}
	for _, c := range res.Report.Checks {
		if c.Status == idemcheck.Skip {
			// A check for what the orders API does not offer says why.
			assert.NotEmpty(t, c.Reason, c.Name)
			continue
		}
		assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", c.Name, c.Reason)
		ran[c.Name] = c.Status == idemcheck.Pass
	}
	for _, name := range []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply,
		idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease, idemcheck.CheckLeaseFencing} {
		assert.True(t, ran[name], "%s did not pass on the container", name)
	}
}

// A variant chosen with ORDERS_VARIANT is caught by its expected check with
// its anomaly (orders.Expectation), one variant per way the harness acts on
// a container: a burst, a cut database link, a crash, a stall.
func TestContainerTargetCatchesVariants(t *testing.T) {
	t.Parallel()
	for _, v := range []orders.Variant{orders.CheckThenInsert, orders.ErrorsNotSaved, orders.NoLease, orders.LeaseNoFencing} {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
			defer cancel()
			ct := startContainerTarget(t, ctx, targets.ContainerOptions{
				Image: ordersImage, DSN: pgtest.DSN(t), Env: map[string]string{"ORDERS_VARIANT": string(v)},
			})
			check, anomaly := orders.Expectation(v)
			res := certifyContainer(t, ctx, ct, check)
			assert.Positive(t, kindsOf(res.Report)[idemcheck.Kind(anomaly)], "%s by %s: got %v", anomaly, check, kindsOf(res.Report))
			assert.Equal(t, idemcheck.Fail, res.Report.Verdict)
		})
	}
}

// The powers act on the container through its proxied database link: a
// crash while the work's COMMIT is held leaves the key claimed and no
// order, the port refuses connections until Restart, and the restarted
// container reaches the same database; a paused one accepts but does not
// answer until resumed; Close removes it.
func TestContainerTargetPowers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	// The retry after the restart must find the crashed attempt's claim
	// still leased: with the default 1 s lease, a restart slower than that
	// (a loaded machine) let the retry take the key over and create the
	// order (201, then two orders). A lease longer than the test's whole
	// timeout makes the order of events certain, not a matter of speed;
	// nothing here waits for the lease to run out.
	lease := containerTimeout + time.Minute
	ct := startContainerTarget(t, ctx, targets.ContainerOptions{Image: ordersImage, DSN: pgtest.DSN(t),
		Env: map[string]string{"ORDERS_LEASE": lease.String()}})
	p := ct.Powers()
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	count := func(customer string) int {
		var n int
		require.NoError(t, ct.DB.Pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer_id = $1", customer).Scan(&n))
		return n
	}

	key, customer := uuid.NewString(), "ic-powers-"+uuid.NewString()
	// The work's COMMIT, not the claim (an autocommitted INSERT, the
	// first effect write).
	disarm, err := p.ArmDB(faults.DBHold(faults.CommitPattern, 1))
	require.NoError(t, err)
	answered := make(chan error, 1)
	go func() {
		_, _, err := post(hc, ct.URL.String(), key, customer)
		answered <- err
	}()
	var ev faults.HoldEvent
	select {
	case ev = <-p.Held():
	case <-time.After(15 * time.Second):
		t.Fatal("the container's COMMIT never reached its database link")
	}
	assert.Contains(t, strings.ToUpper(ev.SQL), "COMMIT")

	require.NoError(t, p.Kill())
	_ = ev.Cut()
	disarm()
	assert.Error(t, <-answered, "the attempt whose server was killed got an answer")
	_, err = net.DialTimeout("tcp", ct.URL.Host, time.Second)
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "want connection refused after Kill, got %v", err)
	assert.Zero(t, count(customer), "the held COMMIT died with the container")

	require.NoError(t, p.Restart(ctx))
	// The claim outlived the crash, and the restarted container reads it
	// from the same database: its lease has not run out, so the retry is
	// told the key is in progress.
	status, body, err := post(hc, ct.URL.String(), key, customer)
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, status, body)
	status, body, err = post(hc, ct.URL.String(), uuid.NewString(), customer)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, status, body)
	assert.Equal(t, 1, count(customer))

	require.NoError(t, ct.Container.Pause(ctx))
	// The kernel still accepts connections on the port: a stall, not a crash.
	conn, err := net.DialTimeout("tcp", ct.URL.Host, time.Second)
	require.NoError(t, err, "a paused container's port must still accept")
	conn.Close()
	stalled := make(chan int, 1)
	go func() {
		status, _, _ := post(hc, ct.URL.String(), uuid.NewString(), "ic-paused-"+uuid.NewString())
		stalled <- status
	}()
	select {
	case s := <-stalled:
		t.Fatalf("a paused container answered %d", s)
	case <-time.After(time.Second):
	}
	require.NoError(t, ct.Container.Resume(ctx))
	select {
	case s := <-stalled:
		assert.Equal(t, http.StatusCreated, s, "the request queued during the pause is answered once resumed")
	case <-time.After(15 * time.Second):
		t.Fatal("no answer after Resume")
	}

	id := ct.Container.ID()
	require.NoError(t, ct.Close())
	docker := dockerClient(t)
	_, err = docker.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	assert.True(t, cerrdefs.IsNotFound(err), "container %s still exists after Close: %v", id, err)
	require.NoError(t, ct.Close(), "Close is idempotent")
}

// A start that fails after the database was provided (here: an image that
// is not there) removes what it started, the PostgreSQL container
// included, and says how to get the image.
func TestContainerTargetFailedStartLeavesNothing(t *testing.T) {
	ctx := testctx.UntilDeadline(t)
	if err := targets.DockerAvailable(ctx); err != nil {
		skipWithoutContainers(t, err)
	}
	docker := dockerClient(t)
	if _, err := docker.ImageInspect(ctx, targets.DefaultPostgresImage); err != nil {
		// Without it no container would be started to leave behind.
		skipWithoutContainers(t, fmt.Errorf("%w: %s: %v", targets.ErrNoImage, targets.DefaultPostgresImage, err))
	}
	before := ownContainers(t, docker)
	var log strings.Builder
	_, err := targets.StartContainerTarget(ctx, targets.ContainerOptions{Image: "idemcheck/no-such-image:never-built", Log: &log})
	require.Error(t, err)
	assert.ErrorIs(t, err, targets.ErrNoImage)
	assert.Contains(t, err.Error(), "build it (make images")
	assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.ExitCode(err))
	assert.Empty(t, log.String(), "the PostgreSQL image is there: no fallback")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left by a failed start")
}

// --env values: NAME=VALUE, the value kept whole; the variables idemcheck
// sets itself are refused rather than silently overridden.
func TestParseContainerEnv(t *testing.T) {
	env, err := targets.ParseEnv([]string{"ORDERS_VARIANT=no-lease", "EMPTY=", "DSN_LIKE=a=b=c", "ORDERS_VARIANT=reference"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ORDERS_VARIANT": "reference", "EMPTY": "", "DSN_LIKE": "a=b=c"}, env)
	for _, bad := range []string{"ORDERS_VARIANT", "=x", "A B=c", "PORT=8080", "ADDR=0.0.0.0", "DATABASE_URL=postgres://x"} {
		_, err := targets.ParseEnv([]string{bad})
		assert.Error(t, err, bad)
	}
}

// post creates an order under key and returns the status and body.
func post(hc *http.Client, base, key, customer string) (int, string, error) {
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
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// dockerClient is a client of the engine for the test's own look at it,
// once targets has found that an engine answers. testcontainers-go looks
// for it in the same places (DOCKER_HOST, the system's socket, a rootless
// engine's); its banner is kept out of the test's output.
func dockerClient(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	require.NoError(t, targets.DockerAvailable(context.Background()))
	tclog.SetDefault(tclog.NewNoopLogger())
	docker, err := testcontainers.NewDockerClientWithOpts(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = docker.Close() })
	return docker
}

// ownContainers lists the containers, in any state, that this test binary
// started: idemcheck labels each with its pid (targets' stale-container
// sweep reads the same label).
func ownContainers(t *testing.T, docker *testcontainers.DockerClient) []string {
	t.Helper()
	list, err := docker.ContainerList(context.Background(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", "com.github.idemcheck.pid="+strconv.Itoa(os.Getpid())),
	})
	require.NoError(t, err)
	ids := []string{}
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// A container that exits when its database link is cut (ORDERS_EXIT_ON_DB_ERROR,
// the image's -exit-on-db-error): each exit is recorded at the step that
// cut the link, with the engine's exit code and the container's last
// output; the container is restarted, the steps after it are answered,
// and its whole output reaches Output when it is removed.
func TestContainerTargetExitIsWatched(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	var output strings.Builder
	ct := startContainerTarget(t, ctx, targets.ContainerOptions{
		Image: ordersImage, DSN: pgtest.DSN(t), Env: map[string]string{"ORDERS_EXIT_ON_DB_ERROR": "1"}, Output: &output,
	})
	res := certifyContainer(t, ctx, ct, idemcheck.CheckFailedAttempt, idemcheck.CheckSequentialReplay)
	var exits, restarts []idemcheck.Event
	for _, e := range res.History.Events {
		switch e.Kind {
		case idemcheck.TargetExited:
			exits = append(exits, e)
		case idemcheck.TargetRestarted:
			restarts = append(restarts, e)
		}
	}
	// failed-attempt cuts the link in each round of its two halves.
	rounds := scenarios.Defaults.FaultRounds
	cuts := 2 * rounds
	require.Len(t, exits, cuts, "%+v", res.History.Events)
	require.Len(t, restarts, cuts, "%+v", res.History.Events)
	for i, e := range exits {
		assert.Equal(t, idemcheck.CheckFailedAttempt, e.Check)
		assert.Equal(t, i%rounds+1, e.Round)
		assert.Equal(t, 1, e.Step)
		assert.Equal(t, "exit code 1", e.ExitStatus)
		assert.Contains(t, e.LogTail, "orders: database connection terminated unexpectedly")
	}
	for _, a := range res.History.Attempts {
		if a.Check == idemcheck.CheckFailedAttempt && a.Step == 1 {
			continue
		}
		assert.Equal(t, idemcheck.Replied, a.Outcome, "%s round %d step %d: %s", a.Check, a.Round, a.Step, a.Error)
	}
	require.NoError(t, ct.Close())
	assert.Equal(t, cuts, strings.Count(output.String(), "orders: database connection terminated unexpectedly"), output.String())
}
