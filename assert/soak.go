package assert

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

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
// Each fault the soak ran under is counted too (SoakResult.Faults): the
// header's plan (Run.SoakFaults, given to Run) lists them, a first
// attempt's Fault says which one hit it, and its retry, the next attempt
// of its intent, whether it was a replay.
//
// Effects that land after the reply (an accepted status, a background
// worker) are judged as a certification judges them (see settle.go): an
// intent answered with an accepted status whose count was taken at the
// reply, or was still changing when the settle bound ran out, is pending,
// never lost; a count taken again once the bound had passed (a recount,
// which carries the count its intent was judged by) that is above it, and
// above one, is a late duplicate. The counts say all of it themselves
// (Observation.Accepted, Settle, Judged), so no intent is remembered for
// them.
//
// It remembers only the intents that were promised nothing yet (no
// attempt answered with a success) and those whose faulted first attempt
// awaits its retry: memory follows the failures, not the load. It is not
// safe for concurrent use: the soak records one record at a time.
type SoakTally struct {
	Policy idemcheck.Policy

	intents, attempts, cut, unresolved, replayed int64
	counted, duplicates, lost                    int64
	// recounted, late and resolved count the recounts, the late
	// duplicates among them, and the pending intents whose effect they
	// found; pending and unsettled the intents whose count could not be
	// judged (SoakResult.Pending, Unsettled).
	recounted, late, resolved int64
	pending, unsettled        int64
	// settle sums up the counts taken once settled; anomalies are the
	// first late duplicates, with their evidence; ops what the status
	// monitors followed said (nil when none was).
	settle    *idemcheck.SoakSettle
	anomalies []idemcheck.Anomaly
	ops       *idemcheck.SoakOperations
	// succeeded counts intents with an attempt answered with a success,
	// firstSucceeded the first attempts so answered.
	succeeded, firstSucceeded int64
	// unpromised are the intents none of whose attempts so far was
	// answered with a success.
	unpromised map[string]bool
	// faults are the soak's faults, the plan's first, and byName finds
	// one; retriedAfter is, for an intent whose faulted first attempt got
	// no reply, that fault, until its retry is counted.
	faults       []*idemcheck.SoakFaultResult
	byName       map[string]*idemcheck.SoakFaultResult
	retriedAfter map[string]*idemcheck.SoakFaultResult
	planned      int // how many of faults the plan listed
	// series counts the same over time.
	series soakSeries
}

// Run reads the soak's header: the faults it ran under (Run.SoakFaults).
func (t *SoakTally) Run(r idemcheck.Run) {
	for _, spec := range r.SoakFaults {
		name, share := spec, 0.0
		if i := strings.LastIndex(spec, "@"); i >= 0 {
			name = spec[:i]
			share, _ = strconv.ParseFloat(spec[i+1:], 64)
		}
		f := t.fault(name, "")
		f.Share, f.WholeLink = share, !strings.Contains(spec, "@")
	}
	t.planned = len(t.faults)
}

// fault returns the counts of the fault called name, added on first use
// on link (its own link when link is "": a name starting "db-" is on the
// database link, as every database-link fault's is).
func (t *SoakTally) fault(name, link string) *idemcheck.SoakFaultResult {
	if f, ok := t.byName[name]; ok {
		return f
	}
	if link == "" {
		link = idemcheck.LinkClient
		if strings.HasPrefix(name, "db-") {
			link = idemcheck.LinkDB
		}
	}
	if t.byName == nil {
		t.byName = map[string]*idemcheck.SoakFaultResult{}
	}
	f := &idemcheck.SoakFaultResult{Fault: name, Link: link}
	t.byName[name] = f
	t.faults = append(t.faults, f)
	return f
}

