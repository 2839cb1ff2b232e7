package assert

import (
	"fmt"

	"github.com/idemcheck/idemcheck"
)

// The rules of corrected-retry and key-syntax. Their attempts all carry
// variants that are not the intent's plain request, so the general rules
// (statuses, resources) leave them alone and these methods judge them
// whole, effects included.

// add joins the effects of another group of changed requests.
func (v *variantEffects) add(w variantEffects) {
	v.explained += w.explained
	v.promised += w.promised
}

// firstOf returns the intent's first attempt with variant v, or nil.
func (c *intentCheck) firstOf(v idemcheck.Variant) *idemcheck.Attempt {
	for i := range c.attempts {
		if c.attempts[i].Variant == v {
			return &c.attempts[i]
		}
	}
	return nil
}

// rejected reports whether a was answered with a 4xx: refused as a bad request.
func rejected(a *idemcheck.Attempt) bool {
	return a != nil && a.Outcome == idemcheck.Replied && a.Status >= 400 && a.Status < 500
}

func replied(a *idemcheck.Attempt) bool { return a != nil && a.Outcome == idemcheck.Replied }

// checkCorrectedRetry judges a rejected body followed by its correction
// under the same key. Where the policy does not save rejected requests, the
// correction must be executed; where it does, the correction must get the
// saved rejection or the mismatch status. When the invalid body was not
// rejected, the check's scenario did not happen (missedScenario says so)
// and nothing is judged, but what executed is counted as allowed effects.
func (c *intentCheck) checkCorrectedRetry() variantEffects {
	var v variantEffects
	p := c.policy
	rej, cor := c.firstOf(idemcheck.InvalidBody), c.firstOf(idemcheck.Corrected)
	if rej == nil && cor == nil {
		return v
	}
	if replied(rej) && p.Replay(rej.Status) {
		v.explained++ // the invalid body was executed: the scenario missed
		v.promised++
	}
	if !replied(cor) {
		return v
	}
	ok2xx := p.Replay(cor.Status)
	if ok2xx {
		v.explained++
		v.promised++
	}
	if !rejected(rej) {
		return v
	}
	savedReply := cor.Status == rej.Status &&
		canonicalBody(cor.RespBody, p.IgnoreFields) == canonicalBody(rej.RespBody, p.IgnoreFields)
	mismatch := p.MismatchStatus != 0 && cor.Status == p.MismatchStatus
	w := []int{rej.ID, cor.ID}
	observed := map[string]any{"rejected_status": rej.Status, "correction_status": cor.Status}
	switch {
	case ok2xx && !p.SaveRejected:
		// The rule held: the rejection saved nothing, the correction ran.
	case ok2xx:
		c.add(idemcheck.ReplayMismatch, w,
			fmt.Sprintf("attempt %d was rejected with %d %s; its correction, attempt %d under the same key %s, was executed (%d %s), while the policy "+
				"says rejected requests are saved (save_rejected): the correction must get the saved rejection or %d.",
				rej.ID, rej.Status, short(rej.RespBody), cor.ID, c.intent.Key, cor.Status, short(cor.RespBody), p.MismatchStatus), observed)
	case p.SaveRejected && (savedReply || mismatch):
		// The rule held: the key keeps the rejection.
	case p.SaveRejected && cor.Status == rej.Status:
		c.add(idemcheck.ReplayMismatch, w,
			fmt.Sprintf("attempt %d was rejected with %d %s; its correction, attempt %d under the same key %s, got %d with another body %s: "+
				"where rejections are saved (save_rejected), the correction must get the saved reply itself.",
				rej.ID, rej.Status, short(rej.RespBody), cor.ID, c.intent.Key, cor.Status, short(cor.RespBody)), observed)
	case cor.Status == rej.Status || mismatch:
		how := fmt.Sprintf("got %d %s, the rejection of attempt %d again", cor.Status, short(cor.RespBody), rej.ID)
		if !savedReply && mismatch {
			how = fmt.Sprintf("got %d %s, the mismatch status: the rejected request's fingerprint holds the key", cor.Status, short(cor.RespBody))
		} else if !savedReply {
			how = fmt.Sprintf("got %d %s, the status attempt %d was rejected with", cor.Status, short(cor.RespBody), rej.ID)
		}
		c.add(idemcheck.RejectedRequestSaved, w,
			fmt.Sprintf("attempt %d sent a body the target refused before doing any work (%d %s); attempt %d then sent the corrected body, the endpoint's "+
				"own request, under the same key %s and %s, instead of being executed. The rejection was saved under the key, while the policy says a "+
				"rejected request saves nothing (Stripe: nothing is saved when validation fails), so a client that fixes its request and retries with "+
				"its key can never complete it.",
				rej.ID, rej.Status, short(rej.RespBody), cor.ID, c.intent.Key, how), observed)
	case p.InProgressStatus != 0 && cor.Status == p.InProgressStatus:
		c.add(idemcheck.StuckKey, w,
			fmt.Sprintf("attempt %d was rejected with %d and its reply had arrived; its correction, attempt %d under the same key %s, was told the key is "+
				"in progress (%d): the rejected request's claim on the key was never released.",
				rej.ID, rej.Status, cor.ID, c.intent.Key, cor.Status), observed)
	case p.SaveRejected:
		c.unexpected(*cor, fmt.Sprintf("the policy saves rejected requests, so the correction must get the saved %d or %d", rej.Status, p.MismatchStatus))
	default:
		c.unexpected(*cor, "a rejected request saves nothing, so its correction under the same key must be executed")
	}
	return v
}

