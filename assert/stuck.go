package assert

import (
	"fmt"

	"github.com/idemcheck/idemcheck"
)

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