// Attempt counts one attempt.
func (t *SoakTally) Attempt(a idemcheck.Attempt) {
	t.attempts++
	if a.Step <= 1 {
		t.intents++
		var f *idemcheck.SoakFaultResult
		if a.Fault != "" {
			link := ""
			if len(a.FaultLinks) > 0 {
				link = a.FaultLinks[0]
			}
			f = t.fault(a.Fault, link)
			f.Attempts++
		}
		if a.Outcome != idemcheck.Replied {
			t.cut++
			if f != nil {
				f.Retried++
				if t.retriedAfter == nil {
					t.retriedAfter = map[string]*idemcheck.SoakFaultResult{}
				}
				t.retriedAfter[a.Intent] = f
			}
		}
	} else {
		f := t.retriedAfter[a.Intent]
		delete(t.retriedAfter, a.Intent)
		switch {
		case a.Outcome != idemcheck.Replied:
			t.unresolved++
		case t.Policy.Replay(a.Status) && (t.Policy.ReplayHeader == "" || headerTrue(a.RespHeader.Get(t.Policy.ReplayHeader))):
			// The cut first attempt had been carried out: its retry was
			// recognised and answered with the saved result.
			t.replayed++
			if f != nil {
				f.Replayed++
			}
		}
	}
	if t.unpromised == nil {
		t.unpromised = map[string]bool{}
	}
	if a.Step <= 1 {
		t.series.attempt(a, Promised(t.Policy, a))
	}
	if Promised(t.Policy, a) {
		// An intent is counted once: at its first attempt's success, or
		// at its retry's when the first promised nothing.
		if a.Step <= 1 {
			t.succeeded++
			t.firstSucceeded++
		} else if t.unpromised[a.Intent] {
			t.succeeded++
		}
		delete(t.unpromised, a.Intent)
	} else if a.Step <= 1 {
		t.unpromised[a.Intent] = true
	}
}

// Observation counts one intent's effects: more than one is a duplicate;
// none is lost only when one of the intent's attempts was answered with a
// success, as for the checker's lost-effect (an intent whose every answer
// was an error was promised nothing), and its effect cannot still be
// pending (effectPending). A recount is compared with the count its intent
// was judged by (recount).
func (t *SoakTally) Observation(o idemcheck.Observation) {
	if o.Recount {
		t.recount(o)
		return
	}
	t.counted++
	promised := !t.unpromised[o.Intent]
	delete(t.unpromised, o.Intent)
	if o.Settle != nil {
		t.settled(*o.Settle)
	}
	pendingOp, owedNothing := t.operations(o)
	switch {
	case o.Effects > 1:
		// Effects do not disappear by waiting: a duplicate counted is a
		// duplicate, settled or not.
		t.duplicates++
		t.series.observation(true, false)
	case promised && pendingOp != "":
		// As a certification judges it (operationsPending): the
		// operation is not over, so its effect is not lost yet.
		t.unjudged(o.Intent, pendingOp)
	case o.Effects == 0 && promised && owedNothing:
		t.ops.OwedNothing++
	case o.Effects == 0 && promised && effectPending(o):
		t.pending++
	case o.Effects == 0 && promised:
		t.lost++
		t.series.observation(false, true)
	case promised && o.Unsettled():
		t.unsettled++
	}
}

// operations adds what the status monitors of o's intent said to the
// soak's summary, and says whether one was still pending, or unreadable,
// at the bound (why, as a certification says it), or every one failed,
// so that no effect was owed. A done operation with its effect short is
// neither: it is lost.
func (t *SoakTally) operations(o idemcheck.Observation) (pending string, owedNothing bool) {
	if o.Settle == nil || len(o.Settle.Operations) == 0 {
		return "", false
	}
	if t.ops == nil {
		t.ops = &idemcheck.SoakOperations{}
	}
	failed := 0
	for _, op := range o.Settle.Operations {
		t.ops.Reads += int64(op.Polls)
		switch {
		case op.URL == "":
			t.ops.Unnamed++
			continue
		case op.Over == idemcheck.OperationDone:
			t.ops.Done++
		case op.Over == idemcheck.OperationFailed:
			t.ops.Failed++
			failed++
		default:
			t.ops.Pending++
		}
		t.ops.Monitors++
	}
	why := operationsPending(&o)
	if failed == len(o.Settle.Operations) {
		return "", true
	}
	return why, false
}

