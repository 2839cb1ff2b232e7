package assert

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// Effects that land after the reply: an intent answered 202 and counted
// at the reply without its effect is pending, not lost; counted again
// once the settle bound had passed (a recount carrying the count it was
// judged by), its effect found, it is pending no more, and an effect
// more than it was judged with, and more than one, is a late duplicate,
// apart from the duplicates, with both counts and their times. The
// verdict fails on a late duplicate, and is inconclusive, with the
// reason, while an effect may still be pending.
func TestSoakTallyLateDuplicates(t *testing.T) {
	p := idemcheck.IETF()
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	later := at.Add(12 * time.Second)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: p}}
	add := func(intent string, status int, effects, recount int64) {
		h.Attempts = append(h.Attempts, soakAttempt(intent, 1, status, false))
		accepted := p.Accepted(status)
		h.Observations = append(h.Observations, idemcheck.Observation{Intent: intent, Check: idemcheck.CheckSoak, Effects: effects, At: at, Accepted: accepted})
		if recount >= 0 {
			judged := effects
			h.Recounts = append(h.Recounts, idemcheck.Observation{Intent: intent, Check: idemcheck.CheckSoak, Effects: recount, At: later, Accepted: accepted,
				Recount: true, Judged: &judged, JudgedAt: at, Query: "SELECT count(*) FROM payments WHERE customer_id = $1", Args: []string{intent}})
		}
	}
	add("landed", 202, 0, 1)   // pending at the reply, its effect found later
	add("done", 202, 1, 1)     // its effect there at the reply, and no more
	add("late", 202, 1, 2)     // a second effect after it was judged
	add("late-0", 202, 0, 2)   // both effects after the reply
	add("synced", 201, 1, 1)   // a synchronous API's: nothing late
	add("dup", 201, 2, 2)      // a duplicate already: not late as well
	add("pending", 202, 0, 0)  // still nothing after the bound
	add("refused", 503, 0, -1) // promised nothing, not counted again

	r := Soak(h)
	assert.EqualValues(t, 8, r.Counted)
	assert.EqualValues(t, 7, r.Recounted)
	assert.EqualValues(t, 1, r.Duplicates, "only dup was a duplicate when judged")
	assert.EqualValues(t, 2, r.LateDuplicates)
	assert.InDelta(t, 2.0/7, r.LateDuplicateRate, 1e-9)
	assert.Zero(t, r.Lost, "an accepted intent counted at the reply is never lost")
	assert.EqualValues(t, 1, r.Pending, "only pending is still without its effect")
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))
	assert.Empty(t, SoakReason(r), "a failure needs no reason")

	require.Len(t, r.Anomalies, 2)
	a := r.Anomalies[0]
	assert.Equal(t, idemcheck.LateDuplicateEffect, a.Kind)
	assert.Equal(t, idemcheck.CheckSoak, a.Check)
	assert.Equal(t, "late", a.Intent)
	assert.Equal(t, map[string]any{"effects": int64(1), "effects_at": at, "late_effects": int64(2), "late_at": later,
		"query": "SELECT count(*) FROM payments WHERE customer_id = $1", "args": []string{"late"}}, a.Observed)
	assert.Contains(t, a.Explanation, "judged at 1")
	assert.Contains(t, a.Explanation, "12s later")
	assert.Contains(t, a.Explanation, "finds 2 (SELECT count(*) FROM payments WHERE customer_id = $1 with late)")
	assert.Equal(t, "late-0", r.Anomalies[1].Intent)

	// The same records one at a time, as a soak streams them, give the
	// same figures; and no late duplicate, one pending effect: the soak
	// is inconclusive, not failed, and says why.
	tally := &SoakTally{Policy: p}
	for _, a := range h.Attempts {
		tally.Attempt(a)
	}
	for _, o := range h.Observations {
		tally.Observation(o)
	}
	for _, o := range h.Recounts {
		tally.Observation(o)
	}
	assert.Equal(t, r, tally.Result(idemcheck.SoakResult{}))
	r.LateDuplicates, r.Duplicates, r.Anomalies = 0, 0, nil
	r.Intents, r.Succeeded = 8, 7
	assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r))
	assert.Contains(t, SoakReason(r), "1 intent answered with an accepted status (effect pending) still had no effect when counted again")

	// Only the first MaxSoakAnomalies late duplicates keep their evidence.
	many := &SoakTally{Policy: p}
	for i := range idemcheck.MaxSoakAnomalies + 5 {
		one := int64(1)
		many.Observation(idemcheck.Observation{Intent: fmt.Sprint("i", i), Effects: 2, Recount: true, Judged: &one})
	}
	mr := many.Result(idemcheck.SoakResult{})
	assert.EqualValues(t, idemcheck.MaxSoakAnomalies+5, mr.LateDuplicates)
	assert.Len(t, mr.Anomalies, idemcheck.MaxSoakAnomalies)
}

