package assert

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck"
)

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
