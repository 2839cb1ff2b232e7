package assert

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// A verdict must rest on what happened. proof decides, for one check that
// found no anomaly, whether its scenario took place, from the history
// alone so that `idemcheck check` reaches the same outcome offline:
//
//   - a round (one intent) counts only when the fault its attempts went
//     through landed (a FaultLanded or TargetKilled event for the intent),
//     and when at least one attempt that went through no fault of its own
//     was answered: the retry the verdict rests on;
//   - a check during which the target exited on its own is inconclusive;
//   - a check none of whose rounds counts is inconclusive, with the reason
//     of the rounds that did not count.
//
// It returns the status (Pass or Inconclusive), the proof of a pass (what
// shows the scenario happened) and the reason of an inconclusive result.

// checkEvidence is what the history shows of one check's scenario.
type checkEvidence struct {
	name     string
	rounds   int // intents the check made
	counted  int // rounds whose scenario happened and were answered
	faulted  int // rounds with a faulted attempt
	landed   int // of those, rounds whose fault landed
	answered int // attempts with a complete reply
	attempts int
	refused  int // attempts the target never took (connection refused)
	// why the rounds that did not count did not, most frequent first
	missed   map[string]int
	landings map[string]int // where faults landed: "commit", "autocommit-write", ...
	// afterReply counts the database faults that landed after their
	// attempt had been answered: on a background worker's write.
	afterReply int
	kills      int
	// exits are the target's exits at a step no fault of idemcheck's
	// broke: what followed tested a restarted target, not the scenario.
	// faultExits are those at a step whose attempt went through a fault
	// (a cut database link, say): the crash is a robustness finding, and
	// the round goes on, judged on the retry the restarted target got.
	exits, faultExits []idemcheck.Event
	// unrecovered are the rounds after whose database link cut the target
	// failed fresh requests (TargetUnrecovered).
	unrecovered []idemcheck.Event
	// links tallies the faulted rounds by the links their faults acted on
	// (linkKey): a check that arms faults on several links (failed-attempt
	// cuts the database link in some rounds and breaks the provider link in
	// others) has happened only when each kind landed at least once.
	links map[string]*linkTally
	// refusals counts the attempts refused before the handler (a 429, or
	// a 503 with Retry-After), limited the rounds whose scenario they kept
	// from the handler (refusedRound).
	refusals, limited int
	// limitedBursts says some of those rounds were bursts, which are sent
	// again after Retry-After with a fresh intent.
	limitedBursts bool
	// undecided says why a round's outcome could not be judged either way
	// (a key still in progress with no lease declared): the check cannot
	// pass while one round is undecided.
	undecided string
	// pending counts the rounds whose effects may still land (an
	// accepted reply counted before it settled, a count still changing at
	// the settle bound: effectsPending); pendingWhy is the first one's
	// reason. The check cannot pass while one is pending.
	pending    int
	pendingWhy string
	// settled counts the rounds whose effects were counted once they
	// settled (--settle); settleWait and settlePolls are the longest wait
	// and the most polls one took.
	settled     int
	settleWait  time.Duration
	settlePolls int
	// operations counts the accepted operations followed to their end on
	// their status monitors in those rounds, done those that finished.
	operations, done int
	// uncounted are the rounds with no effect count in a history whose
	// run counted effects (Run.EffectQuery): its records were cut or
	// edited, and what it lacks could have failed the check.
	uncounted int
	words     Words
}

