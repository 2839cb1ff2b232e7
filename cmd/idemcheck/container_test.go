package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/testctx"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// ordersImage is the example API's image, built by make images.
const ordersImage = "idemcheck/orders:local"

// requireDocker returns a client of the engine, once it has checked that
// the images exist. Where containers cannot run it skips with the reason,
// or fails where the Makefile has set Docker up (IDEMCHECK_REQUIRE_DOCKER=1,
// as in CI): a skip there would only hide a broken setup.
func requireDocker(t *testing.T, images ...string) *testcontainers.DockerClient {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("IDEMCHECK_REQUIRE_DOCKER") == "1" {
		skip = t.Fatalf
	}
	ctx := testctx.UntilDeadline(t)
	if err := targets.DockerAvailable(ctx); err != nil {
		skip("container certification needs Docker: %v", err)
	}
	// testcontainers-go looks for the engine in the same places as targets
	// (DOCKER_HOST, the system's socket, a rootless engine's); its banner is
	// kept out of the test's output.
	tclog.SetDefault(tclog.NewNoopLogger())
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = docker.Close() })
	for _, image := range images {
		if _, err := docker.ImageInspect(ctx, image); err != nil {
			skip("container certification needs the local image %s (make images): %v", image, err)
		}
	}
	return docker
}

// ownContainers lists the containers, in any state, that this test binary
// started: idemcheck labels each with its pid (the same label targets'
// stale-container sweep reads).
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

// imageArgs certifies the orders image's POST /orders, effects counted in
// the database idemcheck gives it.
func imageArgs(extra ...string) []string {
	args := []string{"certify", "--image", ordersImage, "--path", "/orders",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--replay-header", "Idempotent-Replayed", "--no-color"}
	return append(args, extra...)
}

// The CI recipe: certify --image with nothing else running, the database
// provided (a PostgreSQL container where its image is built), reports
// written, exit 0, and nothing left on the Docker host.
func TestCertifyContainerImageReferenceExitsZero(t *testing.T) {
	docker := requireDocker(t, ordersImage)
	t.Setenv("DATABASE_URL", "")
	before := ownContainers(t, docker)
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "junit.xml")
	// The lease is declared, as a pipeline certifying its own image would:
	// without it a key still in progress after a crash cannot be told from
	// a long lease, and crash-lease is inconclusive.
	code, out, errOut := cli(t, imageArgs("--other-path", "/payments",
		"--failing-body", `{"customerId":"{{intent}}","totalCents":402}`,
		"--env", "ORDERS_LEASE=1s", "--lease", "1s",
		"--json", jsonPath, "--junit", junitPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, ordersImage, "the image names the target in the report")
	assert.Contains(t, out, "verdict PASS")

	var rep struct {
		Verdict string `json:"verdict"`
		Target  struct {
			Name, URL string
		} `json:"target"`
		Checks []struct{ Name, Status, Reason string } `json:"checks"`
	}
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, "pass", rep.Verdict)
	assert.Equal(t, ordersImage, rep.Target.Name)
	assert.True(t, strings.HasPrefix(rep.Target.URL, "http://127.0.0.1:"), rep.Target.URL)
	status := map[string]string{}
	for _, c := range rep.Checks {
		status[c.Name] = c.Status
		if c.Status == "skip" {
			// A check this run lacks the means for says why.
			assert.NotEmpty(t, c.Reason, c.Name)
		}
	}
	for _, name := range []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply} {
		assert.Equal(t, "pass", status[name], name)
	}
	// failed-attempt cuts the container's database link: the command
	// handed the checks the container's powers.
	assert.Equal(t, "pass", status[idemcheck.CheckFailedAttempt])
	junit, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	assert.Contains(t, string(junit), "<testsuite")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")
}

// A buggy variant chosen with --env, on the database given with --db, is
// caught: exit 1 with the anomaly, and the container is gone.
func TestCertifyContainerImageBuggyVariantExitsOne(t *testing.T) {
	docker := requireDocker(t, ordersImage)
	before := ownContainers(t, docker)
	code, out, errOut := cli(t, imageArgs("--env", "ORDERS_VARIANT=check-then-insert", "--db", pgtest.DSN(t), "--checks", "concurrent-burst")...)
	require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict FAIL")
	assert.Contains(t, out, "duplicate-effect")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")
}

// An image that is not on the Docker host: exit 3, one line that says how
// to build it, no report, nothing left running.
func TestCertifyContainerMissingImage(t *testing.T) {
	docker := requireDocker(t)
	before := ownContainers(t, docker)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, "certify", "--image", "idemcheck/no-such-image:never-built", "--db", pgtest.DSN(t), "--json", jsonPath)
	assert.Equal(t, idemcheck.ExitUnavailable, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "build it (make images")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	assert.NoFileExists(t, jsonPath)
	assert.ElementsMatch(t, before, ownContainers(t, docker))
}

