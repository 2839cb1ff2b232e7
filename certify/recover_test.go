package certify_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	icassert "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A target that stays up after its database connection is cut but fails
// every request from then on (a Flask worker on one global psycopg2
// connection opened at import, with nothing that reconnects). Its retry
// gets the same 500 as the cut attempt, which alone would pass for a saved
// error: failed-attempt must instead find that a fresh request fails too,
// say the target did not recover, be inconclusive rather than pass, and
// restart the target so that the check after it meets a working one.
func TestTargetThatFailsEveryRequestAfterACutLinkIsNotPassed(t *testing.T) {
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command: ordersBinary(t) + " -lease " + testLease.String() + " -fail-after-db-error",
		DSN:     pgtest.DSN(t),
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckFailedAttempt, idemcheck.CheckInFlightRetry}
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	h, r := res.History, res.Report

	// Each half of failed-attempt (the cut before the write, the cut after
	// its commit) runs its rounds: one cut, one finding, each.
	rounds := cfg.Options.FaultRounds
	cuts := 0
	for _, in := range h.Intents {
		if in.Check == idemcheck.CheckFailedAttempt {
			cuts++
		}
	}
	require.Equal(t, 2*rounds, cuts, "two halves of %d rounds", rounds)
	var unrecovered, restarts []idemcheck.Event
	for _, e := range h.Events {
		switch e.Kind {
		case idemcheck.TargetUnrecovered:
			unrecovered = append(unrecovered, e)
		case idemcheck.TargetRestarted:
			restarts = append(restarts, e)
		case idemcheck.TargetExited:
			t.Errorf("the target never exits: %+v", e)
		}
	}
	require.Len(t, unrecovered, cuts, "one finding per cut: %+v", h.Events)
	require.Len(t, restarts, cuts, "one restart per finding: %+v", h.Events)
	for i, e := range unrecovered {
		assert.Equal(t, idemcheck.CheckFailedAttempt, e.Check)
		assert.Equal(t, i%rounds+1, e.Round)
		assert.Contains(t, e.Detail, "500 connection already closed")
		assert.Equal(t, [3]any{e.Check, e.Round, e.Step}, [3]any{restarts[i].Check, restarts[i].Round, restarts[i].Step})
	}
	// The retries got the very 500 the cut attempt got: without the fresh
	// requests it would have been taken for a saved error.
	for _, a := range h.Attempts {
		if a.Check == idemcheck.CheckFailedAttempt {
			assert.Equal(t, 500, a.Status, "round %d step %d", a.Round, a.Step)
		}
	}

	byName := map[string]idemcheck.CheckResult{}
	for _, c := range r.Checks {
		byName[c.Name] = c
	}
	fa := byName[idemcheck.CheckFailedAttempt]
	assert.Equal(t, idemcheck.Inconclusive, fa.Status, "%+v", fa)
	for _, a := range r.Anomalies {
		t.Errorf("no anomaly is due: %s: %s", a.Kind, a.Explanation)
	}
	assert.Contains(t, fa.Reason, "did not recover from its cut database link")
	// Restarted, the target answers the check after it as it should.
	assert.Equal(t, idemcheck.Pass, byName[idemcheck.CheckInFlightRetry].Status, "%+v", byName[idemcheck.CheckInFlightRetry])
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
	assert.Len(t, r.TargetExits, cuts, "listed apart from the verdict")

	// The offline check reaches the same outcome from the history alone.
	again := icassert.Report(h)
	assert.Equal(t, r.Verdict, again.Verdict)
	assert.Equal(t, r.Checks, again.Checks)
}