// gatherEvidence reads the check's intents, attempts and events.
func gatherEvidence(h *idemcheck.History, name string, byIntent map[string][]idemcheck.Attempt, events map[string][]idemcheck.Event, words Words) *checkEvidence {
	ev := &checkEvidence{name: name, missed: map[string]int{}, landings: map[string]int{}, links: map[string]*linkTally{}, words: words}
	planned := facts(h)
	obs := h.ObservationsByIntent()
	for _, e := range h.Events {
		if e.Check == name && e.Kind == idemcheck.TargetExited {
			if _, _, ok := exitFault(e, byIntent); ok {
				ev.faultExits = append(ev.faultExits, e)
			} else {
				ev.exits = append(ev.exits, e)
			}
		}
		if e.Check == name && e.Kind == idemcheck.TargetUnrecovered {
			ev.unrecovered = append(ev.unrecovered, e)
		}
	}
	for _, in := range h.Intents {
		if in.Check != name {
			continue
		}
		all := byIntent[in.ID]
		if len(all) == 0 {
			continue
		}
		ic := &intentCheck{policy: h.Run.Policy, intent: in, facts: planned[name], words: words}
		if o, ok := obs[in.ID]; ok {
			ic.obs = &o
		} else if h.Run.EffectQuery != "" {
			ev.uncounted++
		}
		ev.round(ic, all, events[in.ID])
	}
	return ev
}

// roundFacts is what one round's attempts and events showed.
type roundFacts struct {
	// limitedWhy says why a rate limit kept the round from the handler.
	limitedWhy string
	// faulted: an attempt went through a fault; retryAnswered: one
	// without a fault was answered; anyAnswered: one was.
	faulted, retryAnswered, anyAnswered bool
	// landed: a fault landed or a kill happened; missedWhy is the first
	// missed fault's reason; notDead the detail of a kill the target
	// outlived.
	landed             bool
	missedWhy, notDead string
	// released is when a held write was released.
	released time.Time
}

// round tallies one round: ic's intent (its observation set) with all its
// attempts and events.
func (ev *checkEvidence) round(ic *intentCheck, all []idemcheck.Attempt, events []idemcheck.Event) {
	ev.rounds++
	var r roundFacts
	var limitedBurst bool
	r.limitedWhy, limitedBurst = refusedRound(all)
	ev.limitedBursts = ev.limitedBursts || limitedBurst
	atts := withoutRefusals(all)
	ev.refusals += len(all) - len(atts)
	ev.attempts += len(all) - len(atts)
	ev.tallyAttempts(atts, &r)
	ev.tallyEvents(events, &r)
	ev.afterReply += landedAfterReply(atts, events)
	if r.faulted {
		ev.tallyLink(atts, r)
	}
	ic.attempts, ic.released = atts, r.released
	if why := ic.stuckWithoutLease(); why != "" && ev.undecided == "" {
		ev.undecided = why
	}
	scenario := ic.missedScenario()
	pending := ""
	if ic.obs != nil {
		_, promised := ic.promisedEffects()
		pending = ic.effectsPending(promised)
		if st := ic.obs.Settle; st != nil && st.Settled {
			ev.settled++
			ev.settleWait = max(ev.settleWait, st.Waited)
			ev.settlePolls = max(ev.settlePolls, st.Polls)
			for _, op := range st.Operations {
				if op.Over != "" {
					ev.operations++
				}
				if op.Over == idemcheck.OperationDone {
					ev.done++
				}
			}
		}
	}
	ev.judge(ic, atts, r, pending, scenario)
}

// tallyAttempts counts a round's attempts, refusals left out.
func (ev *checkEvidence) tallyAttempts(atts []idemcheck.Attempt, r *roundFacts) {
	for _, a := range atts {
		ev.attempts++
		if a.Outcome == idemcheck.Replied {
			ev.answered++
			r.anyAnswered = true
			if a.Fault == "" {
				r.retryAnswered = true
			}
		}
		if a.Outcome == idemcheck.NotSent {
			ev.refused++
		}
		if a.Fault != "" {
			r.faulted = true
		}
	}
}

// tallyEvents reads a round's events: its landings, kills, misses and
// release.
func (ev *checkEvidence) tallyEvents(events []idemcheck.Event, r *roundFacts) {
	for _, e := range events {
		switch e.Kind {
		case idemcheck.HoldReleased:
			r.released = e.Time
		case idemcheck.TargetNotDead:
			r.notDead = e.Detail
		case idemcheck.FaultLanded:
			r.landed = true
			if e.Landing != "" {
				ev.landings[e.Landing]++
			}
		case idemcheck.TargetKilled:
			r.landed = true
			ev.kills++
		case idemcheck.FaultMissed:
			if r.missedWhy == "" {
				r.missedWhy = e.Detail
			}
		}
	}
}

