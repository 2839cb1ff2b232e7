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

func ids(atts []idemcheck.Attempt) []int {
	out := make([]int, len(atts))
	for i, a := range atts {
		out[i] = a.ID
	}
	return out
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
