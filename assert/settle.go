package assert

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Effects that land after the reply (a 202 Accepted, a background worker,
// a queue) are judged once they settled: a run with --settle polls each
// intent's count until it stayed the same for a quiet period, within a
// bound, and records what the polls did (Observation.Settle). The checker
// never calls an effect lost while it may still be pending:
//
//   - a count still changing at the bound (Observation.Unsettled) leaves
//     its intent's round undecided, with the reason;
//   - an accepted reply (Policy.AcceptedStatuses) whose effect was counted
//     at the reply, without settling, and found short, is undecided too:
//     the worker may not have run yet.
//
// A duplicate already counted is a duplicate either way: effects do not
// disappear by waiting.

// effectsPending says why the intent's effect count cannot be judged lost
// yet; "" when it can. promised is how many effects the wire promised.
func (c *intentCheck) effectsPending(promised int64) string {
	o := c.obs
	if o == nil || o.Effects >= promised && !o.Unsettled() {
		return ""
	}
	if why := operationsPending(o); why != "" {
		return why
	}
	if o.Unsettled() && o.Settle.Awaited && o.Effects == 0 && o.Settle.Changes == 0 {
		s := o.Settle
		return fmt.Sprintf("it was answered %d (accepted, effect pending), and no effect had appeared when the settle bound ran out "+
			"(%v, %s): the work is still pending or was lost, and the count alone cannot tell which",
			c.acceptedStatus(), s.Bound, count(s.Polls, "poll"))
	}
	if s := o.Settle; o.Unsettled() && s.Awaited && s.Await > 1 && o.Effects < int64(s.Await) {
		return fmt.Sprintf("it was answered accepted under %d keys, each an operation owing its effect, and %d had appeared when the settle bound ran out "+
			"(%v, %s): the others are still pending or were lost, and the count alone cannot tell which",
			s.Await, o.Effects, s.Bound, count(s.Polls, "poll"))
	}
	if o.Unsettled() {
		s := o.Settle
		return fmt.Sprintf("its effect count was still changing when the settle bound ran out (%d, then %d, %s over %v in %s; quiet period %v): "+
			"its effects had not settled, so neither a loss nor a duplicate can be told yet",
			s.First, o.Effects, times(s.Changes), s.Waited.Round(time.Millisecond), count(s.Polls, "poll"), s.Quiet)
	}
	if o.Settle != nil {
		return "" // settled short: the effect is lost
	}
	var accepted []int
	for _, a := range c.attempts {
		if a.Outcome == idemcheck.Replied && c.policy.Accepted(a.Status) {
			accepted = append(accepted, a.ID)
		}
	}
	if len(accepted) == 0 {
		return ""
	}
	return idemcheck.Phrasef("%s answered %d (accepted, effect pending; attempt %d first), and its effects were counted right after the reply "+
		"(%d counted, %d due), before a background worker need have written them: count effects once they settle (%s)",
		count(len(accepted), "attempt"), c.acceptedStatus(), accepted[0], o.Effects, promised, idemcheck.Field("Options.Settle")).In(c.words)
}

// acceptedStatus is the first accepted status the intent was answered with.
func (c *intentCheck) acceptedStatus() int {
	for _, a := range c.attempts {
		if a.Outcome == idemcheck.Replied && c.policy.Accepted(a.Status) {
			return a.Status
		}
	}
	return 0
}

// promisedEffects is how many effects the wire promised the intent, and
// how many it may have left (see checkEffects), without adding anomalies.
func (c *intentCheck) promisedEffects() (allowed, promised int64) {
	out := c.out
	succ := c.successes()
	v := c.checkVariants(succ)
	v.add(c.checkCorrectedRetry())
	v.add(c.checkKeySyntax())
	c.out = out
	return effectBounds(c, succ, v)
}

// effectBounds is what checkEffects allows and expects of the intent's
// effect count.
func effectBounds(c *intentCheck, succ []success, v variantEffects) (allowed, promised int64) {
	allowed = int64(v.explained)
	if c.hasSameRequest() {
		allowed++
	}
	promised = int64(v.promised)
	if len(succ) > 0 {
		promised++
	}
	return allowed, promised
}

// checkLate compares the intent's count taken again after the run's last
// check with the one it was judged by: an effect more than it was judged
// with, and more than it may have, appeared after the judgement.
func (c *intentCheck) checkLate(allowed, promised int64) {
	allowed = max(allowed, promised)
	if c.obs == nil || c.recount == nil {
		return
	}
	o, r := c.obs, c.recount
	if r.Effects <= o.Effects || r.Effects <= allowed {
		return
	}
	observed := map[string]any{
		"effects": o.Effects, "effects_at": o.At, "late_effects": r.Effects, "late_at": r.At,
		"query": o.Query, "args": o.Args, "statuses": c.statusCounts(),
	}
	after := ""
	if !o.At.IsZero() && !r.At.IsZero() {
		after = fmt.Sprintf(" %v later", r.At.Sub(o.At).Round(time.Millisecond))
	}
	settled := "counted at the reply"
	if o.Settle != nil {
		settled = fmt.Sprintf("counted once it had stayed the same for %v", o.Settle.Quiet)
	}
	c.add(idemcheck.LateDuplicateEffect, ids(c.attempts),
		fmt.Sprintf("the intent's effects were judged at %d (%s), and counted again after the last check%s the effect query finds %d where %d may exist (%s): "+
			"a second effect appeared after the reply and after it was judged, as a background job run again after its effect committed leaves one.",
			o.Effects, settled, after+":", r.Effects, allowed, effectQueryText(o)),
		observed)
}

// operationsPending says why an intent whose accepted operations were
// followed on their status monitors (Settle.Operations) cannot be judged
// short: one was still pending, or unreadable, when the bound ran out, or
// every one failed, so the API itself says no effect was owed. "" when
// every operation finished, or none was followed: a count short of a
// finished operation is a lost effect.
func operationsPending(o *idemcheck.Observation) string {
	if o.Settle == nil || len(o.Settle.Operations) == 0 {
		return ""
	}
	ops := o.Settle.Operations
	failed := 0
	for _, op := range ops {
		switch {
		case op.Over == idemcheck.OperationFailed:
			failed++
		case op.Over == "" && op.URL != "" && op.Error != "":
			return fmt.Sprintf("the status monitor of attempt %d (GET %s) could not be read when the settle bound ran out (%s): "+
				"the operation may still be pending, and the count alone cannot tell", op.Attempt, op.URL, op.Error)
		case op.Over == "" && op.URL != "":
			return fmt.Sprintf("the status monitor of attempt %d (GET %s) still said %q after %s, when the settle bound ran out (%v): "+
				"the operation is pending, so its effect is not lost yet", op.Attempt, op.URL, op.State, count(op.Polls, "read"), o.Settle.Bound)
		}
	}
	if failed == len(ops) {
		return fmt.Sprintf("every accepted operation of the intent failed (the status monitor of attempt %d said %q): "+
			"the API owes no effect for it, so its count shows nothing about idempotency", ops[0].Attempt, ops[0].State)
	}
	return ""
}