// Counted at the reply, without a settle bound, an accepted intent with no
// effect is pending: inconclusive, naming the setting that waits for it.
// Counted once settled, a count still changing at the bound is not judged
// (unless it is a duplicate already), a settled zero is lost, and the
// soak's settling is summed up from the counts.
func TestSoakTallySettled(t *testing.T) {
	p := idemcheck.IETF()
	tally := func(obs ...idemcheck.Observation) idemcheck.SoakResult {
		st := &SoakTally{Policy: p}
		for _, o := range obs {
			st.Attempt(soakAttempt(o.Intent, 1, 202, false))
			st.Observation(o)
		}
		return st.Result(idemcheck.SoakResult{})
	}
	r := tally(idemcheck.Observation{Intent: "a", Effects: 0, Accepted: true}, idemcheck.Observation{Intent: "b", Effects: 1, Accepted: true})
	assert.EqualValues(t, 1, r.Pending)
	assert.Zero(t, r.Lost)
	assert.Nil(t, r.Settle)
	assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r))
	assert.Contains(t, SoakReason(r), "right after the reply")
	assert.Contains(t, SoakReason(r), "count effects once they settle (Settle)")
	assert.Contains(t, SoakReasonIn(r, Words{"Settle": {Name: "--settle"}}), "(--settle)")

	settle := func(effects int64, settled bool, polls int, waited time.Duration) idemcheck.Observation {
		return idemcheck.Observation{Effects: effects, Accepted: true, Settle: &idemcheck.Settle{Bound: 10 * time.Second, Quiet: time.Second,
			Polls: polls, Waited: waited, Settled: settled, Awaited: true}}
	}
	named := func(name string, o idemcheck.Observation) idemcheck.Observation { o.Intent = name; return o }
	r = tally(named("ok", settle(1, true, 3, 2*time.Second)), named("ok2", settle(1, true, 3, 2100*time.Millisecond)))
	assert.Equal(t, &idemcheck.SoakSettle{Bound: 10 * time.Second, Quiet: time.Second, Passes: 3, Waited: 2100 * time.Millisecond, Settled: true}, r.Settle)
	assert.Equal(t, idemcheck.Pass, SoakVerdict(r))

	r = tally(named("moving", settle(1, false, 9, 9*time.Second)), named("awaited", settle(0, false, 9, 9*time.Second)), named("dup", settle(2, false, 9, 9*time.Second)))
	assert.EqualValues(t, 1, r.Unsettled)
	assert.EqualValues(t, 1, r.Pending)
	assert.EqualValues(t, 1, r.Duplicates, "a duplicate counted is one, settled or not")
	assert.False(t, r.Settle.Settled)
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))
	r.Duplicates, r.Intents, r.Succeeded = 0, 3, 3
	assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r))
	reason := SoakReason(r)
	assert.Contains(t, reason, "still had no effect when the settle bound (10s) ran out")
	assert.Contains(t, reason, "the effect counts of 1 intent were still changing when the settle bound ran out (10s, 9 passes over 9s, quiet period 1s)")
	assert.NotContains(t, reason, "lost:")

	r = tally(named("gone", settle(0, true, 3, 2*time.Second)))
	assert.EqualValues(t, 1, r.Lost, "settled at zero: the effect is lost")
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))
}

