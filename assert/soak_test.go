package assert

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

// soakAttempt is one soak attempt: step 1 the first, step 2 the retry of a
// first attempt that got no reply; status 0 means no reply.
func soakAttempt(intent string, step, status int, replayed bool) idemcheck.Attempt {
	a := idemcheck.Attempt{Intent: intent, Check: idemcheck.CheckSoak, Round: 1, Step: step, Outcome: idemcheck.Unknown}
	if status != 0 {
		a.Outcome, a.Status = idemcheck.Replied, status
		if replayed {
			a.RespHeader = http.Header{"Idempotent-Replayed": {"true"}}
		}
	}
	return a
}

// The soak's rules, intent by intent: more than one effect is a duplicate;
// no effect is lost only when a success was answered; the figures follow.
func TestSoakTally(t *testing.T) {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	h := &idemcheck.History{Run: idemcheck.Run{Policy: p}}
	add := func(intent string, effects int64, as ...idemcheck.Attempt) {
		h.Attempts = append(h.Attempts, as...)
		h.Observations = append(h.Observations, idemcheck.Observation{Intent: intent, Check: idemcheck.CheckSoak, Effects: effects})
	}
	add("clean", 1, soakAttempt("clean", 1, 201, false))
	// Cut, then replayed: the server had carried out the first attempt.
	add("replayed", 1, soakAttempt("replayed", 1, 0, false), soakAttempt("replayed", 2, 201, true))
	// Cut, then executed again: a duplicate, and no replay.
	add("twice", 2, soakAttempt("twice", 1, 0, false), soakAttempt("twice", 2, 201, false))
	// Told 201, nothing in the database: lost.
	add("lost", 0, soakAttempt("lost", 1, 201, false))
	// Answered 503 only: promised nothing, so no effect is not lost.
	add("refused", 0, soakAttempt("refused", 1, 503, false))
	// Cut, and the retry got no reply either: unresolved, promised nothing.
	add("silent", 0, soakAttempt("silent", 1, 0, false), soakAttempt("silent", 2, 0, false))

	r := Soak(h)
	assert.EqualValues(t, 6, r.Intents)
	assert.EqualValues(t, 9, r.Attempts)
	assert.EqualValues(t, 3, r.Cut)
	assert.EqualValues(t, 1, r.Unresolved)
	assert.EqualValues(t, 6, r.Counted)
	assert.EqualValues(t, 1, r.Duplicates)
	assert.EqualValues(t, 1, r.Lost)
	assert.InDelta(t, 0.5, r.TimeoutRate, 1e-9)
	assert.InDelta(t, 1.0/3, r.SucceededShare, 1e-9, "one of the three cut intents was replayed")
	assert.InDelta(t, 1e6/6, r.DuplicatesPerMillion, 1e-6)
	assert.EqualValues(t, 4, r.Succeeded, "clean, replayed, twice and lost were answered with a success")
	assert.InDelta(t, 2.0/6, r.Success, 1e-9, "two first attempts answered with a success")
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))

	assert.Equal(t, idemcheck.Pass, SoakVerdict(idemcheck.SoakResult{Intents: 10, Counted: 10, Succeeded: 5}))
	// Below the floor of successes, or with none at all, no pass.
	for _, r := range []idemcheck.SoakResult{{Intents: 10, Counted: 10, Succeeded: 4}, {Intents: 10, Counted: 10}, {}} {
		assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r), "%+v", r)
		assert.NotEmpty(t, SoakReason(r))
	}

	// The tally holds in memory only the intents promised nothing so far,
	// until they are observed.
	tally := &SoakTally{Policy: p}
	for _, a := range h.Attempts {
		tally.Attempt(a)
	}
	assert.Equal(t, map[string]bool{"refused": true, "silent": true}, tally.unpromised)
	for _, o := range h.Observations {
		tally.Observation(o)
	}
	assert.Empty(t, tally.unpromised)
}

// Each fault is counted: a fault on single attempts by the first attempts
// that name it, those left without a reply and retried, and those retries
// answered as replays; a fault on a whole link, from the header's plan,
// by every attempt. A planned fault that hit nothing is listed with 0, and
// one the plan did not list is counted after the plan's.
func TestSoakTallyFaults(t *testing.T) {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	h := &idemcheck.History{Run: idemcheck.Run{Policy: p,
		SoakFaults: []string{"cut-reply@0.1", "reset@0.2", "timeout@0.05", "latency:jitter=0,ms=20", "db-latency:ms=5"}}}
	faulted := func(a idemcheck.Attempt, fault string) idemcheck.Attempt {
		a.Fault, a.FaultLinks = fault, []string{idemcheck.LinkClient}
		return a
	}
	h.Attempts = []idemcheck.Attempt{
		soakAttempt("clean", 1, 201, false),
		faulted(soakAttempt("cut", 1, 0, false), "cut-reply"),
		faulted(soakAttempt("reset1", 1, 0, false), "reset"),
		faulted(soakAttempt("reset2", 1, 0, false), "reset"),
		soakAttempt("cut", 2, 201, true),
		soakAttempt("reset1", 2, 201, true),
		soakAttempt("reset2", 2, 0, false), // unresolved
		faulted(soakAttempt("slow", 1, 201, false), "slow-reply:delay=2s"),
	}
	r := Soak(h)
	assert.Equal(t, []idemcheck.SoakFaultResult{
		{Fault: "cut-reply", Link: idemcheck.LinkClient, Share: 0.1, Attempts: 1, Retried: 1, Replayed: 1},
		{Fault: "reset", Link: idemcheck.LinkClient, Share: 0.2, Attempts: 2, Retried: 2, Replayed: 1},
		{Fault: "timeout", Link: idemcheck.LinkClient, Share: 0.05},
		{Fault: "slow-reply:delay=2s", Link: idemcheck.LinkClient, Attempts: 1},
		{Fault: "latency:jitter=0,ms=20", Link: idemcheck.LinkClient, WholeLink: true, Attempts: 8},
		{Fault: "db-latency:ms=5", Link: idemcheck.LinkDB, WholeLink: true, Attempts: 8},
	}, r.Faults)
	assert.EqualValues(t, 3, r.Cut, "every first attempt without a reply, whatever its fault")
	assert.False(t, r.CutsOnly())

	// With cut-reply alone (and a whole link's fault), the first attempts
	// without a reply are the cut replies, as before faults were many.
	h.Run.SoakFaults = []string{"cut-reply@0.1", "latency:jitter=0,ms=20"}
	h.Attempts = h.Attempts[:2]
	h.Attempts = append(h.Attempts, soakAttempt("cut", 2, 201, true))
	r = Soak(h)
	assert.True(t, r.CutsOnly())
	assert.Len(t, r.Faults, 2)
	assert.Nil(t, Soak(&idemcheck.History{}).Faults, "a clean soak lists no fault")
}