// unjudged counts an intent left unjudged by a status monitor not over,
// the first one's reason kept to name it.
func (t *SoakTally) unjudged(intent, why string) {
	t.ops.Unjudged++
	if t.ops.First == "" {
		t.ops.First = fmt.Sprintf("intent %s: %s", intent, why)
	}
}

// operationDone reports whether a status monitor of o's intent said its
// operation finished.
func operationDone(o idemcheck.Observation) bool {
	return o.Settle != nil && slices.ContainsFunc(o.Settle.Operations, func(op idemcheck.Operation) bool { return op.Over == idemcheck.OperationDone })
}

// effectPending reports whether an intent's count of zero may be its
// effect still to come: its count was still changing, or still awaited,
// when the settle bound ran out, or it was answered with an accepted
// status and counted right after the reply, without settling.
func effectPending(o idemcheck.Observation) bool {
	return o.Unsettled() || o.Settle == nil && o.Accepted
}

// settled adds a count taken once settled to the summary of the soak's
// settling: the same bound and quiet period for all, the most passes and
// the longest wait, settled while every count was.
func (t *SoakTally) settled(s idemcheck.Settle) {
	if t.settle == nil {
		t.settle = &idemcheck.SoakSettle{Bound: s.Bound, Quiet: s.Quiet, Settled: true}
	}
	t.settle.Passes = max(t.settle.Passes, s.Polls)
	t.settle.Waited = max(t.settle.Waited, s.Waited)
	t.settle.Settled = t.settle.Settled && s.Settled
}

// recount compares an intent's count taken again, once the settle bound
// had passed since the load's end, with the count it was judged by (the
// recount's Judged): above it, and above one, is a late duplicate. A
// pending intent (accepted, no effect at the reply) whose effect the
// recount finds is pending no more; without one, its status monitor, read
// with the recount, decides as it does after a settle: still pending,
// unjudged; failed, owed nothing; done, lost.
func (t *SoakTally) recount(o idemcheck.Observation) {
	t.recounted++
	var judged int64
	if o.Judged != nil {
		judged = *o.Judged
	}
	pendingOp, owedNothing := t.operations(o)
	if judged == 0 && o.Accepted {
		// Pending when judged: the recount, and the status monitor read
		// with it, tell what became of it.
		switch {
		case o.Effects > 0:
			t.resolved++
		case pendingOp != "":
			t.resolved++
			t.unjudged(o.Intent, pendingOp)
		case owedNothing:
			t.resolved++
			t.ops.OwedNothing++
		case operationDone(o):
			// Done, and no effect once the bound had passed: lost.
			t.resolved++
			t.lost++
		}
	}
	if o.Effects <= judged || o.Effects <= 1 {
		return
	}
	t.late++
	if len(t.anomalies) >= idemcheck.MaxSoakAnomalies {
		return
	}
	after := ""
	if !o.JudgedAt.IsZero() && !o.At.IsZero() {
		after = fmt.Sprintf(" %v later", o.At.Sub(o.JudgedAt).Round(time.Millisecond))
	}
	t.anomalies = append(t.anomalies, idemcheck.Anomaly{
		Kind: idemcheck.LateDuplicateEffect, Check: idemcheck.CheckSoak, Intent: o.Intent, Attempts: []int{},
		Explanation: fmt.Sprintf("the intent's effects were judged at %d (counted as its attempts ended), and counted again%s, once the settle bound had passed since the load's end: "+
			"the effect query finds %d (%s): a second effect appeared after the reply and after it was judged, as a background job run again after its effect committed leaves one.",
			judged, after, o.Effects, effectQueryText(&o)),
		Observed: map[string]any{"effects": judged, "effects_at": o.JudgedAt, "late_effects": o.Effects, "late_at": o.At, "query": o.Query, "args": o.Args},
	})
}