// --image goes alone, and its flags go with it: one-line usage errors
// (exit 2) before anything starts, so they need no Docker.
func TestCertifyContainerUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"with url", []string{"--image", ordersImage, "--url", "http://127.0.0.1:8080"}, "give --image alone, not with --url or --cmd"},
		{"with cmd", []string{"--image", ordersImage, "--cmd", "true"}, "give --image alone, not with --url or --cmd"},
		{"env without image", []string{"--url", "http://127.0.0.1:8080", "--env", "A=b"}, "--env goes with --cmd or --image"},
		{"ready without a started target", []string{"--url", "http://127.0.0.1:8080", "--ready", "/up"}, "--ready goes with --cmd or --image"},
		{"db-image without image", []string{"--cmd", "true", "--db-image", "pg:15"}, "--db-image goes with --image"},
		{"ready tcp with image", []string{"--image", ordersImage, "--ready", "tcp"}, `--ready "tcp" must be a path starting with /, such as /healthz (or, with --cmd, tcp`},
		{"instances", []string{"--image", ordersImage, "--instances", "2"}, "--instances goes with --cmd"},
		{"ready not a path", []string{"--image", ordersImage, "--ready", "healthz"}, `--ready "healthz" must be a path starting with /`},
		{"env not a pair", []string{"--image", ordersImage, "--env", "ORDERS_VARIANT"}, `--env "ORDERS_VARIANT" is not NAME=VALUE`},
		{"env sets the port", []string{"--image", ordersImage, "--env", "PORT=80"}, "--env PORT: idemcheck sets PORT, ADDR and DATABASE_URL itself"},
		{"no target", []string{"--path", "/orders"}, "or --cmd or --image"},
		{"provider without a started target", []string{"--url", "http://127.0.0.1:8080", "--provider-env", "PROVIDER_URL"}, "--provider-env goes with --cmd or --image"},
		{"provider env not a name", []string{"--cmd", "true", "--provider-env", "PROVIDER URL"}, `--provider-env "PROVIDER URL" is not an environment variable name, such as PROVIDER_URL`},
		{"provider env reserved", []string{"--image", ordersImage, "--provider-env", "DATABASE_URL"}, "--provider-env DATABASE_URL: idemcheck sets PORT, ADDR and DATABASE_URL itself"},
		{"provider env twice", []string{"--cmd", "true", "--provider-env", "A", "--provider-env", "A"}, "--provider-env A is named twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "r.json")
			code, out, errOut := cli(t, append(append([]string{"certify"}, c.args...), "--json", jsonPath)...)
			assert.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
			assert.NoFileExists(t, jsonPath)
		})
	}
}

// Ctrl-C in the middle of a check: the run stops at once (it does not wait
// out the lease it was stalling past), exits 3, and removes the container
// and the PostgreSQL container it started.
func TestCertifyContainerInterruptedCleansUp(t *testing.T) {
	docker := requireDocker(t, ordersImage)
	t.Setenv("DATABASE_URL", "")
	before := ownContainers(t, docker)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// lease-fencing stalls an attempt past the lease: 30 s of a run that
	// is surely still going when the signal comes.
	args := imageArgs("--checks", "lease-fencing", "--lease", "30s")
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errOut) }()

	// The orders container runs once the target has started; the stall
	// begins right after.
	deadline := time.Now().Add(2 * time.Minute)
	for !runsImage(t, docker, ordersImage) {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before its container ran:\n%s%s", code, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the orders container never ran")
	}
	time.Sleep(2 * time.Second)
	interrupted := time.Now()
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, idemcheck.ExitUnavailable, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		assert.Contains(t, errOut.String(), "interrupted")
		assert.Less(t, time.Since(interrupted), 25*time.Second, "the run waited instead of stopping")
	case <-time.After(time.Minute):
		t.Fatal("the run did not stop within a minute of the interrupt")
	}
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the interrupt")
}

// runsImage reports whether one of this test binary's containers runs image.
func runsImage(t *testing.T, docker *testcontainers.DockerClient, image string) bool {
	t.Helper()
	list, err := docker.ContainerList(context.Background(), client.ContainerListOptions{
		Filters: make(client.Filters).
			Add("label", "com.github.idemcheck.pid="+strconv.Itoa(os.Getpid())).
			Add("ancestor", image).
			Add("status", "running"),
	})
	require.NoError(t, err, fmt.Sprintf("list containers of %s", image))
	return len(list.Items) > 0
}
