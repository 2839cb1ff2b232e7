package zoo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	checker "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/payments"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A service that answers 202 and makes its payment in a River worker
// 100-500 ms later: with --settle the reference passes, its effects counted
// once settled and counted again after the last check; counted at the
// reply it is inconclusive, never told its effects were lost; an unkeyed
// worker whose job River retries is caught by the recount. The history
// reaches the same verdict offline.
func TestPaymentsSettle(t *testing.T) {
	b := bins(t)
	o := zoo.Options()
	o.BurstRounds, o.Rounds = 1, 2
	checks := []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay}
	ref, ok := zoo.Lookup("payments", string(payments.Reference))
	require.True(t, ok)

	res, err := b.Certify(context.Background(), ref, zoo.Config{Checks: checks, Options: o, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	require.Equal(t, idemcheck.Pass, res.Report.Verdict)
	h := res.History
	require.Len(t, h.Observations, len(h.Intents))
	require.Len(t, h.Recounts, len(h.Intents), "every intent counted again after the last check")
	for _, ob := range h.Observations {
		require.NotNil(t, ob.Settle, ob.Intent)
		assert.True(t, ob.Settle.Settled, "%s: %+v", ob.Intent, *ob.Settle)
		assert.EqualValues(t, 1, ob.Effects, ob.Intent)
		assert.Equal(t, zoo.PaymentsSettle, ob.Settle.Bound)
		// Its status monitor was followed until the payment was made:
		// one monitor however many copies named it.
		if assert.Len(t, ob.Settle.Operations, 1, ob.Intent) {
			op := ob.Settle.Operations[0]
			assert.Equal(t, idemcheck.OperationDone, op.Over, "%s: %+v", ob.Intent, op)
			assert.Equal(t, "succeeded", op.State)
			assert.Regexp(t, `^/payments/pay_[0-9a-f]+$`, op.URL)
		}
	}
	for _, c := range res.Report.Checks {
		assert.Contains(t, c.Proof, "effects counted once settled", c.Name)
	}
	assert.Equal(t, res.Report.Verdict, checker.Report(h).Verdict, "the same verdict offline")

	// Counted at the reply: inconclusive, with the reason, not a failure.
	res, err = b.Certify(context.Background(), ref, zoo.Config{Checks: checks, Options: o, DSN: pgtest.DSN(t),
		Adjust: func(c *certify.Config) { c.Options.Settle = 0 }})
	require.NoError(t, err)
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, res.Report.Verdict)
	for _, c := range res.Report.Checks {
		assert.Contains(t, c.Reason, "accepted, effect pending", c.Name)
	}

	// A monitor that never says the operation is over: the intent is not
	// settled at the bound, and its round is inconclusive, naming the
	// state the monitor still gave, never a pass or a loss.
	res, err = b.Certify(context.Background(), ref, zoo.Config{Checks: []string{idemcheck.CheckSequentialReplay}, Options: o, DSN: pgtest.DSN(t),
		Adjust: func(c *certify.Config) {
			c.Options.Settle = 2 * time.Second
			c.Policy.StatusDone = []string{"settled-by-the-ledger"}
		}})
	require.NoError(t, err)
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, res.Report.Verdict)
	for _, c := range res.Report.Checks {
		assert.Contains(t, c.Reason, `still said "succeeded"`, c.Name)
	}

	// An unkeyed worker, retried after its payment committed.
	bad, ok := zoo.Lookup("payments", string(payments.UnkeyedEffect))
	require.True(t, ok)
	res, err = b.Certify(context.Background(), bad, zoo.Config{Checks: []string{bad.Check}, Options: o, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	require.Equal(t, idemcheck.Fail, res.Report.Verdict)
	row := zoo.NewRow(bad, res.Report)
	assert.True(t, row.Caught(), "found %v", row.Found)
	for _, a := range res.Report.Anomalies {
		if a.Kind == idemcheck.LateDuplicateEffect {
			assert.EqualValues(t, 1, a.Observed["effects"])
			assert.EqualValues(t, 2, a.Observed["late_effects"])
		}
	}
	assert.Equal(t, res.Report.Verdict, checker.Report(res.History).Verdict, "the same verdict offline")
}