// checkKeySyntax judges malformed keys (each must get the policy's
// invalid-key status and run nothing) and two long keys that differ only
// in their last character (two intents: both must execute, as two
// resources). A malformed key taken, or refused with another status, is a
// conformance remark (nothing was lost or duplicated), which counts
// against the verdict only where the policy requires key syntax; two long
// keys taken for one (a key cut short into another's record) is a failure.
func (c *intentCheck) checkKeySyntax() variantEffects {
	var v variantEffects
	p := c.policy
	for _, a := range c.attempts {
		if !a.Variant.MalformedKey() || a.Outcome != idemcheck.Replied {
			continue
		}
		ok2xx := p.Replay(a.Status)
		switch {
		case p.InvalidKeyStatus == 0, a.Variant == idemcheck.EmptyKey && p.MissingKeyStatus == 0:
			// No rule: the policy has no status for malformed keys, or the
			// key is optional and an empty key is no key.
			if ok2xx {
				v.explained++
			}
		case a.Status == p.InvalidKeyStatus:
		case a.Variant == idemcheck.EmptyKey && a.Status == p.MissingKeyStatus:
		case ok2xx:
			v.explained++
			c.add(idemcheck.MalformedKeyAccepted, []int{a.ID},
				fmt.Sprintf("attempt %d sent %s and got %d %s: the request was executed under a key that is not a valid key (IETF Idempotency-Key "+
					"draft, section 2.1: a Structured Field string; Stripe: at most %d characters), where the policy refuses such a key with %d. "+
					"A store that takes it may cut, split or mangle it, so the retries of this request are not recognised.",
					a.ID, describeKey(a, p.KeyHeader), a.Status, short(a.RespBody), idemcheck.MaxKeyLen, p.InvalidKeyStatus),
				map[string]any{"key_length": len(a.Key)})
		default:
			// Refused with another status: the key was not taken, so
			// nothing is lost; a remark on the status, not a failure.
			c.unexpected(a, fmt.Sprintf("a malformed key must get %d", p.InvalidKeyStatus))
			c.out[len(c.out)-1].Class = idemcheck.ConformanceFinding
		}
	}

	one, two := c.firstOf(idemcheck.LongKey), c.firstOf(idemcheck.LongKeyTwin)
	if replied(one) && p.Replay(one.Status) {
		v.explained++
		v.promised++
	}
	if !replied(two) {
		return v
	}
	ok2xx := p.Replay(two.Status)
	if !replied(one) || !p.Replay(one.Status) {
		// The first long key was not executed: nothing to compare with.
		if ok2xx {
			v.explained++
			v.promised++
		}
		return v
	}
	first := c.asSuccess(*one)
	common := commonPrefix(one.Key, two.Key)
	w := []int{one.ID, two.ID}
	observed := map[string]any{"key_length": len(one.Key), "common_prefix": common}
	switch {
	case ok2xx && (c.sameResource(first, *two) || p.ReplayHeader != "" && headerTrue(two.RespHeader.Get(p.ReplayHeader))):
		c.add(idemcheck.OverDeduplication, w,
			fmt.Sprintf("attempt %d sent a valid key of %d characters and got %d with %s; attempt %d sent another key of %d characters, equal to the "+
				"first in its first %d characters only, with the same body, and got %d with the first key's result: two keys were taken for one, so "+
				"one client is answered with another's response. The store keeps only part of the key (cut short, or hashed from a prefix), or "+
				"deduplicates by body (distinct-keys tells which).",
				one.ID, len(one.Key), one.Status, short(first.resource), two.ID, len(two.Key), common, two.Status), observed)
	case ok2xx:
		v.explained++
		v.promised++
	case p.InProgressStatus != 0 && two.Status == p.InProgressStatus, p.MismatchStatus != 0 && two.Status == p.MismatchStatus:
		c.add(idemcheck.OverDeduplication, w,
			fmt.Sprintf("attempt %d sent a valid key of %d characters and was executed; attempt %d sent another key, equal to the first in its first %d "+
				"characters only, and got %d %s: the key store took the second key for the first (it keeps only part of the key, or deduplicates by body).",
				one.ID, len(one.Key), two.ID, common, two.Status, short(two.RespBody)), observed)
	default:
		c.unexpected(*two, "a second valid key is a second intent and must be executed like the first")
	}
	return v
}

