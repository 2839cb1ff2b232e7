package assert

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// A burst answered 202 (accepted, effect pending) by a service whose
// worker writes the effect later.
func acceptedBurst(b *histBuilder, effects int64) string {
	return b.intent(burst, effects,
		`1 0-5 202 {"paymentId":"A","status":"pending"}`,
		`1 0-1 409 {"title":"in progress"}`,
		`1 1-7 202 {"paymentId":"A","status":"pending"} replayed`,
	)
}

func settled(b *histBuilder, id string, s idemcheck.Settle, at time.Duration) {
	for i := range b.h.Observations {
		if b.h.Observations[i].Intent == id {
			b.h.Observations[i].Settle = &s
			b.h.Observations[i].At = t0.Add(at)
		}
	}
}

// An accepted reply whose effect was counted at the reply, before any
// worker could write it, is not a lost effect: the round is undecided.
func TestAcceptedCountedAtReplyIsNotLost(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	acceptedBurst(b, 0)
	assert.Empty(t, Check(&b.h))
	r := Report(&b.h)
	require.Len(t, r.Checks, 1)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, "accepted, effect pending")
	assert.Contains(t, r.Checks[0].Reason, "Options.Settle")

	// The same reply with a created status is a lost effect.
	p := idemcheck.IETF()
	p.AcceptedStatuses = nil
	b = newHist(t, p, burst)
	acceptedBurst(b, 0)
	assert.Equal(t, []idemcheck.Kind{idemcheck.LostEffect}, kinds(Check(&b.h)))
}

// A count still changing at the settle bound leaves its round undecided
// with the reason, never lost; once settled short, the effect is lost.
func TestUnsettledIsInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	id := acceptedBurst(b, 0)
	settled(b, id, idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 2 * time.Second, Polls: 9, Changes: 3, First: 0}, time.Second)
	assert.Empty(t, Check(&b.h))
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, "still changing when the settle bound ran out")
	assert.NotEqual(t, idemcheck.Fail, r.Verdict)

	b = newHist(t, idemcheck.IETF(), burst)
	id = acceptedBurst(b, 0)
	settled(b, id, idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 500 * time.Millisecond, Polls: 3, Settled: true}, time.Second)
	assert.Equal(t, []idemcheck.Kind{idemcheck.LostEffect}, kinds(Check(&b.h)))

	// Awaited to the bound and still no effect: pending or lost, and the
	// count cannot tell which.
	b = newHist(t, idemcheck.IETF(), burst)
	id = acceptedBurst(b, 0)
	settled(b, id, idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 2 * time.Second, Polls: 10, Awaited: true}, time.Second)
	assert.Empty(t, Check(&b.h))
	r = Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, "no effect had appeared when the settle bound ran out (2s, 10 polls)")

	// Settled at one: a pass.
	b = newHist(t, idemcheck.IETF(), burst)
	id = acceptedBurst(b, 1)
	settled(b, id, idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 800 * time.Millisecond, Polls: 5, Changes: 1, Settled: true}, time.Second)
	assert.Empty(t, Check(&b.h))
	r = Report(&b.h)
	assert.Equal(t, idemcheck.Pass, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Proof, "effects counted once settled in 1 of 1 rounds (the longest wait 800ms, 5 polls at most)")
}

// Counted again after the last check, an intent with more effects than it
// was judged with (and than it may have) failed late.
func TestLateDuplicateEffect(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	id := acceptedBurst(b, 1)
	settled(b, id, idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 800 * time.Millisecond, Polls: 5, Changes: 1, Settled: true}, time.Second)
	b.h.Observations = append(b.h.Observations, idemcheck.Observation{Intent: id, Check: burst, Effects: 2, Recount: true,
		Query: "SELECT count(*) FROM payments WHERE key = $1", Args: []string{"key-1"}, At: t0.Add(3 * time.Second)})
	as := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.LateDuplicateEffect}, kinds(as))
	a := as[0]
	assert.Equal(t, idemcheck.FailureFinding, a.Class)
	assert.Equal(t, burst, a.Check)
	assert.EqualValues(t, 1, a.Observed["effects"])
	assert.EqualValues(t, 2, a.Observed["late_effects"])
	assert.Equal(t, t0.Add(time.Second), a.Observed["effects_at"])
	assert.Equal(t, t0.Add(3*time.Second), a.Observed["late_at"])
	assert.Contains(t, a.Explanation, "2s later")
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	assert.Equal(t, idemcheck.Fail, r.Checks[0].Status)

	// The same recount as the judged count is nothing; an effect that
	// landed late but is the only one is no duplicate either.
	b.h.Observations[len(b.h.Observations)-1].Effects = 1
	assert.Empty(t, Check(&b.h))
	b = newHist(t, idemcheck.IETF(), burst)
	id = acceptedBurst(b, 0)
	b.h.Observations = append(b.h.Observations, idemcheck.Observation{Intent: id, Check: burst, Effects: 1, Recount: true})
	assert.Empty(t, Check(&b.h))
	// The recount is not the count the intent is judged by.
	assert.EqualValues(t, 0, b.h.ObservationsByIntent()[id].Effects)
}

// An intent whose accepted operations were followed on their status
// monitors: one that failed owes no effect (undecided, never lost); one
// still pending at the bound is undecided with the state it gave; one
// that finished with no effect counted is a lost effect.
func TestOperationsDecideWhatIsOwed(t *testing.T) {
	ops := func(over, state string) idemcheck.Settle {
		return idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: time.Second, Polls: 4, Settled: over != "", Awaited: true,
			Operations: []idemcheck.Operation{{Attempt: 1, URL: "/payments/A", State: state, Polls: 4, Over: over}}}
	}
	b := newHist(t, idemcheck.IETF(), burst)
	settled(b, acceptedBurst(b, 0), ops(idemcheck.OperationFailed, "failed"), time.Second)
	assert.Empty(t, Check(&b.h))
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, `every accepted operation of the intent failed (the status monitor of attempt 1 said "failed")`)

	b = newHist(t, idemcheck.IETF(), burst)
	settled(b, acceptedBurst(b, 0), ops("", "queued"), time.Second)
	assert.Empty(t, Check(&b.h))
	r = Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, `(GET /payments/A) still said "queued" after 4 reads`)

	b = newHist(t, idemcheck.IETF(), burst)
	settled(b, acceptedBurst(b, 0), ops(idemcheck.OperationDone, "succeeded"), time.Second)
	assert.Equal(t, []idemcheck.Kind{idemcheck.LostEffect}, kinds(Check(&b.h)))
}

// Two keys accepted and one effect at the bound: undecided, naming the
// keys and what had appeared, never lost.
func TestAwaitedEffectsPerKeyAtTheBound(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	settled(b, acceptedBurst(b, 1), idemcheck.Settle{Bound: 2 * time.Second, Quiet: 500 * time.Millisecond, Waited: 2 * time.Second, Polls: 9,
		Changes: 1, Awaited: true, Await: 2}, time.Second)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Reason, "answered accepted under 2 keys, each an operation owing its effect, and 1 had appeared")
}
