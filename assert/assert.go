// Package assert turns a recorded History into typed anomalies. It is pure:
// no network, no database, only the attempts the wire showed and the effect
// counts the database gave. It is sound rather than complete: every anomaly
// it reports is witnessed by attempts in the history, and what it cannot see
// (a check with no database, say) it leaves to the checks that can. The
// soak's rules (duplicated and lost effects, its verdict) are here too.
//
// What it knows of each check (the rule it enforces, whether it breaks the
// target on purpose) it reads from the history's plan, and what kind of
// fault an attempt went through from the attempt: a history carries all
// the checker needs, so it is checked the same way offline. It must never
// import anything but the root package and the standard library: not the
// history format, the runner or a renderer, and above all not the
// scenarios package, whose registry of checks fills the plan.
package assert

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// NoRule stands for the rule of a check whose plan records none: a history
// written before plans carried their rules, or a check outside the
// registry (a soak).
const NoRule = "the history records no rule for this check"

// ruleOf is the rule a planned check enforces, as its plan recorded it.
func ruleOf(pc idemcheck.PlannedCheck) string {
	if pc.Rule == "" {
		return NoRule
	}
	return pc.Rule
}

// facts are what the plan says of each planned check, by name: whether it
// breaks the target on purpose (a key still in progress when its retries
// give up is stuck) and whether an answered failure of its first attempt
// releases the key. A check planned twice has the facts of either.
func facts(h *idemcheck.History) map[string]idemcheck.PlannedCheck {
	m := map[string]idemcheck.PlannedCheck{}
	for _, pc := range h.Run.Checks {
		f := m[pc.Name]
		f.Name = pc.Name
		f.Faults = f.Faults || pc.Faults
		f.FailureReleasesKey = f.FailureReleasesKey || pc.FailureReleasesKey
		f.RetryTakesOver = f.RetryTakesOver || pc.RetryTakesOver
		f.CountsExecutions = f.CountsExecutions || pc.CountsExecutions
		m[pc.Name] = f
	}
	return m
}

// Words are a program's words for the settings the checker's hints name
// (how to declare a lease, a body the target refuses, the key header):
// the command's flags, a suite's keys. Nil says them as the fields of
// certify.Config.
type Words = map[idemcheck.Field]idemcheck.Word

// Report checks h against the policy and plan in its header and returns the
// full verdict, its hints naming settings in Go's words (ReportIn). Stats
// other than the counts are left for the caller.
func Report(h *idemcheck.History) idemcheck.Report { return ReportIn(h, nil) }

// ReportIn is Report with the settings its hints name said in words.
func ReportIn(h *idemcheck.History, words Words) idemcheck.Report {
	// The findings that count against the verdict are the report's
	// anomalies; the rest (conformance remarks the policy does not
	// require, robustness findings) are its remarks.
	var anomalies, remarks []idemcheck.Anomaly
	for _, a := range append(check(h, words), exitFindings(h, h.ByIntent())...) {
		if h.Run.Policy.Counts(a) {
			anomalies = append(anomalies, a)
		} else {
			remarks = append(remarks, a)
		}
	}
	r := idemcheck.Report{
		Version:   idemcheck.ReportVersion,
		Verdict:   idemcheck.Pass,
		Target:    h.Run.Target,
		Policy:    h.Run.Policy,
		Anomalies: anomalies,
		Remarks:   remarks,
		Stats: idemcheck.Stats{
			Intents:             len(h.Intents),
			Attempts:            len(h.Attempts),
			BurstSpreadMedianUS: medianSpreadUS(h.Bursts),
			BurstProtocol:       burstProtocol(h.Bursts),
		},
	}
	byIntent := h.ByIntent()
	events := eventsByIntent(h)
	calls := callsByIntent(h)
	for _, pc := range h.Run.Checks {
		ev := gatherEvidence(h, pc.Name, byIntent, events, words)
		cr := idemcheck.CheckResult{
			Name: pc.Name, Status: idemcheck.Pass, Rule: ruleOf(pc), Anomalies: []int{},
			Intents: ev.rounds, Attempts: ev.attempts, Answered: ev.answered,
			Provider: providerTraffic(h, pc.Name, calls), Partial: pc.Partial,
		}
		for i, a := range anomalies {
			if a.Check == pc.Name {
				cr.Anomalies = append(cr.Anomalies, i)
			}
		}
		for i, a := range remarks {
			if a.Check == pc.Name {
				cr.Remarks = append(cr.Remarks, i)
			}
		}
		switch {
		case pc.Skip != "":
			cr.Status, cr.Reason = idemcheck.Skip, pc.Skip
		case len(cr.Anomalies) > 0:
			// An anomaly is witnessed by attempts: whatever else went
			// wrong, the contract was broken where it shows.
			cr.Status = idemcheck.Fail
		case cr.Attempts == 0:
			// A check that was planned to run and holds no attempt has
			// shown nothing: never a pass, and not a skip either (it did
			// apply). A history cut short, or a run stopped before it,
			// holds no record of it.
			cr.Status, cr.Reason = idemcheck.Inconclusive, "the history holds no attempt of it, though the plan names it: "+
				"it was cut short, or the run stopped before this check"
		default:
			cr.Status, cr.Proof, cr.Reason = ev.verdict()
		}
		// Refusals before the handler: how many rounds really ran
		// concurrently inside it (refusals.go).
		if adm, none := admissionProof(h, pc.Name, words); adm != "" && pc.Skip == "" {
			switch {
			case none && cr.Status == idemcheck.Pass:
				cr.Status, cr.Proof, cr.Reason = idemcheck.Inconclusive, "", adm
			case cr.Status == idemcheck.Pass:
				cr.Proof += "; " + adm
			}
		}
		// A check that sends bursts states how tightly they were released;
		// when some round never got a burst tight enough to mean anything,
		// its pass would rest on nothing.
		if burst, loose := burstProof(CheckBursts(h, pc.Name), words, arrivalProof(h, pc.Name)); burst != "" && pc.Skip == "" {
			switch {
			case loose && cr.Status == idemcheck.Pass:
				cr.Status, cr.Proof, cr.Reason = idemcheck.Inconclusive, "", "its bursts were too loose: "+burst
			case cr.Proof != "":
				cr.Proof += "; " + burst
			default:
				cr.Proof = burst
			}
		}
		r.Checks = append(r.Checks, cr)
	}
	for _, e := range h.Events {
		if e.Kind == idemcheck.TargetExited || e.Kind == idemcheck.TargetUnrecovered {
			r.TargetExits = append(r.TargetExits, e)
		}
	}
	r.Contract = contract(h, r.Checks, words)
	r.Verdict = runVerdict(h, r.Checks, len(anomalies))
	return r
}

