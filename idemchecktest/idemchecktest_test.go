package idemchecktest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func ordersTarget(t *testing.T, v orders.Variant) idemchecktest.Target {
	pool := pgtest.Pool(t)
	require.NoError(t, orders.Migrate(context.Background(), pool))
	api := orders.New(pool, orders.Config{Variant: v})
	t.Cleanup(api.Close)
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	return idemchecktest.Target{
		Handler: api, Path: "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
		Policy: &p, DB: pool, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
	}
}

// The way a team certifies its own handler: every check a named subtest.
func TestReferenceOrdersAPI(t *testing.T) {
	idemchecktest.Run(t, ordersTarget(t, orders.Reference))
}

func TestCheckReturnsTheAnomalies(t *testing.T) {
	target := ordersTarget(t, orders.CheckThenInsert)
	target.Checks = []string{idemcheck.CheckConcurrentBurst}
	rep, err := idemchecktest.Check(context.Background(), target)
	require.NoError(t, err)
	require.Equal(t, idemcheck.Fail, rep.Verdict)
	require.NotEmpty(t, rep.Anomalies)
	msg := idemchecktest.Describe(rep.Anomalies[0])
	assert.Contains(t, msg, string(rep.Anomalies[0].Kind))
	assert.Contains(t, msg, "attempt ")
}

func TestConfigurationErrors(t *testing.T) {
	_, err := idemchecktest.Check(context.Background(), idemchecktest.Target{URL: "nope"})
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	_, err = idemchecktest.Check(context.Background(), idemchecktest.Target{URL: "http://127.0.0.1:1", Body: "{{nope}}"})
	assert.ErrorContains(t, err, "Body: unknown template name")
	o := scenarios.Defaults
	o.BurstSize = 1
	_, err = idemchecktest.Check(context.Background(), idemchecktest.Target{URL: "http://127.0.0.1:1", Options: &o})
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
}
