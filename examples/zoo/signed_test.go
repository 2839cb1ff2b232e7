package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A consumer that verifies Standard Webhooks signatures (5-minute
// tolerance) is certified as any other: idemcheck signs every attempt,
// each redelivery and each copy of a burst with a fresh timestamp. The
// signed reference is clean and proven, every check; the signed variants
// are caught as their unsigned twins are, and the one that checks the
// signature after its work by the signature check.
func TestSignedConsumers(t *testing.T) {
	b := bins(t)
	ref, ok := zoo.Lookup("webhooks-signed", "reference")
	require.True(t, ok)
	require.True(t, ref.Signed)
	dsn := pgtest.DSN(t)
	o := zoo.Options()
	o.BurstRounds, o.Rounds, o.FaultRounds = 2, 1, 1
	for run := 1; run <= 3; run++ {
		res, err := b.Certify(context.Background(), ref, zoo.Config{Options: o, DSN: dsn})
		require.NoError(t, err, "run %d", run)
		for _, a := range res.Report.Anomalies {
			t.Errorf("run %d: %s in %s: %s", run, a.Kind, a.Check, a.Explanation)
		}
		for _, c := range res.Report.Checks {
			if c.Status == idemcheck.Inconclusive {
				t.Errorf("run %d: %s inconclusive: %s", run, c.Name, c.Reason)
			}
		}
		// Signed as the consumer verifies: never refused for its signature.
		acked, refused := 0, 0
		for _, a := range res.History.Attempts {
			switch {
			case a.Outcome != idemcheck.Replied:
			case a.Variant == idemcheck.BadSignature || a.Variant == idemcheck.StaleSignature:
				// The signature check's forged and stale deliveries,
				// refused on purpose.
				assert.Equal(t, 401, a.Status, "run %d: attempt %d (%s)", run, a.ID, a.Variant)
			case a.Status == 401:
				refused++
			case a.Status == 200:
				acked++
			}
		}
		assert.Zero(t, refused, "run %d: deliveries refused for their signature", run)
		for _, c := range res.Report.Checks {
			if c.Name == idemcheck.CheckSignature {
				assert.Equal(t, idemcheck.Pass, c.Status, "run %d: %s", run, c.Reason)
			}
		}
		assert.Positive(t, acked, "run %d", run)
	}
	for _, e := range zoo.Entries() {
		if !e.Signed || e.Reference() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: []string{e.Check}, Options: zoo.Options(), DSN: pgtest.DSN(t)})
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", e.Name(), e.Anomaly, e.Check, row.Found)
		})
	}
}
