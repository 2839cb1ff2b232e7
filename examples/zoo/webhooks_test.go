package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// The flaky reference answers 503 to the first delivery of about half its
// events: a consumer asking for redelivery, as senders expect. Certified
// with every check, several times, it is clean every time, and the
// history shows why that is no empty pass: deliveries were refused with
// 503, and redelivered until acknowledged. It runs once in make test
// (IDEMCHECK_ZOO_RUNS for more; TestReferencesAreClean certifies it too).
func TestFlakyReferenceIsCleanUnderRedelivery(t *testing.T) {
	b := bins(t)
	e, ok := zoo.Lookup("webhooks", "flaky-reference")
	require.True(t, ok)
	require.True(t, e.Reference())
	dsn := pgtest.DSN(t)
	for run := 1; run <= referenceRuns(t); run++ {
		res, err := b.Certify(context.Background(), e, zoo.Config{Options: zoo.Options(), DSN: dsn})
		require.NoError(t, err, "run %d", run)
		for _, a := range res.Report.Anomalies {
			t.Errorf("run %d: %s in %s: %s", run, a.Kind, a.Check, a.Explanation)
		}
		// Clean means proven too: a 503 to a fresh event is the consumer's
		// "not now", never taken for a target that did not recover.
		for _, c := range res.Report.Checks {
			if c.Status == idemcheck.Inconclusive {
				t.Errorf("run %d: %s inconclusive: %s", run, c.Name, c.Reason)
			}
		}
		refused, ackedRedeliveries := 0, 0
		for _, a := range res.History.Attempts {
			if a.Outcome != idemcheck.Replied {
				continue
			}
			if a.Status == 503 {
				refused++
			}
			if a.Redelivery > 0 && a.Status == 200 {
				ackedRedeliveries++
			}
		}
		// About half of some 25 events are refused: none at all would
		// mean the flaky path was never taken (odds about 1 in 30 million).
		assert.Positive(t, refused, "run %d: no delivery was refused with 503", run)
		assert.Positive(t, ackedRedeliveries, "run %d: no redelivery was acknowledged", run)
		t.Logf("run %d: %d attempts, %d refused with 503, %d redeliveries acknowledged", run, len(res.History.Attempts), refused, ackedRedeliveries)
	}
}

// The buggy consumers are still caught under the sender's redelivery:
// dedupe-apart by its failing first delivery (deterministic), and
// check-then-insert by a race, so with enough bursts (10 of 16 copies)
// that a loaded machine cannot hide it.
func TestBuggyConsumersAreCaughtUnderRedelivery(t *testing.T) {
	b := bins(t)
	o := zoo.Options()
	o.Rounds, o.Redeliveries = 10, 16
	for _, name := range []string{"dedupe-apart", "check-then-insert"} {
		t.Run(name, func(t *testing.T) {
			e, ok := zoo.Lookup("webhooks", name)
			require.True(t, ok)
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: []string{e.Check}, Options: o, DSN: pgtest.DSN(t)})
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", e.Name(), e.Anomaly, e.Check, row.Found)
		})
	}
}

// An effect query keyed by the event id, as a consumer that stores event
// ids is naturally counted, states its grain: it runs once for every key
// an intent sent, and the check judges their sum. distinct-keys delivers
// two events (two keys) for one intent: counted by the first key alone, a
// correct consumer would be told one of its acknowledged events left
// nothing. The reference passes, every key's count is in the history, and
// the twin that runs an event twice is still caught.
func TestEffectQueryByEventID(t *testing.T) {
	b := bins(t)
	byEvent := func(c *certify.Config) {
		c.EffectSQL = "SELECT count(*) FROM ledger WHERE event_id = $1"
		c.EffectArgs = []idemcheck.Template{idemcheck.MustTemplate("{{key}}")}
	}
	dsn := pgtest.DSN(t)
	ref, ok := zoo.Lookup("webhooks", "reference")
	require.True(t, ok)
	res, err := b.Certify(context.Background(), ref, zoo.Config{
		Checks:  []string{idemcheck.CheckDistinctKeys, idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay},
		Options: zoo.Options(), DSN: dsn, Adjust: byEvent,
	})
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	perKey := 0
	for _, o := range res.History.Observations {
		if o.Check != idemcheck.CheckDistinctKeys {
			continue
		}
		require.Len(t, o.Keys, 2, "distinct-keys sent two keys in intent %s", o.Intent)
		assert.Equal(t, o.Keys[0].Effects+o.Keys[1].Effects, o.Effects)
		assert.Equal(t, int64(2), o.Effects, "two events, one ledger row each")
		perKey++
	}
	assert.Positive(t, perKey, "distinct-keys counted its intents key by key")

	bug, ok := zoo.Lookup("webhooks", "check-then-insert")
	require.True(t, ok)
	o := zoo.Options()
	o.Rounds, o.Redeliveries = 10, 16
	res, err = b.Certify(context.Background(), bug, zoo.Config{Checks: []string{bug.Check}, Options: o, DSN: pgtest.DSN(t), Adjust: byEvent})
	require.NoError(t, err)
	row := zoo.NewRow(bug, res.Report)
	assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", bug.Name(), bug.Anomaly, bug.Check, row.Found)
}