// tallyLink counts a faulted round on the links its faults were on.
func (ev *checkEvidence) tallyLink(atts []idemcheck.Attempt, r roundFacts) {
	ev.faulted++
	lt := ev.links[linkKey(atts)]
	if lt == nil {
		lt = &linkTally{}
		ev.links[linkKey(atts)] = lt
	}
	lt.rounds++
	if r.landed {
		ev.landed++
		lt.landed++
	} else if lt.missed == "" {
		lt.missed = r.missedWhy
	}
}

// judge counts the round as one that tested the check, or as missed with
// the first reason that applies.
func (ev *checkEvidence) judge(ic *intentCheck, atts []idemcheck.Attempt, r roundFacts, pending, scenario string) {
	switch {
	case r.notDead != "":
		ev.missed[r.notDead]++
	case r.limitedWhy != "":
		// A rate limit kept the scenario from the handler: whatever
		// else happened, it did not happen there.
		ev.limited++
		ev.missed[r.limitedWhy]++
	case r.faulted && !r.landed:
		missedWhy := r.missedWhy
		if missedWhy == "" {
			missedWhy = fmt.Sprintf("its fault (%s) never landed", faultOf(atts))
		}
		ev.missed[missedWhy]++
	case !r.anyAnswered:
		ev.missed["none of its attempts was answered"]++
	case r.faulted && !r.retryAnswered:
		ev.missed["the fault landed, but no retry after it was answered"]++
	case pending != "":
		ev.pending++
		if ev.pendingWhy == "" {
			ev.pendingWhy = fmt.Sprintf("round of intent %s: %s", ic.intent.ID, pending)
		}
		ev.missed[pending]++
	case scenario != "":
		// A check's own condition for its scenario (a refused invalid
		// body, long keys the target took) did not hold.
		ev.missed[scenario]++
	case ic.unidentified():
		ev.missed[idemcheck.Phrasef("its success replies carry no resource id and no effect was counted, so nothing told one execution "+
			"from two: count effects (%s, or %s), or give the id's place in the reply (%s)",
			idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"), idemcheck.Field("Policy.ResourceID")).In(ev.words)]++
	default:
		ev.counted++
	}
}

// linkTally is what the faulted rounds on one set of links showed.
type linkTally struct {
	rounds, landed int
	missed         string // why the first round that missed did
}

// linkKey names the links the first faulted attempt's fault acted on
// ("db", "client+db", "provider"; "" for a kill alone).
func linkKey(atts []idemcheck.Attempt) string {
	for _, a := range atts {
		if a.Fault != "" {
			return strings.Join(a.FaultLinks, "+")
		}
	}
	return ""
}

// linkWords says where the faults of a linkKey act, for a reason.
func linkWords(key string) string {
	if key == "" {
		return "the target process"
	}
	var w []string
	for _, l := range strings.Split(key, "+") {
		switch l {
		case idemcheck.LinkClient:
			w = append(w, "the client link")
		case idemcheck.LinkDB:
			w = append(w, "the database link")
		case idemcheck.LinkProvider:
			w = append(w, "the provider link")
		default:
			w = append(w, "the "+l+" link")
		}
	}
	return strings.Join(w, " and ")
}

// unlanded returns the reason a check whose rounds counted still did not
// happen as a whole: one kind of fault it arms (by the links it acts on)
// landed in none of its rounds, so the part of the contract it tests was
// never exercised, whatever the other rounds showed.
func (ev *checkEvidence) unlanded() string {
	for _, key := range slices.Sorted(maps.Keys(ev.links)) {
		lt := ev.links[key]
		if lt.landed > 0 {
			continue
		}
		why := ""
		if lt.missed != "" {
			why = " (" + lt.missed + ")"
		}
		return fmt.Sprintf("its faults on %s landed in none of their %s%s: that part of its scenario never happened, and its other rounds cannot stand for it",
			linkWords(key), count(lt.rounds, "round"), why)
	}
	return ""
}

func faultOf(atts []idemcheck.Attempt) string {
	for _, a := range atts {
		if a.Fault != "" {
			return a.Fault
		}
	}
	return ""
}

// verdict turns the evidence into a status, a proof and a reason.
func (ev *checkEvidence) verdict() (status idemcheck.Status, proof, reason string) {
	if len(ev.exits) > 0 {
		e := ev.exits[0]
		return idemcheck.Inconclusive, "", fmt.Sprintf("the target exited on its own (%s) during round %d, step %d%s: what followed tested a restarted target, not the scenario",
			orUnknown(e.ExitStatus), e.Round, e.Step, after(e))
	}
	if len(ev.unrecovered) > 0 {
		// Its retries met a target that fails every request: a 5xx then is
		// no saved error, and a success came from another process.
		e := ev.unrecovered[0]
		return idemcheck.Inconclusive, "", fmt.Sprintf("the target did not recover from its cut database link (round %d: %s): "+
			"what its retries got shows the broken connection, not how its key store keeps a failed attempt",
			e.Round, e.Detail)
	}
	if ev.undecided != "" {
		return idemcheck.Inconclusive, "", ev.undecided
	}
	if ev.pending > 0 {
		return idemcheck.Inconclusive, "", fmt.Sprintf("the effects of %s of its %s had not settled when they were counted, so none of them is called lost: %s",
			plural(ev.pending, "one", fmt.Sprint(ev.pending)), count(ev.rounds, "round"), ev.pendingWhy)
	}
	if ev.uncounted > 0 {
		return idemcheck.Inconclusive, "", fmt.Sprintf("%s of its %s %s no effect count in the history, though the run counted effects: "+
			"the history was cut short or edited, and a pass would rest on what it lacks", plural(ev.uncounted, "one", fmt.Sprint(ev.uncounted)),
			count(ev.rounds, "round"), plural(ev.uncounted, "has", "have"))
	}
	if ev.counted == 0 && ev.limited > 0 {
		rounds, advice := count(ev.rounds, "round"), stepLimitAdvice(ev.words)
		if ev.limitedBursts {
			rounds += ", repeats included (a round whose burst was refused is sent again after Retry-After, with a fresh intent)"
			advice = rateLimitAdvice(ev.words)
		}
		return idemcheck.Inconclusive, "", fmt.Sprintf("a rate limit refused %d of its %d attempts before the handler (429, or 503 with Retry-After), "+
			"and its scenario reached the handler in none of its %s: %s. %s",
			ev.refusals, ev.attempts, rounds, ev.missedSummary(), advice)
	}
	if ev.answered == 0 {
		why := fmt.Sprintf("none of its %d attempts was answered", ev.attempts)
		if ev.refused > 0 {
			why += fmt.Sprintf(" (%d refused)", ev.refused)
		}
		return idemcheck.Inconclusive, "", why + ": there was no live target to judge"
	}
	if ev.counted == 0 {
		return idemcheck.Inconclusive, "", fmt.Sprintf("its scenario happened in none of its %d rounds: %s", ev.rounds, ev.missedSummary())
	}
	if why := ev.unlanded(); why != "" {
		return idemcheck.Inconclusive, "", why
	}
	parts := []string{fmt.Sprintf("%d of %d rounds happened as meant", ev.counted, ev.rounds)}
	if ev.faulted > 0 {
		parts = append(parts, fmt.Sprintf("fault landed in %d of %d%s", ev.landed, ev.faulted, ev.landingSummary()))
	}
	if ev.kills > 0 {
		parts = append(parts, fmt.Sprintf("target killed and restarted %d times", ev.kills))
	}
	if n := len(ev.faultExits); n > 0 {
		parts = append(parts, fmt.Sprintf("target exited under its fault %s and was restarted, each retry judged on the restarted target", times(n)))
	}
	parts = append(parts, fmt.Sprintf("%d of %d attempts answered", ev.answered, ev.attempts))
	if ev.settled > 0 {
		parts = append(parts, fmt.Sprintf("effects counted once settled in %d of %d rounds (the longest wait %v, %s at most)",
			ev.settled, ev.rounds, ev.settleWait.Round(10*time.Millisecond), count(ev.settlePolls, "poll")))
		if ev.operations > 0 {
			parts[len(parts)-1] += fmt.Sprintf(", once %s had said its operation was over (%d done, %d failed)",
				count(ev.operations, "status monitor"), ev.done, ev.operations-ev.done)
		}
	}
	if ev.refusals > 0 {
		parts[len(parts)-1] += fmt.Sprintf(" by the handler (%d refused before it by a rate limit: 429, or 503 with Retry-After)", ev.refusals)
	}
	proof = strings.Join(parts, "; ")
	if ev.counted < ev.rounds {
		proof += "; the others did not count: " + ev.missedSummary()
	}
	return idemcheck.Pass, proof, ""
}

func (ev *checkEvidence) missedSummary() string {
	type kv struct {
		why string
		n   int
	}
	var l []kv
	for k, v := range ev.missed {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].why < l[j].why })
	var s []string
	for _, x := range l {
		s = append(s, fmt.Sprintf("%s (%s)", x.why, count(x.n, "round")))
	}
	return strings.Join(s, "; ")
}