// Result returns load, the load generator's figures (rates, latencies,
// success share, duration), with the tally's counts and the figures that
// follow from them.
func (t *SoakTally) Result(load idemcheck.SoakResult) idemcheck.SoakResult {
	r := load
	r.Intents, r.Attempts, r.Cut, r.Unresolved = t.intents, t.attempts, t.cut, t.unresolved
	r.Counted, r.Duplicates, r.Lost, r.Succeeded = t.counted, t.duplicates, t.lost, t.succeeded
	r.TimeoutRate, r.SucceededShare, r.DuplicatesPerMillion = 0, 0, 0
	if r.Intents > 0 {
		r.TimeoutRate = float64(r.Cut) / float64(r.Intents)
		// vegeta counts every 2xx and 3xx a success; the share and the
		// throughput say the policy's successes instead, so a redirect
		// is not read as an answer.
		success := float64(t.firstSucceeded) / float64(r.Intents)
		if load.Success > 0 {
			r.Throughput = load.Throughput * success / load.Success
		}
		r.Success = success
	}
	if r.Cut > 0 {
		r.SucceededShare = float64(t.replayed) / float64(r.Cut)
	}
	if r.Counted > 0 {
		r.DuplicatesPerMillion = float64(r.Duplicates) * 1e6 / float64(r.Counted)
	}
	r.LateDuplicates, r.Recounted, r.LateDuplicateRate = t.late, t.recounted, 0
	if r.Recounted > 0 {
		r.LateDuplicateRate = float64(r.LateDuplicates) / float64(r.Recounted)
	}
	r.Pending, r.Unsettled = max(t.pending-t.resolved, 0), t.unsettled
	r.Settle, r.Anomalies, r.Operations = nil, slices.Clone(t.anomalies), nil
	if t.settle != nil {
		s := *t.settle
		r.Settle = &s
	}
	if t.ops != nil {
		ops := *t.ops
		r.Operations = &ops
	}
	r.Faults = t.faultResults()
	r.Series = t.series.result()
	return r
}

// faultResults are the faults with their counts: the plan's first, in
// its order, then any fault an attempt named and the plan did not (a
// history written without one), by name; those on single attempts before
// those on a whole link, which acted on every attempt.
func (t *SoakTally) faultResults() []idemcheck.SoakFaultResult {
	if len(t.faults) == 0 {
		return nil
	}
	seen := slices.Clone(t.faults[t.planned:])
	sort.SliceStable(seen, func(i, j int) bool { return seen[i].Fault < seen[j].Fault })
	all := append(slices.Clone(t.faults[:t.planned]), seen...)
	out := make([]idemcheck.SoakFaultResult, 0, len(all))
	for _, whole := range []bool{false, true} {
		for _, f := range all {
			if f.WholeLink == whole {
				c := *f
				if whole {
					c.Attempts = t.attempts
				}
				out = append(out, c)
			}
		}
	}
	return out
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
	t.Run(h.Run)
	for _, a := range h.Attempts {
		t.Attempt(a)
	}
	for _, obs := range [][]idemcheck.Observation{h.Observations, h.Recounts} {
		for _, o := range obs {
			t.Observation(o)
		}
	}
	return t.Result(idemcheck.SoakResult{})
}

// SoakVerdict is a soak's verdict: it fails on any duplicated, late
// duplicated or lost effect; without one, it is inconclusive while some
// intent's effect may still be pending (its status monitor too), or its
// count was still changing at the settle bound, and passes only when at
// least SoakSuccessFloor of its intents were answered with a success
// whose operation did not fail (SoakReason says why not).
func SoakVerdict(r idemcheck.SoakResult) idemcheck.Status {
	if soakFailed(r) {
		return idemcheck.Fail
	}
	if r.Pending > 0 || r.Unsettled > 0 || opsUnjudged(r) > 0 || !enoughSucceeded(r) {
		return idemcheck.Inconclusive
	}
	return idemcheck.Pass
}

func soakFailed(r idemcheck.SoakResult) bool {
	return r.Duplicates > 0 || r.LateDuplicates > 0 || r.Lost > 0
}

// enoughSucceeded: an intent whose status monitor said its operation
// failed was answered with a success, but, as one refused, tested
// nothing of idempotency.
func enoughSucceeded(r idemcheck.SoakResult) bool {
	return r.Intents > 0 && float64(r.Succeeded-owedNothing(r)) >= idemcheck.SoakSuccessFloor*float64(r.Intents)
}