// Counted once settled with their status monitors followed, intents are
// judged as a certification judges them: a monitor still pending, or
// unreadable, at the bound leaves its intent unjudged (inconclusive,
// naming the monitor), never lost, whatever its count short of a
// duplicate; every operation failed owes no effect, and such intents do
// not count towards the success floor; done and short is a lost effect;
// a reply that named no monitor is judged by its count alone.
func TestSoakTallyOperations(t *testing.T) {
	p := idemcheck.IETF()
	tally := func(obs ...idemcheck.Observation) idemcheck.SoakResult {
		st := &SoakTally{Policy: p}
		for _, o := range obs {
			st.Attempt(soakAttempt(o.Intent, 1, 202, false))
			st.Observation(o)
		}
		return st.Result(idemcheck.SoakResult{})
	}
	op := func(name string, effects int64, over, state, why string) idemcheck.Observation {
		o := idemcheck.Operation{Attempt: 1, URL: "/ops/" + name, State: state, Polls: 3, Over: over, Error: why}
		if why != "" && state == "" {
			o.URL = ""
		}
		return idemcheck.Observation{Intent: name, Effects: effects, Accepted: true, Settle: &idemcheck.Settle{Bound: 3 * time.Second, Quiet: time.Second,
			Polls: 3, Settled: over != "" || o.URL == "" && effects > 0, Awaited: true, Operations: []idemcheck.Operation{o}}}
	}
	done := func(name string, effects int64) idemcheck.Observation {
		return op(name, effects, idemcheck.OperationDone, "succeeded", "")
	}

	r := tally(done("a", 1), done("b", 1), op("c", 1, "", "", "no status monitor: the accepted reply has no Location header"))
	assert.Equal(t, &idemcheck.SoakOperations{Monitors: 2, Reads: 9, Done: 2, Unnamed: 1}, r.Operations)
	assert.Equal(t, idemcheck.Pass, SoakVerdict(r))

	r = tally(done("a", 1), op("p", 0, "", "queued", ""), op("q", 1, "", "queued", ""), op("u", 0, "", "", "the status monitor answered 503, not 2xx"))
	assert.EqualValues(t, 2, r.Operations.Unjudged, "p and q; u named no monitor and is awaited as without one")
	assert.EqualValues(t, 1, r.Pending, "u")
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Unsettled)
	assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r))

	r = tally(done("a", 1), op("p", 0, "", "queued", ""), op("r", 0, "", "", ""))
	assert.EqualValues(t, 2, r.Operations.Unjudged)
	reason := SoakReason(r)
	assert.Contains(t, reason, "the status monitors of 2 intents still said their operation was pending, or could not be read, when the settle bound ran out")
	assert.Contains(t, reason, `the first, intent p: the status monitor of attempt 1 (GET /ops/p) still said "queued" after 3 reads`)

	failed := func(name string, effects int64) idemcheck.Observation {
		return op(name, effects, idemcheck.OperationFailed, "failed", "")
	}
	r = tally(done("a", 1), failed("f", 0), failed("g", 2))
	assert.EqualValues(t, 1, r.Operations.OwedNothing)
	assert.EqualValues(t, 1, r.Duplicates, "a failed operation's second effect is a duplicate still")
	assert.Zero(t, r.Lost)
	r = tally(done("a", 1), done("b", 1), failed("f", 0))
	assert.Equal(t, idemcheck.Pass, SoakVerdict(r), "2 of 3 owed their effect and had it")
	r = tally(done("a", 1), failed("f", 0), failed("g", 0), failed("h", 0))
	assert.Zero(t, r.Lost)
	assert.Equal(t, idemcheck.Inconclusive, SoakVerdict(r), "3 of 4 owed nothing: under the floor")
	assert.Contains(t, SoakReason(r), "only 1 of 4 intents were answered with a success the policy names whose operation did not fail (25.0%")
	assert.Contains(t, SoakReason(r), "the status monitors of 3 more said their operation failed, so the API owed them no effect")

	r = tally(done("a", 1), done("short", 0))
	assert.EqualValues(t, 1, r.Lost, "done and short")
	assert.Equal(t, idemcheck.Fail, SoakVerdict(r))
}