func (ev *checkEvidence) landingSummary() string {
	if len(ev.landings) == 0 {
		return ""
	}
	var s []string
	for k, v := range ev.landings {
		s = append(s, fmt.Sprintf("%s x%d", k, v))
	}
	sort.Strings(s)
	if ev.afterReply > 0 {
		s = append(s, fmt.Sprintf("%d of them a background worker's, after the attempt was answered", ev.afterReply))
	}
	return " (on " + strings.Join(s, ", ") + ")"
}

// landedAfterReply counts the database faults of a round (FaultLanded
// with a connection) that acted after the attempt of their step had been
// answered: the write they met was not the handler's, which had replied,
// but a background worker's.
func landedAfterReply(atts []idemcheck.Attempt, events []idemcheck.Event) int {
	n := 0
	for _, e := range events {
		if e.Kind != idemcheck.FaultLanded || e.Conn == 0 {
			continue
		}
		for _, a := range atts {
			if a.Step == e.Step && a.Outcome == idemcheck.Replied && !a.End.IsZero() && e.Time.After(a.End) {
				n++
				break
			}
		}
	}
	return n
}

// count writes n with its noun: "1 round", "3 rounds".
func count(n int, word string) string {
	return fmt.Sprintf("%d %s", n, plural(n, word, word+"s"))
}

