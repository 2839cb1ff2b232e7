package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A consumer that verifies signatures (5-minute tolerance where the
// scheme signs a timestamp) is certified as any other: idemcheck signs
// every attempt, each redelivery and each copy of a burst with a fresh
// timestamp. The signed reference is clean and proven, every check, under
// every preset idemcheck signs with: three runs under standard-webhooks,
// one under each other scheme (referenceRuns; make test certifies those
// here only, not in TestReferencesAreClean too). The signed variants are caught as their
// unsigned twins are, and the one that checks the signature after its
// work by the signature check.
func TestSignedConsumers(t *testing.T) {
	b := bins(t)
	ref, ok := zoo.Lookup("webhooks-signed", "reference")
	require.True(t, ok)
	require.True(t, ref.Signed)
	refs, schemes := []zoo.Entry{ref}, []string{ref.SigningScheme()}
	for _, e := range zoo.Entries() {
		if e.Signed && e.Scheme != "" {
			require.True(t, e.Reference(), "%s: the other presets certify the reference", e.Name())
			refs, schemes = append(refs, e), append(schemes, e.SigningScheme())
		}
	}
	assert.ElementsMatch(t, scenarios.SignSchemes, schemes, "the signed reference under every preset")
	o := zoo.Options()
	o.BurstRounds, o.Rounds, o.FaultRounds = 2, 1, 1
	for _, e := range refs {
		t.Run(e.Name(), func(t *testing.T) {
			runs := referenceRuns(t)
			if e.Scheme == "" {
				runs = max(runs, 3)
			}
			dsn := pgtest.DSN(t)
			for run := 1; run <= runs; run++ {
				signedReferenceRun(t, b, e, zoo.Config{Options: o, DSN: dsn}, run)
			}
		})
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

// signedReferenceRun certifies a signed reference once: no anomaly, no
// check inconclusive, no delivery refused for its signature but the
// signature check's forged and stale ones (none stale where the scheme
// signs no timestamp), and the signature check passed.
func signedReferenceRun(t *testing.T, b *zoo.Bins, e zoo.Entry, c zoo.Config, run int) {
	t.Helper()
	res, err := b.Certify(context.Background(), e, c)
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
	acked, refused, forged, stale := 0, 0, 0, 0
	for _, a := range res.History.Attempts {
		switch {
		case a.Outcome != idemcheck.Replied:
		case a.Variant == idemcheck.BadSignature || a.Variant == idemcheck.StaleSignature:
			// The signature check's forged and stale deliveries,
			// refused on purpose.
			assert.Equal(t, 401, a.Status, "run %d: attempt %d (%s)", run, a.ID, a.Variant)
			if a.Variant == idemcheck.BadSignature {
				forged++
			} else {
				stale++
			}
		case a.Status == 401:
			refused++
		case a.Status == 200:
			acked++
		}
	}
	assert.Zero(t, refused, "run %d: deliveries refused for their signature", run)
	assert.Positive(t, forged, "run %d: forged deliveries sent", run)
	if idemcheck.SignsTime(e.SigningScheme()) {
		assert.Positive(t, stale, "run %d: stale deliveries sent", run)
	} else {
		assert.Zero(t, stale, "run %d: %s signs no timestamp, so nothing can be stale", run, e.SigningScheme())
	}
	signature := false
	for _, c := range res.Report.Checks {
		if c.Name == idemcheck.CheckSignature {
			signature = true
			assert.Equal(t, idemcheck.Pass, c.Status, "run %d: %s", run, c.Reason)
		}
	}
	assert.True(t, signature, "run %d: the signature check ran", run)
	assert.Positive(t, acked, "run %d", run)
	require.NotNil(t, res.History.Run.Target.Signing)
	assert.Equal(t, e.SigningScheme(), res.History.Run.Target.Signing.Scheme, "run %d: signed under the entry's scheme", run)
	t.Logf("run %d: %d attempts, %d acknowledged, %d forged and %d stale refused", run, len(res.History.Attempts), acked, forged, stale)
}
