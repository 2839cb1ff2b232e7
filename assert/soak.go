package assert

import "github.com/idemcheck/idemcheck"

// SoakTally counts a soak from its history records as they are made:
// intents, attempts, replies cut and retried, retries answered as replays,
// and, from each intent's observation, duplicated and lost effects. It
// needs no whole history, so a soak of millions of intents is judged
// without one in memory; Soak does the same over a whole history, so a
// soak's history checked offline gives the same figures.
//
// A soak sends each intent's first attempt (step 1) and, when that got no
// reply, one retry with the same key (step 2); its effects are counted
// after its attempts, so every intent's attempts come before its
// observation, as in every history the harness writes.
//
// It remembers only the intents that were promised nothing yet (no
// attempt answered with a success): memory follows the failures, not the
// load. It is not safe for concurrent use: the soak records one record at
// a time.
type SoakTally struct {
	Policy idemcheck.Policy

	intents, attempts, cut, unresolved, replayed int64
	counted, duplicates, lost                    int64
	// unpromised are the intents none of whose attempts so far was
	// answered with a success.
	unpromised map[string]bool
}

// Attempt counts one attempt.
func (t *SoakTally) Attempt(a idemcheck.Attempt) {
	t.attempts++
	if a.Step <= 1 {
		t.intents++
		if a.Outcome != idemcheck.Replied {
			t.cut++
		}
	} else {
		switch {
		case a.Outcome != idemcheck.Replied:
			t.unresolved++
		case t.Policy.Replay(a.Status) && (t.Policy.ReplayHeader == "" || idemcheck.HeaderTrue(a.RespHeader.Get(t.Policy.ReplayHeader))):
			// The cut first attempt had been carried out: its retry was
			// recognised and answered with the saved result.
			t.replayed++
		}
	}
	if t.unpromised == nil {
		t.unpromised = map[string]bool{}
	}
	if Promised(t.Policy, a) {
		delete(t.unpromised, a.Intent)
	} else if a.Step <= 1 {
		t.unpromised[a.Intent] = true
	}
}

// Observation counts one intent's effects: more than one is a duplicate;
// none is lost only when one of the intent's attempts was answered with a
// success, as for the checker's lost-effect (an intent whose every answer
// was an error was promised nothing).
func (t *SoakTally) Observation(o idemcheck.Observation) {
	t.counted++
	promised := !t.unpromised[o.Intent]
	delete(t.unpromised, o.Intent)
	switch {
	case o.Effects > 1:
		t.duplicates++
	case o.Effects == 0 && promised:
		t.lost++
	}
}

// Result returns load, the load generator's figures (rates, latencies,
// success share, duration), with the tally's counts and the figures that
// follow from them.
func (t *SoakTally) Result(load idemcheck.SoakResult) idemcheck.SoakResult {
	r := load
	r.Intents, r.Attempts, r.Cut, r.Unresolved = t.intents, t.attempts, t.cut, t.unresolved
	r.Counted, r.Duplicates, r.Lost = t.counted, t.duplicates, t.lost
	r.TimeoutRate, r.SucceededShare, r.DuplicatesPerMillion = 0, 0, 0
	if r.Intents > 0 {
		r.TimeoutRate = float64(r.Cut) / float64(r.Intents)
	}
	if r.Cut > 0 {
		r.SucceededShare = float64(t.replayed) / float64(r.Cut)
	}
	if r.Counted > 0 {
		r.DuplicatesPerMillion = float64(r.Duplicates) * 1e6 / float64(r.Counted)
	}
	return r
}

// Promised reports whether a told its client that the intent's action was
// done: a reply with one of the policy's success statuses. Such an
// intent's effect must exist.
func Promised(p idemcheck.Policy, a idemcheck.Attempt) bool {
	return a.Outcome == idemcheck.Replied && p.Replay(a.Status)
}

// Soak tallies a whole soak history (see SoakTally) with its own policy.
// Load figures that only the load generator measured (rates, latencies)
// are left zero.
func Soak(h *idemcheck.History) idemcheck.SoakResult {
	t := &SoakTally{Policy: h.Run.Policy}
	for _, a := range h.Attempts {
		t.Attempt(a)
	}
	for _, o := range h.Observations {
		t.Observation(o)
	}
	return t.Result(idemcheck.SoakResult{})
}

// SoakVerdict is a soak's verdict: it fails on any duplicated or lost
// effect, and passes otherwise.
func SoakVerdict(r idemcheck.SoakResult) idemcheck.Status {
	if r.Duplicates > 0 || r.Lost > 0 {
		return idemcheck.Fail
	}
	return idemcheck.Pass
}