// asSuccess reads a success reply's resource the way successes does.
func (c *intentCheck) asSuccess(a idemcheck.Attempt) success {
	if c.policy.AckOnly {
		return success{att: a, resource: "ack", idField: "ack"}
	}
	body := canonicalBody(a.RespBody, c.policy.IgnoreFields)
	id, ptr := resourceID(a.RespBody, a.Body, c.policy.ResourceID)
	s := success{att: a, resource: id, idField: ptr, body: body}
	if ptr == "" {
		s.resource = "body:" + body
	}
	return s
}

// missedScenario says why the intent's scenario did not happen as meant,
// so that its check is inconclusive rather than passed: a key still in
// progress with no lease declared (stuckWithoutLease), or a changed
// request whose rule needs an answer it did not get (missedCorrection,
// missedKeySyntax). It reads the variants the attempts carry, never the
// check's name, and returns "" when the scenario happened.
func (c *intentCheck) missedScenario() string {
	for _, missed := range []func() string{c.stuckWithoutLease, c.missedTakeover, c.missedCorrection, c.missedKeySyntax} {
		if why := missed(); why != "" {
			return why
		}
	}
	return ""
}

// missedTakeover: a check whose retry must take the key over from a frozen
// first attempt (lease-fencing) says something only when the retry was
// answered as executed (a success) before the first attempt, resumed,
// was answered. A retry still told the key is in progress, or answered
// only after the first, met a lease longer than the one declared (or a
// lock the first held): no takeover happened, and no fence was tested.
func (c *intentCheck) missedTakeover() string {
	if !c.facts.RetryTakesOver || len(c.attempts) < 2 {
		return ""
	}
	first := c.attempts[0]
	var retries, told []idemcheck.Attempt
	for _, a := range c.attempts[1:] {
		if a.Step != 2 {
			continue
		}
		retries = append(retries, a)
		if a.Outcome == idemcheck.Replied && c.policy.InProgress(a.Status) {
			told = append(told, a)
		}
	}
	if len(retries) == 0 {
		return "no retry was sent while the first attempt was frozen"
	}
	last := retries[len(retries)-1]
	// The retry took over when it was answered while the first was still
	// frozen: before the hold was released, where the history says when
	// (a retry waiting on the first's locks is answered only after, and,
	// both let go at once, may still end before the first does); else
	// before the first's own answer.
	whileFrozen := first.Outcome != idemcheck.Replied || last.End.Before(first.End)
	if !c.released.IsZero() {
		whileFrozen = last.End.Before(c.released)
	}
	tookOver := last.Outcome == idemcheck.Replied && c.policy.Replay(last.Status) && whileFrozen
	switch {
	case tookOver:
		return ""
	case len(told) > 0:
		// The last retry may still have been on its way when the wait
		// ended (and was answered once the first had finished): the ones
		// told the key was in progress say why no takeover came.
		return idemcheck.Phrasef("%d %s sent while the first attempt was frozen (the first %.1fs after the first attempt, past the declared lease of %v) "+
			"%s told the key was still in progress (%d): the target's lease is longer than the one declared, no retry took the key over, and "+
			"no fence was put to the test; give the target's lease (%s)", len(told), plural(len(told), "retry", "retries"),
			told[0].Start.Sub(first.Start).Seconds(), c.policy.Lease, plural(len(told), "was", "were all"), told[len(told)-1].Status,
			idemcheck.Setting("Policy.Lease")).In(c.words)
	case last.Outcome != idemcheck.Replied:
		return fmt.Sprintf("the retry sent while the first attempt was frozen (attempt %d) was not answered: %s", last.ID, last.Error)
	case c.policy.Replay(last.Status):
		return fmt.Sprintf("the retry sent while the first attempt was frozen (attempt %d) was answered only after the first had resumed and "+
			"finished: it waited for the first instead of taking the key over, so no fence was put to the test", last.ID)
	}
	return fmt.Sprintf("the retry sent while the first attempt was frozen (attempt %d) was answered %d, not as executed: "+
		"no retry took the key over, and no fence was put to the test", last.ID, last.Status)
}

