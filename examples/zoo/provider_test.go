package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// downstreamChecks are the scenarios whose retries reach the provider
// after a failure: a key forwarded wrongly shows there.
var downstreamChecks = []string{
	idemcheck.CheckConcurrentBurst, idemcheck.CheckLostReply, idemcheck.CheckFailedAttempt,
	idemcheck.CheckCrashLease, idemcheck.CheckRestartReplay, idemcheck.CheckCrashAfterCommit,
}

// The reference charges the provider double once per intent, always under
// a key, through every downstream check: its calls are in the history,
// each tied to its intent by the id it carries, and nothing is reported.
// Each provider variant is caught by its expected check.
func TestProviderDownstream(t *testing.T) {
	b := bins(t)
	dsn := pgtest.DSN(t)
	for _, v := range []orders.Variant{orders.Reference, orders.FreshProviderKey, orders.NoProviderKey, orders.ProviderKeyPerAttempt, orders.ChargeAfterCommit} {
		e, ok := zoo.Lookup("orders", string(v))
		require.True(t, ok)
		t.Run(e.Name(), func(t *testing.T) {
			checks := downstreamChecks
			if !e.Reference() {
				checks = []string{e.Check}
			}
			if v == orders.NoProviderKey {
				// Its keyless call, cut after the charge, is made again.
				checks = append(checks, idemcheck.CheckFailedAttempt)
			}
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: checks, Options: zoo.Options(), DSN: dsn})
			require.NoError(t, err)
			charged := map[string]int{}
			calls := 0
			for _, ev := range res.History.Events {
				if ev.Kind != idemcheck.ProviderCalled {
					continue
				}
				calls++
				require.NotNil(t, ev.Call)
				assert.Equal(t, idemcheck.MappedByID, ev.Call.Mapped, "the orders API forwards the intent's customer id")
				if ev.Call.Created {
					charged[ev.Intent]++
				}
			}
			require.Positive(t, calls, "the target called the provider")
			row := zoo.NewRow(e, res.Report)
			if e.Reference() {
				for _, a := range res.Report.Anomalies {
					t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
				}
				for in, n := range charged {
					assert.Equal(t, 1, n, "charges of %s", in)
				}
				assert.Empty(t, row.Inconclusive)
				// Every fault on the provider link acted, on a call of
				// failed-attempt's, and the reference still charged once.
				landed := map[string]bool{}
				for _, ev := range res.History.Events {
					if ev.Kind == idemcheck.FaultLanded && ev.Landing == idemcheck.LandedProviderCall {
						assert.Equal(t, idemcheck.CheckFailedAttempt, ev.Check)
						landed[ev.Fault] = true
					}
				}
				assert.Len(t, landed, 3, "cut after charge, slow, 5xx: %v", landed)
				return
			}
			if v == orders.NoProviderKey {
				assert.Contains(t, row.Found[idemcheck.CheckFailedAttempt], idemcheck.ProviderDuplicateCharge)
			}
			assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", e.Name(), e.Anomaly, e.Check, row.Found)
			for _, a := range res.Report.Anomalies {
				if a.Kind == idemcheck.Kind(e.Anomaly) {
					assert.NotEmpty(t, a.Calls, "the provider calls are the evidence")
				}
			}
		})
	}
}

// A target that gives up on its first failed call to the provider answers
// its client 500 at once: when failed-attempt breaks that call (the double
// answers 503, or cuts its reply after charging), the 500 is the expected
// outcome of the fault idemcheck applied, not an unexpected status. What
// is judged is the retry: it charges, or gets the charge replayed, once.
func TestProviderFailureAnsweredWith500IsNoAnomaly(t *testing.T) {
	b := bins(t)
	e := zoo.Entry{App: "orders", Variant: string(orders.Reference), Flags: "-provider-tries 1"}
	o := zoo.Options()
	o.FaultRounds = 6 // every provider fault, twice
	res, err := b.Certify(context.Background(), e, zoo.Config{Checks: []string{idemcheck.CheckFailedAttempt}, Options: o, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	broken := 0
	for _, a := range res.History.Attempts {
		if a.FaultOn(idemcheck.LinkProvider) && a.Outcome == idemcheck.Replied && a.Status >= 500 {
			broken++
		}
	}
	assert.Positive(t, broken, "the target answered 5xx to an attempt whose provider call idemcheck broke")
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	charged := map[string]int{}
	for _, ev := range res.History.Events {
		if ev.Kind == idemcheck.ProviderCalled && ev.Call != nil && ev.Call.Created {
			charged[ev.Intent]++
		}
	}
	for in, n := range charged {
		assert.Equal(t, 1, n, "intent %s charged once", in)
	}

	// Its twin that derives a fresh provider key per attempt is still
	// caught: the retry charged again.
	e = zoo.Entry{App: "orders", Variant: string(orders.FreshProviderKey), Flags: "-provider-tries 1",
		Check: idemcheck.CheckFailedAttempt, Anomaly: string(idemcheck.ProviderDuplicateCharge)}
	res, err = b.Certify(context.Background(), e, zoo.Config{Checks: []string{e.Check}, Options: o, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	row := zoo.NewRow(e, res.Report)
	assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", e.Name(), e.Anomaly, e.Check, row.Found)
}