func orUnknown(s string) string {
	if s == "" {
		return "status unknown"
	}
	return s
}

func after(e idemcheck.Event) string {
	if e.Fault != "" {
		return ", after " + e.Fault
	}
	return ""
}

// unidentified reports whether the intent's check tells one execution from
// two (CountsExecutions) and this intent gave it nothing to tell them by:
// no effect count, and success replies none of which carries a resource
// id (an empty 200, say), where two executions and one replayed read the
// same. Under an ack-only policy replies never carry one, and the rule
// is the effect count's alone.
func (c *intentCheck) unidentified() bool {
	if !c.facts.CountsExecutions || c.obs != nil || c.policy.AckOnly {
		return false
	}
	succ := c.successes()
	if len(succ) == 0 {
		return false
	}
	for _, s := range succ {
		if s.idField != "" {
			return false
		}
	}
	return true
}

// eventsByIntent groups events by the intent in whose time they happened.
func eventsByIntent(h *idemcheck.History) map[string][]idemcheck.Event {
	m := map[string][]idemcheck.Event{}
	for _, e := range h.Events {
		if e.Intent != "" {
			m[e.Intent] = append(m[e.Intent], e)
		}
	}
	return m
}

// runVerdict is the verdict of a whole run: anomalies fail it; then a run
// with nothing to judge gets its own name (every check skipped, no
// attempt at all, nothing answered); then any inconclusive check makes it
// inconclusive.
func runVerdict(h *idemcheck.History, checks []idemcheck.CheckResult, anomalies int) idemcheck.Status {
	if anomalies > 0 {
		return idemcheck.Fail
	}
	allSkipped := len(h.Run.Checks) > 0
	for _, pc := range h.Run.Checks {
		if pc.Skip == "" {
			allSkipped = false
		}
	}
	if allSkipped {
		return idemcheck.AllSkipped
	}
	if len(h.Attempts) == 0 {
		return idemcheck.Empty
	}
	answered := 0
	for _, a := range h.Attempts {
		if a.Outcome == idemcheck.Replied {
			answered++
		}
	}
	if answered == 0 {
		return idemcheck.NoAnswers
	}
	for _, c := range checks {
		if c.Status == idemcheck.Inconclusive {
			return idemcheck.Inconclusive
		}
	}
	return idemcheck.Pass
}

