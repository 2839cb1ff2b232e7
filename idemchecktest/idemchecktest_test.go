package idemchecktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/netns"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m, removeBinaries) }

// ordersProgram is the example orders API's command, built for these tests.
var ordersProgram = testbin.New("github.com/idemcheck/idemcheck/examples/orders/cmd/orders")

func ordersBinary(t *testing.T) string { return ordersProgram.Path(t) }

// ordersMySQLProgram is the orders API on MySQL or MariaDB.
var ordersMySQLProgram = testbin.New("github.com/idemcheck/idemcheck/examples/ordersmysql/cmd/ordersmysql")

func removeBinaries() { ordersProgram.Remove(); ordersMySQLProgram.Remove() }

// A command on a throwaway MariaDB (DBEngine mysql), effects counted
// there with ? placeholders: it passes, and the checks that fault the
// database link run there too, on its MySQL protocol.
func TestCommandOnMariaDB(t *testing.T) {
	mysqltest.NeedBinary(t)
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	r, err := idemchecktest.Check(context.Background(), idemchecktest.Target{
		Command: ordersMySQLProgram.Path(t), DBEngine: "mysql", Path: "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
		Policy: &p, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = ?",
		Checks: []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckCrashLease},
	})
	require.NoError(t, err)
	assert.Equal(t, idemcheck.Pass, r.Verdict, "%+v", r.Anomalies)
	require.Len(t, r.Checks, 2)
	for _, c := range r.Checks {
		assert.Equal(t, idemcheck.Pass, c.Status, "%s ran and passed: %+v", c.Name, c)
	}
}

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
	assert.ErrorContains(t, err, "Body: unknown template function {{nope}} at byte 2")
	o := scenarios.Defaults
	o.BurstSize = 1
	_, err = idemchecktest.Check(context.Background(), idemchecktest.Target{URL: "http://127.0.0.1:1", Options: &o})
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
}

// lease is the lease the orders command runs with and its policy
// promises: short, so the fault checks wait little.
const lease = time.Second

// commandTarget is the orders API with variant v as a process idemcheck
// starts, on a fresh database, with the fault checks.
func commandTarget(t *testing.T, v orders.Variant) idemchecktest.Target {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	p.Lease = lease
	return idemchecktest.Target{
		Command: ordersBinary(t) + " -lease " + lease.String() + " -variant " + string(v),
		DSN:     pgtest.DSN(t),
		Path:    "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
		Policy: &p, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
		Checks: []string{idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease},
	}
}

// A target given as a command is one idemcheck holds powers over: the
// fault checks run inside go test (not skipped, as for a handler), hold on
// the reference, and catch the variant that never releases a failed
// attempt's claim and the one without a lease.
func TestCommandTargetRunsTheFaultChecks(t *testing.T) {
	ctx := context.Background()
	rep, err := idemchecktest.Check(ctx, commandTarget(t, orders.Reference))
	require.NoError(t, err)
	require.Len(t, rep.Checks, 2)
	for _, c := range rep.Checks {
		assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", c.Name, c.Reason)
	}
	for _, a := range rep.Anomalies {
		t.Errorf("reference: %s", idemchecktest.Describe(a))
	}
	assert.Equal(t, idemcheck.Pass, rep.Verdict)

	for v, check := range map[orders.Variant]string{orders.ClaimNeverReleased: idemcheck.CheckFailedAttempt, orders.NoLease: idemcheck.CheckCrashLease} {
		target := commandTarget(t, v)
		target.Checks = []string{check}
		rep, err := idemchecktest.Check(ctx, target)
		require.NoError(t, err)
		require.Len(t, rep.Checks, 1)
		assert.Equal(t, idemcheck.Fail, rep.Checks[0].Status, "%s: %s", v, rep.Checks[0].Reason)
		var kinds []idemcheck.Kind
		for _, a := range rep.Anomalies {
			kinds = append(kinds, a.Kind)
		}
		assert.Contains(t, kinds, idemcheck.StuckKey, "%s", v)
	}
}

// Run starts a command target once and runs each check as a subtest on it.
func TestRunStartsACommandTarget(t *testing.T) {
	target := commandTarget(t, orders.Reference)
	target.Checks = []string{idemcheck.CheckSequentialReplay, idemcheck.CheckFailedAttempt}
	idemchecktest.Run(t, target)
}

func TestTargetSourceErrors(t *testing.T) {
	ctx := context.Background()
	_, err := idemchecktest.Check(ctx, idemchecktest.Target{URL: "http://127.0.0.1:1", Command: "true"})
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	assert.ErrorContains(t, err, "give URL or Command, not both")
	_, err = idemchecktest.Check(ctx, idemchecktest.Target{URL: "http://127.0.0.1:1", DSN: "postgres://127.0.0.1/x"})
	assert.ErrorContains(t, err, "DSN goes with Command or Image")
	_, err = idemchecktest.Check(ctx, idemchecktest.Target{Command: "true", DB: pgtest.Pool(t)})
	assert.ErrorContains(t, err, "DB goes with Handler or URL")
}

// A started target's database off loopback is refused before anything is
// sent, and the configuration error names the field, not a flag. It runs
// in a network namespace of its own, so that a guard that failed would
// send nothing anywhere.
func TestTargetRemoteDSNIsRefused(t *testing.T) {
	if !netns.Enter(t) {
		return
	}
	_, err := idemchecktest.Check(context.Background(), idemchecktest.Target{Command: "true", DSN: "postgres://u:pw@10.255.255.1/db"})
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	assert.ErrorContains(t, err, "DSN postgres://u:xxxxx@10.255.255.1/db")
	assert.ErrorContains(t, err, "set AllowRemote")
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.Field("DSN"), fe.Field)
}
