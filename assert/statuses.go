package assert

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

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