// exitFault says whether exit e happened at a step whose attempt went
// through a fault idemcheck applied, and which fault and links: the target
// exited under that fault.
func exitFault(e idemcheck.Event, byIntent map[string][]idemcheck.Attempt) (fault string, links []string, ok bool) {
	if e.Intent == "" {
		return "", nil, false
	}
	for _, a := range byIntent[e.Intent] {
		if a.Step == e.Step && a.Fault != "" {
			return a.Fault, a.FaultLinks, true
		}
	}
	return "", nil, false
}

// times writes "1 time", "3 times".
func times(n int) string { return count(n, "time") }

// exitFindings are the robustness findings of a history: per check, the
// times the target exited under a fault idemcheck applied (TargetExited
// kind), each round then judged on the restarted target's answers. They
// are reported apart from the verdict (Kind.Class).
func exitFindings(h *idemcheck.History, byIntent map[string][]idemcheck.Attempt) []idemcheck.Anomaly {
	type found struct {
		exits    []idemcheck.Event
		attempts []int
		db       bool
		faults   []string
	}
	byCheck := map[string]*found{}
	var order []string
	for _, e := range h.Events {
		if e.Kind != idemcheck.TargetExited {
			continue
		}
		fault, links, ok := exitFault(e, byIntent)
		if !ok {
			continue
		}
		f := byCheck[e.Check]
		if f == nil {
			f = &found{}
			byCheck[e.Check] = f
			order = append(order, e.Check)
		}
		f.exits = append(f.exits, e)
		if slices.Contains(links, idemcheck.LinkDB) {
			f.db = true
		}
		if !slices.Contains(f.faults, fault) {
			f.faults = append(f.faults, fault)
		}
		for _, a := range byIntent[e.Intent] {
			if a.Step == e.Step && a.Fault != "" && !slices.Contains(f.attempts, a.ID) {
				f.attempts = append(f.attempts, a.ID)
			}
		}
	}
	keys := map[string]string{}
	for _, in := range h.Intents {
		keys[in.ID] = in.Key
	}
	var out []idemcheck.Anomaly
	for _, check := range order {
		f := byCheck[check]
		first := f.exits[0]
		what := "under a fault idemcheck applied (" + strings.Join(f.faults, ", ") + ")"
		if f.db {
			what = "on a dropped database link"
		}
		expl := fmt.Sprintf("the target exited %s %s (first in round %d, %s): a robustness finding, not an idempotency failure. "+
			"Each time idemcheck restarted it and went on; the retries after the restart were judged as in any round",
			what, times(len(f.exits)), first.Round, orUnknown(first.ExitStatus))
		if f.db {
			expl += ". A service that dies when its database connection drops (a pg client with no 'error' listener, say) loses every request in flight with it"
		}
		out = append(out, idemcheck.Anomaly{
			Kind: idemcheck.TargetExitedFinding, Check: check, Intent: first.Intent, Key: keys[first.Intent],
			Explanation: expl, Attempts: f.attempts,
		})
	}
	return out
}