// missedCorrection: an invalid body and its correction (corrected-retry)
// say something only when both were sent and answered, the invalid body
// with a 4xx rejection.
func (c *intentCheck) missedCorrection() string {
	rej, cor := c.firstOf(idemcheck.InvalidBody), c.firstOf(idemcheck.Corrected)
	switch {
	case rej == nil && cor == nil:
		return ""
	case rej == nil || cor == nil:
		return "the invalid body and its correction were not both sent"
	case !replied(rej):
		return fmt.Sprintf("the invalid body (attempt %d) was not answered: %s", rej.ID, rej.Error)
	case !rejected(rej):
		return idemcheck.Phrasef("the target answered %d to the invalid body (attempt %d) where a 4xx rejection was due, so there was no rejected "+
			"request to correct; give a body it refuses (%s)", rej.Status, rej.ID, idemcheck.Field("InvalidBody")).In(c.words)
	case !replied(cor):
		return fmt.Sprintf("the correction (attempt %d) was not answered: %s", cor.ID, cor.Error)
	}
	return ""
}

// missedKeySyntax: malformed and long keys (key-syntax) say something only
// when every one of them was answered, and two long keys can be compared
// only when the first was executed.
func (c *intentCheck) missedKeySyntax() string {
	for _, a := range c.attempts {
		if (a.Variant.MalformedKey() || a.Variant == idemcheck.LongKey || a.Variant == idemcheck.LongKeyTwin) && a.Outcome != idemcheck.Replied {
			return fmt.Sprintf("attempt %d (%s) was not answered: %s", a.ID, a.Variant, a.Error)
		}
	}
	if one := c.firstOf(idemcheck.LongKey); one != nil && !c.policy.Replay(one.Status) {
		return fmt.Sprintf("the target did not execute the request under a valid key of %d characters (attempt %d: %d %s), so two long keys "+
			"could not be compared", len(one.Key), one.ID, one.Status, short(one.RespBody))
	}
	return ""
}

// describeKey says what was wrong with a malformed key.
func describeKey(a idemcheck.Attempt, header string) string {
	switch a.Variant {
	case idemcheck.EmptyKey:
		return "an empty " + header + " header"
	case idemcheck.OverlongKey:
		return fmt.Sprintf("a key of %d characters (limit %d)", len(a.Key), idemcheck.MaxKeyLen)
	case idemcheck.ListKey:
		return fmt.Sprintf("the key %q, which holds a comma and so reads as a list of two keys", short(a.Key))
	}
	return fmt.Sprintf("the key %q", short(a.Key))
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
