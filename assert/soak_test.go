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
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))

	assert.Equal(t, idemcheck.Pass, SoakVerdict(idemcheck.SoakResult{Intents: 10, Counted: 10}))

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