// contract states every rule the history records as held, broken or not
// checked: the planned checks' in the order they ran, then those the run
// was not asked for.
func contract(h *idemcheck.History, results []idemcheck.CheckResult, words Words) []idemcheck.RuleResult {
	// counted says, per check, where its effect counts came from: the
	// database ("db") or a read-back through the API (ViaHTTP).
	counted := map[string]string{}
	for _, o := range h.Observations {
		via := o.Via
		if via == "" {
			via = "db"
		}
		counted[o.Check] = via
	}
	byName := map[string]idemcheck.CheckResult{}
	for _, c := range results {
		byName[c.Name] = c
	}
	var out []idemcheck.RuleResult
	for _, pc := range slices.Concat(h.Run.Checks, h.Run.NotAsked) {
		name := pc.Name
		if slices.ContainsFunc(out, func(rr idemcheck.RuleResult) bool { return rr.Check == name }) {
			continue // a check planned twice states its rule once
		}
		rr := idemcheck.RuleResult{Check: name, Rule: ruleOf(pc)}
		c, planned := byName[name]
		switch {
		case !planned:
			rr.Status, rr.Reason = idemcheck.RuleNotChecked, idemcheck.Phrasef("not asked for (%s)", idemcheck.Field("Checks")).In(words)
		case c.Status == idemcheck.Skip:
			rr.Status, rr.Reason = idemcheck.RuleNotChecked, c.Reason
		case c.Status == idemcheck.Fail:
			rr.Status = idemcheck.RuleBroken
		case c.Status == idemcheck.Inconclusive:
			rr.Status, rr.Reason = idemcheck.RuleInconclusive, c.Reason
		default:
			rr.Status = idemcheck.RuleHeld
			if c.Partial != "" {
				rr.Reason = "held for what was sent; not sent: " + c.Partial
			}
		}
		if rr.Status != idemcheck.RuleNotChecked {
			switch counted[name] {
			case "db":
				rr.Basis = "the wire and the database's effect counts"
			case idemcheck.ViaHTTP:
				rr.Basis = "the wire and effect counts read back through the API (HTTP GET), not the database: as true as the API's own list"
			default:
				rr.Basis = idemcheck.Phrasef("the wire alone: no database, so effects were not counted (%s, %s, or %s)",
					idemcheck.Field("DB"), idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP")).In(words)
			}
		}
		out = append(out, rr)
	}
	return out
}

// Check returns every anomaly in h, grouped by intent in the order the
// intents were made, and within an intent in a fixed order of kinds.
func Check(h *idemcheck.History) []idemcheck.Anomaly { return check(h, nil) }

func check(h *idemcheck.History, words Words) []idemcheck.Anomaly {
	p := h.Run.Policy
	byIntent := h.ByIntent()
	obs := h.ObservationsByIntent()
	recounts := h.RecountsByIntent()
	scheduled := map[string]idemcheck.Burst{}
	for _, b := range h.Bursts {
		if b.RaceScheduled() && b.Intent != "" {
			scheduled[b.Intent] = b
		}
	}
	planned := facts(h)
	calls := callsByIntent(h)
	unrecovered := map[string]bool{}
	released := map[string]time.Time{}
	for _, e := range h.Events {
		switch e.Kind {
		case idemcheck.TargetUnrecovered:
			unrecovered[e.Intent] = true
		case idemcheck.HoldReleased:
			released[e.Intent] = e.Time
		}
	}
	var out []idemcheck.Anomaly
	for _, in := range h.Intents {
		atts := withoutRefusals(byIntent[in.ID])
		if len(atts) == 0 {
			continue
		}
		ic := intentCheck{policy: p, intent: in, attempts: atts, facts: planned[in.Check], words: words, unrecovered: unrecovered[in.ID],
			released: released[in.ID]}
		if b, ok := scheduled[in.ID]; ok {
			ic.scheduled = &b
			if b.InTurn {
				ic.turns = turns(h.Events, in.ID)
			}
		}
		if o, ok := obs[in.ID]; ok {
			ic.obs = &o
		}
		if o, ok := recounts[in.ID]; ok {
			ic.recount = &o
		}
		ic.run()
		ic.checkProvider(calls[in.ID])
		out = append(out, ic.out...)
	}
	out = append(out, staleSkewAccepted(h)...)
	return hintKeyHeader(h, out, words)
}

// MaxEvidence bounds the attempts shown as evidence in one anomaly; its
// Attempts list names every witness.
const MaxEvidence = 8

// intentCheck holds what the rules need about one intent.
type intentCheck struct {
	policy   idemcheck.Policy
	intent   idemcheck.Intent
	attempts []idemcheck.Attempt // in start order
	obs      *idemcheck.Observation
	// recount is the intent's count taken again after the run's last
	// check (Observation.Recount), for late duplicates.
	recount *idemcheck.Observation
	// facts are what the plan says of the intent's check: whether it
	// breaks the target on purpose (Faults), whether an answered failure
	// releases the key (FailureReleasesKey).
	facts idemcheck.PlannedCheck
	// words say the settings the intent's hints name.
	words Words
	// scheduled is the intent's burst when its race was scheduled at the
	// database link.
	scheduled *idemcheck.Burst
	// turns are the write-held events of a burst released in turn, in the
	// order the writes went.
	turns []idemcheck.Event
	// unrecovered says the target failed fresh requests after this
	// intent's database link cut (TargetUnrecovered): the statuses its
	// attempts got show the dead connection, not the key store, so only
	// its effects are judged.
	unrecovered bool
	// released is when a held first attempt was let go on
	// (HoldReleased); zero in histories that predate the event.
	released time.Time
	out      []idemcheck.Anomaly
}

// success is a success reply with its decoded identity.
type success struct {
	att      idemcheck.Attempt
	resource string // the created resource's id, or the canonical body where none is found
	idField  string // the JSON pointer the id was read from, "" when the body stood in
	body     string // canonical body, ignore fields removed
}

func (c *intentCheck) run() []idemcheck.Anomaly {
	succ := c.successes()
	c.checkResources(succ)
	if !c.unrecovered {
		c.checkStatuses()
	}
	c.checkStuck()
	c.checkAcknowledged()
	if !c.unrecovered {
		c.checkSavedError()
	}
	v := c.checkVariants(succ)
	v.add(c.checkCorrectedRetry())
	v.add(c.checkKeySyntax())
	c.checkEffects(succ, v)
	return c.out
}

// checkStuck flags a key that was still in progress when the retries of a
// fault check gave up: past the lease and its margin.
func (c *intentCheck) checkStuck() {
	p := c.policy
	if !c.facts.Faults || len(p.InProgressList()) == 0 || p.AckOnly {
		return // under an ack-only policy checkAcknowledged judges conflicts
	}
	var conflicts []idemcheck.Attempt
	for _, a := range c.attempts {
		if a.Outcome == idemcheck.Replied && p.InProgress(a.Status) {
			conflicts = append(conflicts, a)
		}
	}
	if len(conflicts) == 0 {
		return
	}
	last := c.attempts[len(c.attempts)-1]
	first := c.attempts[0]
	// The first attempt answered with an error, in a check whose answered
	// failure releases the key: the server knew its work had failed, so
	// nothing held the key and a conflict is already a lie.
	answeredFailure := c.facts.FailureReleasesKey && first.Outcome == idemcheck.Replied &&
		!p.Replay(first.Status) && !p.InProgress(first.Status)
	if answeredFailure {
		c.add(idemcheck.StuckKey, ids(conflicts),
			fmt.Sprintf("attempt %d failed inside the server and was answered %d, so nothing was working on key %s any more; yet %d retries over %.1fs "+
				"were told it was in progress (%s): a failed attempt must release its claim, or every retry waits out the lease (%v) or for ever.",
				first.ID, first.Status, c.intent.Key, len(conflicts), conflicts[len(conflicts)-1].End.Sub(conflicts[0].Start).Seconds(), statusesOf(conflicts), p.Lease),
			map[string]any{"conflicts": len(conflicts), "lease_ms": p.Lease.Milliseconds()})
		return
	}
	if last.Outcome != idemcheck.Replied || !p.InProgress(last.Status) || p.Lease <= 0 {
		// Without a declared lease a key still in progress after the
		// bounded wait may be stuck for ever or held by a lease longer
		// than the wait: that round proves nothing (stuckWithoutLease).
		return
	}
	c.add(idemcheck.StuckKey, ids(conflicts),
		fmt.Sprintf("after the first attempt died inside the server, %d retries with key %s over %.1fs all got %s (in progress); the lease is %v: "+
			"a key left running by a dead attempt must become retakable, or the client can never complete its intent.",
			len(conflicts), c.intent.Key, last.End.Sub(conflicts[0].Start).Seconds(), statusesOf(conflicts), p.Lease),
		map[string]any{"conflicts": len(conflicts), "lease_ms": p.Lease.Milliseconds()})
}

// stuckWithoutLease says why a round of a fault check proves nothing when
// the policy declares no lease and the key was still in progress when the
// retries stopped: a key stuck for ever and a lease longer than the wait
// look the same. "" otherwise.
func (c *intentCheck) stuckWithoutLease() string {
	p := c.policy
	if !c.facts.Faults || p.Lease > 0 || p.AckOnly || len(c.attempts) < 2 {
		return ""
	}
	last := c.attempts[len(c.attempts)-1]
	if last.Outcome != idemcheck.Replied || !p.InProgress(last.Status) {
		return ""
	}
	return idemcheck.Phrasef("the key was still in progress (%d) when the retries stopped, %.1fs after the crash, and the policy declares no lease: "+
		"a key stuck for ever cannot be told from a lease longer than that; give the target's lease (%s)",
		last.Status, last.End.Sub(c.attempts[0].End).Seconds(), idemcheck.Setting("Policy.Lease")).In(c.words)
}

// checkAcknowledged judges the events of an ack-only policy (a webhook
// consumer). A delivery answered with a 5xx, the in-progress status or not
// at all is not acknowledged: a consumer asks that way for another
// delivery, and the sender makes it, a bounded number of times
// (scenarios.MaxRedeliveries). What counts is what happens once an event is
// acknowledged (checkEffects: exactly one effect, never none); an event
// that no delivery got acknowledged within the bound is a finding:
// stuck-key when every redelivery was told the event is in progress (the
// consumer holds a claim nothing is working on), never-acknowledged
// otherwise. Events are told apart by their key (distinct-keys sends a
// second event); an event none of whose deliveries was answered at all
// tells nothing about the consumer's rules and is left alone.
func (c *intentCheck) checkAcknowledged() {
	p := c.policy
	if !p.AckOnly {
		return
	}
	var keys []string
	events := map[string][]idemcheck.Attempt{}
	for _, a := range c.attempts {
		if !a.Variant.Delivers() {
			continue
		}
		if _, ok := events[a.Key]; !ok {
			keys = append(keys, a.Key)
		}
		events[a.Key] = append(events[a.Key], a)
	}
	for _, key := range keys {
		ds := events[key]
		answered, acked := false, false
		var redelivered []idemcheck.Attempt
		for _, a := range ds {
			answered = answered || a.Outcome == idemcheck.Replied
			acked = acked || a.Outcome == idemcheck.Replied && p.Replay(a.Status)
			if a.Redelivery > 0 {
				redelivered = append(redelivered, a)
			}
		}
		if acked || !answered {
			continue
		}
		span := ds[len(ds)-1].End.Sub(ds[0].Start).Seconds()
		counts := statusCounts(ds)
		observed := map[string]any{"deliveries": len(ds), "redeliveries": len(redelivered), "statuses": counts}
		if c.obs != nil {
			observed["effects"] = c.obs.Effects
		}
		if stuck := inProgressThroughout(redelivered, p); stuck {
			c.add(idemcheck.StuckKey, ids(ds),
				fmt.Sprintf("event %s was delivered %d times over %.1fs and never acknowledged: after the first delivery (%s), all %d redeliveries "+
					"were told it is in progress (%d). Nothing was working on it any more, so the consumer holds a claim it never releases: "+
					"the sender gives up and the event is never applied.",
					key, len(ds), span, outcome(ds[0]), len(redelivered), p.InProgressStatus),
				observed)
			continue
		}
		c.add(idemcheck.NeverAcknowledged, ids(ds),
			fmt.Sprintf("event %s was delivered %d times over %.1fs (%d of them redeliveries after no acknowledgement) and no delivery was acknowledged with %v "+
				"(statuses: %s). Refusing a delivery (5xx, or no reply) asks the sender for another, which is fine; but the consumer must acknowledge "+
				"the event when it comes again, or the sender gives up and the event is never processed.",
				key, len(ds), span, len(redelivered), p.CreatedStatuses, countsText(counts)),
			observed)
	}
}

// inProgressThroughout reports whether there were redeliveries and every
// one that was answered got the in-progress status.
func inProgressThroughout(redelivered []idemcheck.Attempt, p idemcheck.Policy) bool {
	n := 0
	for _, a := range redelivered {
		if a.Outcome != idemcheck.Replied {
			continue
		}
		if !p.InProgress(a.Status) {
			return false
		}
		n++
	}
	return n > 0
}

// outcome says in a few words how an attempt ended: "503" or "no reply".
func outcome(a idemcheck.Attempt) string {
	if a.Outcome == idemcheck.Replied {
		return strconv.Itoa(a.Status)
	}
	return "no reply: " + a.Error
}

// countsText writes status counts in a stable order: "409 x3, 503 x1".
func countsText(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// checkSavedError: where the policy says errors are saved, the retry of a
// request that failed must get the same error back, not a fresh execution.
func (c *intentCheck) checkSavedError() {
	p := c.policy
	var first *idemcheck.Attempt
	for i, a := range c.attempts {
		if a.Variant != idemcheck.Failing || a.Outcome != idemcheck.Replied {
			continue
		}
		if first == nil {
			if p.Replay(a.Status) {
				return // the failing body did not fail: nothing was saved
			}
			first = &c.attempts[i]
			continue
		}
		if !p.ReplayErrors {
			return
		}
		if a.Status != first.Status || canonicalBody(a.RespBody, p.IgnoreFields) != canonicalBody(first.RespBody, p.IgnoreFields) {
			c.add(idemcheck.ReplayMismatch, []int{first.ID, a.ID},
				fmt.Sprintf("attempt %d failed with %d %s; its retry, attempt %d with the same key, got %d %s: the error was not saved, so the retry "+
					"ran again with another outcome, while the policy says errors are replayed.",
					first.ID, first.Status, short(first.RespBody), a.ID, a.Status, short(a.RespBody)), nil)
			return
		}
	}
}

// creators returns the first success of each distinct resource, in the
// order the client saw them.
func creators(succ []success) []success {
	seen := map[string]bool{}
	var out []success
	for _, s := range succ {
		if !seen[s.resource] {
			seen[s.resource] = true
			out = append(out, s)
		}
	}
	return out
}

func (c *intentCheck) successes() []success {
	var out []success
	for _, a := range c.attempts {
		if a.Outcome != idemcheck.Replied || !c.policy.Replay(a.Status) || !a.Variant.SameRequest() {
			continue
		}
		if c.policy.AckOnly {
			// An acknowledgement names no resource: every success is the same.
			out = append(out, success{att: a, resource: "ack", idField: "ack"})
			continue
		}
		body := canonicalBody(a.RespBody, c.policy.IgnoreFields)
		id, ptr := resourceID(a.RespBody, a.Body, c.policy.ResourceID)
		s := success{att: a, resource: id, idField: ptr, body: body}
		if ptr == "" {
			s.resource = "body:" + body
		}
		out = append(out, s)
	}
	// The original is the success the client saw first.
	sort.SliceStable(out, func(i, j int) bool { return out[i].att.End.Before(out[j].att.End) })
	return out
}

// checkResources compares every success with the first one: another
// resource means another execution; the same resource told differently
// means a replay that is not the saved reply.
func (c *intentCheck) checkResources(succ []success) {
	if len(succ) == 0 {
		return
	}
	first := succ[0]
	var concurrent, fresh, mismatch []success
	seen := map[string]bool{first.resource: true}
	for _, s := range succ[1:] {
		switch {
		case s.resource != first.resource && !seen[s.resource]:
			seen[s.resource] = true
			if s.att.Start.After(first.att.End) {
				fresh = append(fresh, s)
			} else {
				concurrent = append(concurrent, s)
			}
		case s.resource == first.resource && c.policy.AckOnly:
			// Acknowledgements are not replays: nothing to compare.
		case s.resource == first.resource:
			if s.att.Status != first.att.Status || s.body != first.body {
				mismatch = append(mismatch, s)
			} else if h := c.policy.ReplayHeader; h != "" && s.att.Start.After(first.att.End) && !headerTrue(s.att.RespHeader.Get(h)) {
				mismatch = append(mismatch, s)
			}
		}
	}
	field := first.idField
	if field == "" {
		field = "the body"
	}
	if len(concurrent) > 0 {
		w := append([]success{first}, concurrent...)
		c.add(idemcheck.MultipleCreated, witnesses(w),
			fmt.Sprintf("%d attempts with key %s were in flight together and %d distinct resources came back as successes (%s: %s): "+
				"each of those attempts executed. Concurrent duplicates must get %s or a replay of the one resource.%s",
				c.overlapping(), c.intent.Key, len(w), field, resources(w), inProgressText(c.policy), c.inTurnText()),
			map[string]any{"distinct_resources": len(w), "statuses": c.statusCounts()})
	}
	if len(fresh) > 0 {
		w := append([]success{first}, fresh...)
		c.add(idemcheck.FreshResultOnReplay, witnesses(w),
			fmt.Sprintf("attempt %d succeeded with %s %s; attempt %d sent the same key after that reply had arrived and got %d with a new resource %s: "+
				"the retry was executed again instead of replayed, and the client cannot tell a duplicate exists.",
				first.att.ID, field, short(first.resource), fresh[0].att.ID, fresh[0].att.Status, short(fresh[0].resource)),
			map[string]any{"distinct_resources": len(w)})
	}
	if len(mismatch) > 0 {
		m := mismatch[0]
		why := fmt.Sprintf("status %d, body %s", m.att.Status, short(m.att.RespBody))
		if m.att.Status == first.att.Status && m.body == first.body {
			why = fmt.Sprintf("the same body but no %q header", c.policy.ReplayHeader)
		}
		c.add(idemcheck.ReplayMismatch, witnesses([]success{first, m}),
			fmt.Sprintf("attempt %d got status %d, body %s; attempt %d, a replay of the same resource, got %s. "+
				"A replay must return the saved status and body (fields ignored by policy: %s).",
				first.att.ID, first.att.Status, short(first.att.RespBody), m.att.ID, why, ignored(c.policy.IgnoreFields)),
			map[string]any{"replays_differing": len(mismatch)})
	}
}

// checkStatuses flags replies the policy does not allow: 5xx where a
// conflict or replay was due, and anything else outside the contract.
func (c *intentCheck) checkStatuses() {
	p := c.policy
	var serverErr, unexpected, busyAfterDone, otherAfterDone []idemcheck.Attempt
	var done *idemcheck.Attempt
	for _, a := range c.attempts {
		if a.Outcome != idemcheck.Replied || p.Replay(a.Status) || !a.Variant.SameRequest() {
			continue
		}
		if a.FaultOn(idemcheck.LinkDB) {
			continue // the harness broke this attempt inside the server on purpose
		}
		if a.FaultOn(idemcheck.LinkProvider) && a.Status >= 500 {
			// The harness broke this attempt's call to the provider: a
			// failure answer is that fault's expected outcome. Its retry
			// is what is judged (effects, provider charges, statuses).
			continue
		}
		falseMismatch := a.Variant == idemcheck.Reordered && p.MismatchStatus != 0 && a.Status == p.MismatchStatus
		if d := c.completedBefore(a); d != nil && a.Status < 500 && !falseMismatch {
			// The intent had completed before a was sent: a was due the
			// saved reply. 5xx stays server-error-under-retry below.
			if done == nil {
				done = d
			}
			if p.InProgress(a.Status) {
				busyAfterDone = append(busyAfterDone, a)
			} else {
				otherAfterDone = append(otherAfterDone, a)
			}
			continue
		}
		if c.facts.Faults && p.InProgress(a.Status) {
			continue // checkStuck judges conflicts after a fault
		}
		if p.AckOnly && (a.Status >= 500 || p.InProgress(a.Status)) {
			// Not acknowledged: a consumer asks for another delivery, and
			// the sender makes it. checkAcknowledged judges the event.
			continue
		}
		if falseMismatch {
			continue // a false mismatch: checkVariants says so
		}
		others := c.metAnother(a)
		switch {
		case a.Status >= 500:
			if p.ReplayErrors && c.replaysSavedError(a) {
				continue
			}
			if others {
				serverErr = append(serverErr, a)
			} else {
				unexpected = append(unexpected, a)
			}
		case p.InProgress(a.Status) && others:
			// A conflict while another attempt of the intent is or was in flight.
		default:
			if p.ReplayErrors && c.replaysSavedError(a) {
				continue
			}
			unexpected = append(unexpected, a)
		}
	}
	if len(serverErr) > 0 {
		a := serverErr[0]
		c.add(idemcheck.ServerErrorUnderRetry, ids(serverErr),
			fmt.Sprintf("%d of %d attempts with key %s got a server error while another attempt of the same intent was in flight or done "+
				"(attempt %d: %d %s). A duplicate must get %s or a replay, never a 5xx the client would retry into.",
				len(serverErr), len(c.attempts), c.intent.Key, a.ID, a.Status, short(a.RespBody), inProgressText(p)),
			map[string]any{"server_errors": len(serverErr), "statuses": c.statusCounts()})
	}
	if len(unexpected) > 0 {
		a := unexpected[0]
		c.add(idemcheck.UnexpectedStatus, ids(unexpected),
			fmt.Sprintf("attempt %d got %d %s, which the policy allows neither as success (%v), nor as a conflict while another attempt is in flight (%s).",
				a.ID, a.Status, short(a.RespBody), p.CreatedStatuses, inProgressText(p)),
			map[string]any{"statuses": c.statusCounts()})
	}
	c.checkAfterCompletion(done, busyAfterDone, otherAfterDone)
}

// completedBefore returns the first success of the same request whose
// reply had arrived before a was sent, or nil: once the client holds a
// success, the intent is complete and every retry is due its replay.
func (c *intentCheck) completedBefore(a idemcheck.Attempt) *idemcheck.Attempt {
	var done *idemcheck.Attempt
	for i := range c.attempts {
		b := &c.attempts[i]
		if b.ID == a.ID || b.Outcome != idemcheck.Replied || !c.policy.Replay(b.Status) || !b.Variant.SameRequest() {
			continue
		}
		if b.End.Before(a.Start) && (done == nil || b.End.Before(done.End)) {
			done = b
		}
	}
	return done
}

// checkAfterCompletion reports retries sent after the intent had completed
// (a success reply had arrived) and answered with anything but a success:
// the in-progress status (busy), or another status (other). Both are a
// replay that does not match the saved reply. Server errors are left to
// server-error-under-retry.
func (c *intentCheck) checkAfterCompletion(done *idemcheck.Attempt, busy, other []idemcheck.Attempt) {
	if done == nil {
		return
	}
	origin := c.attempts[0].Start
	ms := func(t time.Time) float64 { return float64(t.Sub(origin).Microseconds()) / 1000 }
	if len(busy) > 0 {
		a := busy[0]
		c.add(idemcheck.ReplayMismatch, append([]int{done.ID}, ids(busy)...),
			fmt.Sprintf("attempt %d succeeded with %d %s, and its reply had arrived %.1f ms after the intent's first attempt started; attempt %d, "+
				"the same request with key %s, was sent after that (at %.1f ms) and got %d %s, the in-progress status. Nothing was in progress: "+
				"the intent had completed, so a retry must get the saved reply, and a client that honours the conflict waits and retries without ever "+
				"learning its result. %d retries after completion were told in progress.",
				done.ID, done.Status, short(done.RespBody), ms(done.End), a.ID, c.intent.Key, ms(a.Start), a.Status, short(a.RespBody), len(busy)),
			map[string]any{"completed_by": done.ID, "in_progress_after_completion": len(busy), "sent_after_completion_ms": ms(a.Start) - ms(done.End),
				"statuses": c.statusCounts()})
	}
	if len(other) > 0 {
		a := other[0]
		c.add(idemcheck.ReplayMismatch, append([]int{done.ID}, ids(other)...),
			fmt.Sprintf("attempt %d succeeded with %d %s; attempt %d, the same request with key %s sent after that reply had arrived, got %d %s "+
				"instead of the saved reply (%d of the retries after completion got another status: %s). A replay must return the saved status and body.",
				done.ID, done.Status, short(done.RespBody), a.ID, c.intent.Key, a.Status, short(a.RespBody), len(other), statusesOf(other)),
			map[string]any{"completed_by": done.ID, "other_status_after_completion": len(other), "statuses": c.statusCounts()})
	}
}

// statusesOf lists the distinct statuses of atts in order: "409" or "409, 423".
func statusesOf(atts []idemcheck.Attempt) string {
	var seen []int
	var out []string
	for _, a := range atts {
		if !slices.Contains(seen, a.Status) {
			seen = append(seen, a.Status)
			out = append(out, strconv.Itoa(a.Status))
		}
	}
	return strings.Join(out, ", ")
}

// inProgressText names the policy's in-progress statuses for messages:
// "409", "409 or 423", or what a policy without one expects.
func inProgressText(p idemcheck.Policy) string {
	l := p.InProgressList()
	if len(l) == 0 {
		return "none (the policy has duplicates wait for the replay)"
	}
	var out []string
	for _, s := range l {
		out = append(out, strconv.Itoa(s))
	}
	return strings.Join(out, " or ")
}

// checkEffects compares the database's count with what the wire promised.
// Effects that a more specific anomaly already explains (a changed request
// that was executed) are not counted again as duplicates.
func (c *intentCheck) checkEffects(succ []success, v variantEffects) {
	if c.obs == nil {
		return
	}
	n := c.obs.Effects
	observed := map[string]any{"effects": n, "query": c.obs.Query, "args": c.obs.Args, "statuses": c.statusCounts()}
	if len(c.obs.Keys) > 0 {
		observed["effects_by_key"] = effectsByKey(c.obs)
	}
	allowed, promised := effectBounds(c, succ, v)
	defer c.checkLate(allowed, promised)
	// The witnesses of a duplicate are the attempts that created distinct
	// resources when the wire shows them, else every attempt that was sent.
	witness := ids(c.attempts)
	if cr := creators(succ); len(cr) > 1 {
		witness = witnesses(cr)
	}
	switch {
	case n > allowed && len(v.refusedSigned) > 0 && len(succ) == 0:
		// Every delivery was refused for its signature, and the work was
		// done anyway: the signature is checked after the work.
		c.add(idemcheck.BadSignatureAccepted, ids(v.refusedSigned),
			fmt.Sprintf("%d deliveries with a forged or stale signature were refused (%s), yet the effect query counts %d effects (%s with %s): "+
				"the consumer did the work before it checked the signature, so a forged delivery is applied while its sender is told no.",
				len(v.refusedSigned), statusesOf(v.refusedSigned), n, c.obs.Query, strings.Join(c.obs.Args, ", ")),
			observed)
	case n > allowed:
		c.add(idemcheck.DuplicateEffect, witness,
			fmt.Sprintf("%d attempts sent key %s for one intent, and the effect query counts %d effects where %d may exist (%s). One intent must leave exactly one effect.%s",
				len(c.attempts), c.intent.Key, n, allowed, effectQueryText(c.obs), c.scheduleText()+c.cutAfterText()),
			observed)
	case n < promised && c.effectsPending(promised) != "":
		// Not lost yet: the effect may still land (the round is
		// undecided, see gatherEvidence).
	case n < promised:
		first := c.attempts[0].ID
		if len(succ) > 0 {
			first = succ[0].att.ID
		}
		if c.policy.AckOnly {
			if a, ok := c.firstAck(); ok {
				c.add(idemcheck.LostEffect, []int{a.ID},
					fmt.Sprintf("attempt %d delivered event %s and was acknowledged with %d, so the sender will not deliver it again; yet the effect query counts %d "+
						"where %d acknowledged events must have left theirs (%s): the event was skipped, and nothing will ever apply it.",
						a.ID, a.Key, a.Status, n, promised, effectQueryText(c.obs)),
					observed)
				return
			}
		}
		c.add(idemcheck.LostEffect, []int{first},
			fmt.Sprintf("the client was told of %d successful executions (attempt %d first), yet the effect query counts %d (%s): work the client was promised is not there.",
				promised, first, n, effectQueryText(c.obs)),
			observed)
	}
}

// scheduleText says, for an intent whose race was scheduled, what the
// database link did: "" otherwise.
func (c *intentCheck) scheduleText() string {
	b := c.scheduled
	if b == nil {
		return ""
	}
	if b.InTurn {
		return c.inTurnText()
	}
	return fmt.Sprintf(" The race was scheduled, not timed: the database link held the first write of each of %d attempts until %s, "+
		"then released them together, so all %d had read the key before any wrote it (write-held and writes-released events of burst %d).",
		b.Held, releaseText[b.Release], b.Held, b.ID)
}

// cutAfterText says, for an intent whose attempt failed because the
// database link was cut after its effect write committed (db-cut-after),
// why that failure left an effect: "" otherwise.
func (c *intentCheck) cutAfterText() string {
	for _, a := range c.attempts {
		if !strings.HasPrefix(a.Fault, "db-cut-after") && !strings.Contains(a.Fault, "+db-cut-after") {
			continue
		}
		var got string
		switch {
		case a.Outcome != idemcheck.Replied:
			got = "got no reply (the target died of the dropped connection, or dropped the request)"
		case a.Status >= 200 && a.Status < 300:
			continue
		default:
			got = fmt.Sprintf("was answered %d", a.Status)
		}
		return fmt.Sprintf(" Attempt %d's effect write reached the database, which committed it, and the database link was then cut before "+
			"the answer reached the target, as a dropped connection does; the attempt %s, and the retry with the same key was executed "+
			"again: the target took a database error for \"nothing happened\" (it released the key, or kept it only in the memory of a "+
			"process that died), where the effect had committed.", a.ID, got)
	}
	return ""
}

// inTurnText says, for an intent whose burst's writes were released one at
// a time, what the database link did: "" otherwise.
func (c *intentCheck) inTurnText() string {
	b := c.scheduled
	if b == nil || !b.InTurn {
		return ""
	}
	order := ""
	if len(c.turns) > 1 {
		conns := make([]string, len(c.turns))
		for i, e := range c.turns {
			conns[i] = fmt.Sprint(e.Conn)
		}
		order = fmt.Sprintf(" (the writes of connections %s, in that order)", strings.Join(conns, ", "))
	}
	return fmt.Sprintf(" The race was scheduled, not timed: the database link held the first write of each of %d attempts until %s, "+
		"so all %d had read the key before any wrote it, then released them one at a time, the last held first%s, each once the database "+
		"had answered the one before and the target had gone quiet: every attempt wrote after the ones before it had written and finished, "+
		"which is when a write that overwrites another's (a claim or a saved reply taken by last writer wins) shows "+
		"(write-held and writes-released events of burst %d).",
		b.Held, releaseText[b.Release], b.Held, order, b.ID)
}

// turns returns the write-held events of intent that were released, in
// the order they were.
func turns(evs []idemcheck.Event, intent string) []idemcheck.Event {
	var out []idemcheck.Event
	for _, e := range evs {
		if e.Kind == idemcheck.WriteHeld && e.Intent == intent && e.Order > 0 {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b idemcheck.Event) int { return a.Order - b.Order })
	return out
}

// firstAck returns the first acknowledged delivery of an event.
func (c *intentCheck) firstAck() (idemcheck.Attempt, bool) {
	var first *idemcheck.Attempt
	for i, a := range c.attempts {
		if a.Variant.Delivers() && a.Outcome == idemcheck.Replied && c.policy.Replay(a.Status) && (first == nil || a.End.Before(first.End)) {
			first = &c.attempts[i]
		}
	}
	if first == nil {
		return idemcheck.Attempt{}, false
	}
	return *first, true
}

func (c *intentCheck) hasSameRequest() bool {
	for _, a := range c.attempts {
		if a.Variant.SameRequest() && a.Outcome != idemcheck.NotSent {
			return true
		}
	}
	return false
}

func (c *intentCheck) add(kind idemcheck.Kind, attempts []int, explanation string, observed map[string]any) {
	byID := make(map[int]idemcheck.Attempt, len(c.attempts))
	for _, a := range c.attempts {
		byID[a.ID] = a
	}
	var ev []idemcheck.Evidence
	for i, id := range attempts {
		if i == MaxEvidence {
			break
		}
		a := byID[id]
		e := idemcheck.Evidence{Attempt: a.ID, Step: a.Step, Status: a.Status, Body: clip(a.RespBody, 512), Error: a.Error}
		if h := c.policy.ReplayHeader; h != "" && a.RespHeader != nil {
			e.Replayed = a.RespHeader.Get(h)
		}
		ev = append(ev, e)
	}
	c.out = append(c.out, idemcheck.Anomaly{
		Kind: kind, Class: kind.Class(), Check: c.intent.Check, Intent: c.intent.ID, Key: c.intent.Key,
		Explanation: explanation, Attempts: attempts, Evidence: ev, Observed: observed,
	})
}

// metAnother reports whether another attempt of the intent started before
// a ended: one a could have met at the server.
func (c *intentCheck) metAnother(a idemcheck.Attempt) bool {
	for i := range c.attempts {
		b := &c.attempts[i]
		if b.ID != a.ID && b.Outcome != idemcheck.NotSent && b.Start.Before(a.End) {
			return true
		}
	}
	return false
}

// replaysSavedError reports whether an earlier attempt, finished before a
// started, got the very same error reply: a saved error being replayed.
func (c *intentCheck) replaysSavedError(a idemcheck.Attempt) bool {
	for _, b := range c.attempts {
		if b.ID != a.ID && b.Outcome == idemcheck.Replied && b.End.Before(a.Start) &&
			b.Status == a.Status && canonicalBody(b.RespBody, c.policy.IgnoreFields) == canonicalBody(a.RespBody, c.policy.IgnoreFields) {
			return true
		}
	}
	return false
}

// overlapping counts the attempts that overlapped another attempt of the intent.
func (c *intentCheck) overlapping() int {
	n := 0
	for i, a := range c.attempts {
		for j, b := range c.attempts {
			if i != j && a.Overlaps(b) {
				n++
				break
			}
		}
	}
	return n
}

// statusCounts summarises the intent's outcomes: {"201": 1, "409": 31, "unknown": 0}.
func (c *intentCheck) statusCounts() map[string]int { return statusCounts(c.attempts) }

// statusCounts summarises attempts' outcomes.
func statusCounts(atts []idemcheck.Attempt) map[string]int {
	m := map[string]int{}
	for _, a := range atts {
		if a.Outcome == idemcheck.Replied {
			m[strconv.Itoa(a.Status)]++
		} else {
			m[string(a.Outcome)]++
		}
	}
	return m
}

func witnesses(s []success) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.att.ID
	}
	return out
}

