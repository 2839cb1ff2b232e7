package certify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A correct target whose database traffic does not pass through the link
// idemcheck hands it (it ignores DATABASE_URL, as a service on another
// engine has no use for it): the checks whose faults act on that link are
// skipped with the reason, not left inconclusive, the others run (bursts
// timed, not scheduled), and the verdict rests on them: PASS.
func TestDatabaseLinkChecksAreSkippedWhenNoPostgreSQLSessionUsesTheLink(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		// The target connects to the database directly, not through the
		// DATABASE_URL idemcheck sets.
		Command: "DATABASE_URL='" + dsn + "' exec " + ordersBinary(t) + " -lease " + testLease.String(),
		DSN:     dsn,
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	dbChecks := []string{idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease, idemcheck.CheckInFlightRetry, idemcheck.CheckLeaseFencing}
	others := []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckRestartReplay, idemcheck.CheckCrashAfterCommit}
	cfg.Checks = append(append([]string{}, dbChecks...), others...)
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)

	byName := map[string]idemcheck.CheckResult{}
	for _, c := range res.Report.Checks {
		byName[c.Name] = c
	}
	for _, name := range dbChecks {
		c := byName[name]
		assert.Equal(t, idemcheck.Skip, c.Status, "%s: %s", name, c.Reason)
		assert.Contains(t, c.Reason, "no PostgreSQL session came through the database link", name)
	}
	for _, name := range others {
		c := byName[name]
		assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", name, c.Reason)
	}
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	for _, b := range res.History.Bursts {
		assert.False(t, b.RaceScheduled(), "a burst was scheduled on a link the target does not use")
	}
	for _, a := range res.History.Attempts {
		assert.NotContains(t, strings.Join(a.FaultLinks, ","), idemcheck.LinkDB, "%s sent through a database-link fault", a.Check)
	}
}
