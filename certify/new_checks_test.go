package certify_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
)

var newChecks = []string{idemcheck.CheckCorrectedRetry, idemcheck.CheckKeySyntax}

// Both new variants are caught in each of 20 runs, each by its check
// alone, and the reference is clean in each, over real HTTP and a real
// database.
func TestNewChecksCatchTheirVariantsEveryRun(t *testing.T) {
	for _, v := range []orders.Variant{orders.SavesValidationErrors, orders.TruncatesKeys, orders.Reference} {
		t.Run(string(v), func(t *testing.T) {
			base, pool, _ := serveOrders(t, v)
			check, anomaly := orders.Expectation(v)
			for run := 1; run <= 20; run++ {
				cfg := ordersConfig(base, pool)
				cfg.Checks = newChecks
				res, err := certify.Run(context.Background(), cfg)
				require.NoError(t, err)
				kinds := map[idemcheck.Kind]int{}
				for _, a := range res.Report.Anomalies {
					kinds[a.Kind]++
					assert.Equal(t, check, a.Check, "run %d: %s: %s", run, a.Kind, a.Explanation)
					assert.NotEmpty(t, a.Evidence)
				}
				for _, c := range res.Report.Checks {
					want := idemcheck.Pass
					if c.Name == check {
						want = idemcheck.Fail
					}
					assert.Equal(t, want, c.Status, "run %d: %s: %s", run, c.Name, c.Reason)
					assert.Positive(t, c.Attempts, c.Name)
				}
				if v == orders.Reference {
					assert.Empty(t, kinds, "run %d", run)
					continue
				}
				// Every round of the check shows the bug: each is one intent.
				assert.Equal(t, cfg.Options.Rounds, kinds[idemcheck.Kind(anomaly)], "run %d: %v", run, kinds)
				assert.Len(t, kinds, 1, "run %d: only the variant's bug: %v", run, kinds)
			}
		})
	}
}

// What the reference answered, attempt by attempt: the invalid body 400,
// its correction 201 with one order; each malformed key 400 with no order;
// two long keys, two orders.
func TestNewChecksOnTheReferenceWire(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	cfg := ordersConfig(base, pool)
	cfg.Checks = newChecks
	cfg.Options.Rounds = 1
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	statuses := map[idemcheck.Variant]int{}
	for _, a := range res.History.Attempts {
		require.Equal(t, idemcheck.Replied, a.Outcome, "attempt %d", a.ID)
		statuses[a.Variant] = a.Status
	}
	assert.Equal(t, map[idemcheck.Variant]int{
		idemcheck.InvalidBody: 400, idemcheck.Corrected: 201,
		idemcheck.EmptyKey: 400, idemcheck.OverlongKey: 400, idemcheck.ListKey: 400,
		idemcheck.LongKey: 201, idemcheck.LongKeyTwin: 201,
	}, statuses)
	effects := map[string]int64{}
	for _, o := range res.History.Observations {
		effects[o.Check] += o.Effects
	}
	assert.Equal(t, map[string]int64{idemcheck.CheckCorrectedRetry: 1, idemcheck.CheckKeySyntax: 2}, effects)
	assert.Empty(t, res.Report.Anomalies)
}

// The policy decides: where rejected requests are saved, the variant that
// saves them is right (its 422 is the mismatch status) and the reference,
// which executes the correction, is not.
func TestCorrectedRetryFollowsSaveRejected(t *testing.T) {
	for v, want := range map[orders.Variant]map[idemcheck.Kind]int{
		orders.SavesValidationErrors: {},
		orders.Reference:             {idemcheck.ReplayMismatch: 2},
	} {
		t.Run(string(v), func(t *testing.T) {
			base, pool, _ := serveOrders(t, v)
			cfg := ordersConfig(base, pool)
			cfg.Checks = []string{idemcheck.CheckCorrectedRetry}
			cfg.Options.Rounds = 2
			cfg.Policy.SaveRejected = true
			res, err := certify.Run(context.Background(), cfg)
			require.NoError(t, err)
			assert.Equal(t, want, kindsOf(res.Report))
		})
	}
}

// An invalid body the target accepts is no rejection: nothing is judged
// (the lead's verdict logic makes the check inconclusive from the same
// history), and the executed body is no duplicate.
func TestCorrectedRetryWithAnAcceptedInvalidBody(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	cfg := ordersConfig(base, pool)
	cfg.Checks = []string{idemcheck.CheckCorrectedRetry}
	cfg.Options.Rounds = 1
	accepted := idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":12}`)
	cfg.Endpoint.InvalidBody = &accepted
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, res.History.Attempts, 2)
	assert.Equal(t, 201, res.History.Attempts[0].Status)
	assert.Equal(t, 422, res.History.Attempts[1].Status, "the key belongs to the accepted body")
	assert.Empty(t, res.Report.Anomalies)
}

// keySyntaxEffects is what a key-syntax intent may leave: none for the
// malformed keys, two for the two long keys.
func keySyntaxEffects(h *idemcheck.History, intent string) int64 {
	for _, a := range h.Attempts {
		if a.Intent == intent && a.Variant == idemcheck.LongKey {
			return 2
		}
	}
	return 0
}