func ids(atts []idemcheck.Attempt) []int {
	out := make([]int, len(atts))
	for i, a := range atts {
		out[i] = a.ID
	}
	return out
}

func resources(s []success) string {
	var r []string
	for i, x := range s {
		if i == 3 {
			r = append(r, fmt.Sprintf("and %d more", len(s)-3))
			break
		}
		r = append(r, short(x.resource))
	}
	return strings.Join(r, ", ")
}

func ignored(f []string) string {
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, ", ")
}

func short(s string) string { return clip(s, 120) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func burstProtocol(b []idemcheck.Burst) string {
	p := ""
	for _, x := range b {
		switch {
		case p == "":
			p = x.Protocol
		case p != x.Protocol:
			return "mixed"
		}
	}
	return p
}

func medianSpreadUS(b []idemcheck.Burst) int64 {
	if len(b) == 0 {
		return 0
	}
	d := make([]time.Duration, len(b))
	for i, x := range b {
		d[i] = x.Spread
	}
	slices.Sort(d)
	return d[len(d)/2].Microseconds()
}

// staleSkewAccepted remarks on a run signed with a clock shifted past the
// tolerance senders document (--sign-skew) whose deliveries were
// acknowledged: the consumer accepts replays of old deliveries. One
// remark for the run, on the first acknowledged attempt, with the count;
// none for a scheme that signs no timestamp (github, shopify).
func staleSkewAccepted(h *idemcheck.History) []idemcheck.Anomaly {
	g := h.Run.Target.Signing
	if g == nil || !idemcheck.SignsTime(g.Scheme) {
		// A signature without a timestamp is as good an hour late.
		return nil
	}
	skew := time.Duration(g.SkewMS) * time.Millisecond
	if skew.Abs() <= idemcheck.SignatureTolerance {
		return nil
	}
	var acked []idemcheck.Attempt
	for _, a := range h.Attempts {
		if a.Outcome == idemcheck.Replied && a.Variant.SameRequest() && h.Run.Policy.Replay(a.Status) {
			acked = append(acked, a)
		}
	}
	if len(acked) == 0 {
		return nil
	}
	first := acked[0]
	return []idemcheck.Anomaly{{
		Kind: idemcheck.StaleSignatureAccepted, Check: first.Check, Intent: first.Intent, Key: first.Key, Attempts: []int{first.ID},
		Explanation: fmt.Sprintf("every attempt was signed with a clock %s off, as the run asked, past the %s tolerance senders document, and %d of them "+
			"were acknowledged (attempt %d first, %d): the consumer accepts signatures far outside its window, so a captured delivery can be replayed.",
			skew, idemcheck.SignatureTolerance, len(acked), first.ID, first.Status),
		Observed: map[string]any{"skew_ms": g.SkewMS, "acknowledged": len(acked)},
	}}
}
