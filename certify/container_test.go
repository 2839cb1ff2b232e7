package certify_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/testctx"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// skipWithoutContainers skips the test with the reason when containers
// cannot run here; where the Makefile has set Docker up
// (IDEMCHECK_REQUIRE_DOCKER=1, as in CI) that is a failure instead.
func skipWithoutContainers(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("IDEMCHECK_REQUIRE_DOCKER") == "1" {
		t.Fatalf("container certification: %v", err)
	}
	t.Skipf("container certification needs Docker and the local images (make images): %v", err)
}

// The reference orders API as a container image (built by make images, on
// host networking) passes the whole certification with zero anomalies,
// its effects counted in the database the container writes to.
func TestCertifyReferenceContainer(t *testing.T) {
	ctx := testctx.UntilDeadline(t)
	if err := targets.DockerAvailable(ctx); err != nil {
		skipWithoutContainers(t, err)
	}
	// The container shares the host's network, so it reaches the test
	// server on 127.0.0.1 like any local process.
	dsn := pgtest.DSN(t)
	db, err := targets.OpenDatabase(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)

	c, err := targets.StartContainer(ctx, targets.ContainerConfig{Image: "idemcheck/orders:local", DatabaseURL: dsn})
	if errors.Is(err, targets.ErrNoDocker) || errors.Is(err, targets.ErrNoImage) {
		skipWithoutContainers(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	cfg := ordersConfig(c.URL(), db.Pool)
	cfg.Name = "orders (container)"
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s: %s", a.Kind, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	passed := map[string]bool{}
	for _, check := range res.Report.Checks {
		// A check that needs what this run lacks is skipped, with the reason.
		if check.Status == idemcheck.Skip {
			assert.NotEmpty(t, check.Reason, check.Name)
			continue
		}
		assert.Equal(t, idemcheck.Pass, check.Status, check.Name)
		passed[check.Name] = true
	}
	for _, name := range []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply} {
		assert.True(t, passed[name], "%s did not pass", name)
	}
	// Every intent left exactly the effects the contract allows, by the
	// count in the database the container writes to: one, two for two
	// keys, none without a key.
	want := map[string]int64{idemcheck.CheckDistinctKeys: 2, idemcheck.CheckMissingKey: 0}
	require.Len(t, res.History.Observations, len(res.History.Intents))
	for _, o := range res.History.Observations {
		w, ok := want[o.Check]
		if !ok {
			w = 1
		}
		if o.Check == idemcheck.CheckKeySyntax {
			w = keySyntaxEffects(res.History, o.Intent)
		}
		assert.Equal(t, w, o.Effects, "intent %s of %s", o.Intent, o.Check)
	}
}