// opsUnjudged and owedNothing are the intents left unjudged by a status
// monitor still pending, and those whose operation failed with no effect.
func opsUnjudged(r idemcheck.SoakResult) int64 {
	if r.Operations == nil {
		return 0
	}
	return r.Operations.Unjudged
}

func owedNothing(r idemcheck.SoakResult) int64 {
	if r.Operations == nil {
		return 0
	}
	return r.Operations.OwedNothing
}

// SoakReason says why a soak with that result is inconclusive, or "",
// naming settings in Go's words.
func SoakReason(r idemcheck.SoakResult) string { return SoakReasonIn(r, nil) }

// SoakReasonIn is SoakReason with the settings it names said in words.
func SoakReasonIn(r idemcheck.SoakResult, words Words) string {
	if soakFailed(r) {
		return ""
	}
	if r.Pending > 0 || r.Unsettled > 0 || opsUnjudged(r) > 0 {
		return unjudged(r, words)
	}
	if enoughSucceeded(r) {
		return ""
	}
	if r.Intents == 0 {
		return "no intent was sent"
	}
	if n := owedNothing(r); n > 0 {
		ok := r.Succeeded - n
		return fmt.Sprintf("only %d of %d intents were answered with a success the policy names whose operation did not fail (%.1f%%, under the floor of %.0f%%): "+
			"the status monitors of %d more said their operation failed, so the API owed them no effect, and the target refused or failed the rest: their idempotency was not tested",
			ok, r.Intents, float64(ok)*100/float64(r.Intents), idemcheck.SoakSuccessFloor*100, n)
	}
	return fmt.Sprintf("only %d of %d intents were answered with a success the policy names (%.1f%%, under the floor of %.0f%%): the target refused or failed the rest, so their idempotency was not tested",
		r.Succeeded, r.Intents, float64(r.Succeeded)*100/float64(r.Intents), idemcheck.SoakSuccessFloor*100)
}

// IsSoak reports whether a history's header is a soak's: its plan is the
// soak check alone.
func IsSoak(r idemcheck.Run) bool {
	return len(r.Checks) == 1 && r.Checks[0].Name == idemcheck.CheckSoak
}

// SoakMerge counts several soak histories as one soak: the shards of a
// soak spread over processes (Run.Shard), or whole soaks of one target
// checked together. Records are given one at a time, as they are read, so
// memory follows the failures, as SoakTally's does, not the number of
// attempts or histories; on the same attempts, the merged counts are those
// of one process (each intent's records are in one history, in order).
//
// Each history's header comes first (Run), and must soak what the first
// one soaked: the same target, policy and effect query, and, for shards,
// the same shard count with each shard once.
type SoakMerge struct {
	tally     SoakTally
	first     *idemcheck.Run
	firstName string
	histories int
	count     int            // shard count of the shards merged; 0 for whole soaks
	shards    map[int]string // shard index -> the input it came from
}

// Run starts the next history, read from the input called name.
func (m *SoakMerge) Run(name string, r idemcheck.Run) error {
	if m.first == nil {
		m.first, m.firstName = &r, name
		m.tally.Policy = r.Policy
		m.shards = map[int]string{}
	} else {
		f := m.first
		switch {
		case r.Target.URL != f.Target.URL || r.Target.Method != f.Target.Method || r.Target.Path != f.Target.Path:
			return fmt.Errorf("%s soaked %s %s%s and %s soaked %s %s%s: merge the histories of one soak", m.firstName, f.Target.Method, f.Target.URL, f.Target.Path, name, r.Target.Method, r.Target.URL, r.Target.Path)
		case r.EffectQuery != f.EffectQuery:
			return fmt.Errorf("%s and %s counted effects with different queries: merge the histories of one soak", m.firstName, name)
		case !reflect.DeepEqual(r.Policy, f.Policy):
			return fmt.Errorf("%s and %s were soaked under different policies: merge the histories of one soak", m.firstName, name)
		case (r.Shard == nil) != (f.Shard == nil):
			return fmt.Errorf("%s and %s: one is a shard of a soak, the other a whole soak: merge the shards of one soak", m.firstName, name)
		}
	}
	if r.Shard != nil {
		s := *r.Shard
		if m.count == 0 {
			m.count = s.Count
		}
		switch prev, dup := m.shards[s.Index]; {
		case s.Count != m.count:
			return fmt.Errorf("%s is shard %s but %s is of %d shards: merge the shards of one soak", name, s, m.firstName, m.count)
		case dup:
			return fmt.Errorf("%s and %s are both shard %s: name each shard's history once", prev, name, s)
		}
		m.shards[s.Index] = name
	}
	m.histories++
	m.tally.Run(r)
	return nil
}

// Attempt counts one attempt of the current history.
func (m *SoakMerge) Attempt(a idemcheck.Attempt) { m.tally.Attempt(a) }

// Observation counts one observation of the current history.
func (m *SoakMerge) Observation(o idemcheck.Observation) { m.tally.Observation(o) }

// Histories is the number of histories merged so far.
func (m *SoakMerge) Histories() int { return m.histories }

// Header is the first history's header, which the others matched.
func (m *SoakMerge) Header() idemcheck.Run {
	if m.first == nil {
		return idemcheck.Run{}
	}
	return *m.first
}

// Result returns the merged counts on load (figures measured elsewhere),
// what was merged (with the shards missing, if any), and the verdict: a
// duplicated or lost effect fails; with a shard missing, no anomaly is
// only inconclusive, since the missing shard's intents were not counted.
func (m *SoakMerge) Result(load idemcheck.SoakResult) (idemcheck.SoakResult, idemcheck.Merged, idemcheck.Status) {
	r := m.tally.Result(load)
	mg := idemcheck.Merged{Histories: m.histories, Shards: m.count}
	for i := range m.count {
		if _, ok := m.shards[i]; !ok {
			mg.Missing = append(mg.Missing, i)
		}
	}
	v := SoakVerdict(r)
	if v == idemcheck.Pass && len(mg.Missing) > 0 {
		v = idemcheck.Inconclusive
	}
	return r, mg, v
}

// unjudged says why some of a soak's intents could not be judged: their
// effect may still be pending, or their count was still changing when the
// settle bound ran out.
func unjudged(r idemcheck.SoakResult, words Words) string {
	var parts []string
	st := r.Settle
	if r.Pending > 0 {
		switch {
		case st == nil && r.Recounted == 0:
			parts = append(parts, idemcheck.Phrasef("%s answered with an accepted status (effect pending) had no effect when counted, right after the reply, "+
				"before a background worker need have written it: none is called lost; count effects once they settle (%s)",
				count(int(r.Pending), "intent"), idemcheck.Field("Settle")).In(words))
		case st == nil:
			parts = append(parts, fmt.Sprintf("%s answered with an accepted status (effect pending) still had no effect when counted again, once the settle bound had passed since the load's end: "+
				"the work is still pending or was lost, and the count alone cannot tell which", count(int(r.Pending), "intent")))
		default:
			parts = append(parts, fmt.Sprintf("%s answered with an accepted status (effect pending) still had no effect when the settle bound (%v) ran out: "+
				"the work is still pending or was lost, and the count alone cannot tell which", count(int(r.Pending), "intent"), st.Bound))
		}
	}
	if n := opsUnjudged(r); n > 0 {
		parts = append(parts, fmt.Sprintf("the status monitors of %s still said their operation was pending, or could not be read, when the settle bound ran out: "+
			"their effects are neither lost nor settled yet; the first, %s", count(int(n), "intent"), r.Operations.First))
	}
	if r.Unsettled > 0 {
		bound := ""
		if st != nil {
			bound = fmt.Sprintf(" (%v, %s over %v, quiet period %v)", st.Bound, fmt.Sprintf("%d %s", st.Passes, plural(st.Passes, "pass", "passes")), st.Waited.Round(time.Millisecond), st.Quiet)
		}
		parts = append(parts, fmt.Sprintf("the effect counts of %s were still changing when the settle bound ran out%s: "+
			"neither a loss nor a duplicate can be told for them yet", count(int(r.Unsettled), "intent"), bound))
	}
	return strings.Join(parts, "; ")
}
