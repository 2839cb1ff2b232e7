package assert

import (
	"fmt"

	"github.com/idemcheck/idemcheck"
)

// variantEffects counts what the changed requests of an intent may have
// left in the database.
type variantEffects struct {
	// explained counts changed requests whose execution is already
	// reported (or is allowed): each may have left one effect.
	explained int
	// promised counts changed requests the client was told succeeded as
	// new work: each must have left one.
	promised int
	// refusedSigned are the deliveries with a forged or stale signature
	// the consumer refused: they must have run nothing.
	refusedSigned []idemcheck.Attempt
}

// checkVariants judges the attempts that sent a changed request under the
// intent's key (or without it) against the rule of their check.
func (c *intentCheck) checkVariants(succ []success) variantEffects {
	p := c.policy
	var v variantEffects
	var orig *success
	if len(succ) > 0 {
		orig = &succ[0]
	}
	failingRan := false
	for _, a := range c.attempts {
		if a.Variant == idemcheck.Failing && a.Outcome == idemcheck.Replied && p.Replay(a.Status) && !failingRan {
			failingRan = true // a failed request that later succeeded left one effect
			v.explained++
			if !p.ReplayErrors {
				// Errors are not saved (a consumer's failed delivery): the
				// success that followed must have applied the effect.
				v.promised++
			}
		}
		if a.Outcome != idemcheck.Replied || a.Variant == idemcheck.Original || a.Variant == idemcheck.Failing {
			continue
		}
		switch a.Variant {
		case idemcheck.Reordered:
			c.reordered(orig, a)
		case idemcheck.OtherBody:
			c.otherBody(orig, a, &v)
		case idemcheck.OtherEndpoint:
			c.otherEndpoint(orig, a, &v)
		case idemcheck.OtherKey:
			c.otherKey(orig, a, &v)
		case idemcheck.OtherTenant:
			c.otherTenant(orig, a, &v)
		case idemcheck.BadSignature, idemcheck.StaleSignature:
			c.badSignature(a, &v)
		case idemcheck.NoKey:
			c.noKey(a, &v)
		}
	}
	return v
}

// reordered judges a's answer to the original's JSON reordered: a server
// that refuses it as another payload compares bytes.
func (c *intentCheck) reordered(orig *success, a idemcheck.Attempt) {
	p := c.policy
	if p.MismatchStatus != 0 && a.Status == p.MismatchStatus && !p.Replay(a.Status) {
		c.add(idemcheck.FalseMismatch, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d sent the same JSON as the original with its members reordered and white space changed, and got %d %s: "+
				"the server compares bytes, not meaning, so a client that re-serialises its request on retry is refused.",
				a.ID, a.Status, short(a.RespBody)), nil)
	}
}

// otherBody judges a's answer to the intent's key reused with another
// body, which must be refused.
func (c *intentCheck) otherBody(orig *success, a idemcheck.Attempt, v *variantEffects) {
	p := c.policy
	switch {
	case p.Replay(a.Status):
		what := "executed it as new work"
		if orig != nil && c.sameResource(*orig, a) {
			what = "answered with the first request's saved result, as if the body had been the same"
		} else {
			v.explained++
		}
		c.add(idemcheck.PayloadMismatchAccepted, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d reused key %s with a different body (%s) and got %d: the server %s. A reused key with another payload must be rejected with %d.",
				a.ID, a.Key, short(a.Body), a.Status, what, p.MismatchStatus), nil)
	case a.Status == p.MismatchStatus:
	case a.Status >= 500:
		c.add(idemcheck.ServerErrorUnderRetry, []int{a.ID},
			fmt.Sprintf("attempt %d reused key %s with a different body and got %d %s where a %d rejection was due.",
				a.ID, a.Key, a.Status, short(a.RespBody), p.MismatchStatus), nil)
	default:
		c.unexpected(a, fmt.Sprintf("a key reused with another body must get %d", p.MismatchStatus))
	}
}

// otherEndpoint judges a's answer to the intent's key sent to another
// endpoint, which must run as its own operation.
func (c *intentCheck) otherEndpoint(orig *success, a idemcheck.Attempt, v *variantEffects) {
	p := c.policy
	if !p.Replay(a.Status) {
		return
	}
	if orig != nil && (c.sameResource(*orig, a) || headerTrue(a.RespHeader.Get(p.ReplayHeader)) && p.ReplayHeader != "") {
		c.add(idemcheck.CrossEndpointReplay, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d sent key %s to %s %s and was answered %d with the saved result of %s %s (%s): "+
				"the key store is not scoped to the endpoint, so the second operation never ran and its caller was told it did.",
				a.ID, a.Key, a.Method, a.Path, a.Status, orig.att.Method, orig.att.Path, short(orig.resource)), nil)
	} else {
		v.explained++
	}
}

// otherKey judges a's answer to the same body under a new key, a new
// intent that must succeed as new work.
func (c *intentCheck) otherKey(orig *success, a idemcheck.Attempt, v *variantEffects) {
	p := c.policy
	ok2xx := p.Replay(a.Status)
	switch {
	case ok2xx && orig != nil && (c.sameResource(*orig, a) || p.ReplayHeader != "" && headerTrue(a.RespHeader.Get(p.ReplayHeader))):
		c.add(idemcheck.OverDeduplication, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d sent the same body under a new key %s and got the first intent's result (%s): the server deduplicates by payload, "+
				"so a customer who really orders twice gets one order.", a.ID, a.Key, short(orig.resource)), nil)
	case ok2xx:
		v.explained++
		v.promised++
	case p.AckOnly && a.Status >= 500:
		// Another event not acknowledged yet: delivered again, and
		// checkAcknowledged judges it.
	case p.InProgress(a.Status) || a.Status == p.MismatchStatus:
		c.add(idemcheck.OverDeduplication, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d sent the same body under a new key %s and got %d %s: the server treats a new intent as a duplicate of the old one.",
				a.ID, a.Key, a.Status, short(a.RespBody)), nil)
	default:
		c.unexpected(a, "a new key is a new intent and must succeed like the first")
	}
}

// otherTenant judges a's answer to the intent's key sent as a second
// client, which must not see the first client's result.
func (c *intentCheck) otherTenant(orig *success, a idemcheck.Attempt, v *variantEffects) {
	p := c.policy
	if !p.Replay(a.Status) {
		return
	}
	if orig != nil && (c.sameResource(*orig, a) || p.ReplayHeader != "" && headerTrue(a.RespHeader.Get(p.ReplayHeader))) {
		c.add(idemcheck.CrossTenantReplay, c.withOrig(orig, a),
			fmt.Sprintf("attempt %d sent key %s as a second client and was answered %d with the first client's saved response (%s): "+
				"keys are not scoped per client, so one client's key replays, and leaks, another client's data.",
				a.ID, a.Key, a.Status, short(a.RespBody)), nil)
	} else {
		v.explained++
	}
}

// badSignature judges a's answer to a delivery signed with another secret
// or long ago, which a webhook consumer must refuse.
func (c *intentCheck) badSignature(a idemcheck.Attempt, v *variantEffects) {
	if !c.policy.Replay(a.Status) {
		v.refusedSigned = append(v.refusedSigned, a)
		return
	}
	// Its effect, if any, is this finding's.
	v.explained++
	if a.Variant == idemcheck.BadSignature {
		c.add(idemcheck.BadSignatureAccepted, []int{a.ID},
			fmt.Sprintf("attempt %d was signed with another secret than the consumer's and was acknowledged with %d %s: the consumer acts on forged "+
				"deliveries, so anyone who can reach it can make it apply any event.", a.ID, a.Status, short(a.RespBody)), nil)
	} else {
		c.add(idemcheck.StaleSignatureAccepted, []int{a.ID},
			fmt.Sprintf("attempt %d was properly signed an hour before it was sent and was acknowledged with %d %s: senders document a five-minute "+
				"tolerance, so a captured delivery can be replayed for ever (the event id still keeps its effect single).", a.ID, a.Status, short(a.RespBody)),
			map[string]any{"signed_age_s": 3600})
	}
}

// noKey judges a's answer to the request sent without a key, which an
// endpoint that requires one must refuse.
func (c *intentCheck) noKey(a idemcheck.Attempt, v *variantEffects) {
	p := c.policy
	ok2xx := p.Replay(a.Status)
	switch {
	case p.MissingKeyStatus == 0:
		if ok2xx {
			v.explained++
		}
	case a.Status == p.MissingKeyStatus:
	case ok2xx:
		v.explained++
		c.add(idemcheck.MissingKeyAccepted, []int{a.ID},
			fmt.Sprintf("attempt %d sent no %s header and got %d %s: the endpoint requires the key (policy: %d), so this request ran "+
				"without any protection against its own retries.", a.ID, p.KeyHeader, a.Status, short(a.RespBody), p.MissingKeyStatus), nil)
	default:
		c.unexpected(a, fmt.Sprintf("a request without %s must get %d", p.KeyHeader, p.MissingKeyStatus))
	}
}

// sameResource reports whether attempt a's success describes the resource
// of the original success.
func (c *intentCheck) sameResource(orig success, a idemcheck.Attempt) bool {
	id, ptr := resourceID(a.RespBody, a.Body, c.policy.ResourceID)
	if ptr == "" || orig.idField == "" {
		return canonicalBody(a.RespBody, c.policy.IgnoreFields) == orig.body
	}
	return id == orig.resource
}

func (c *intentCheck) withOrig(orig *success, a idemcheck.Attempt) []int {
	if orig == nil {
		return []int{a.ID}
	}
	return []int{orig.att.ID, a.ID}
}

func (c *intentCheck) unexpected(a idemcheck.Attempt, rule string) {
	c.add(idemcheck.UnexpectedStatus, []int{a.ID},
		fmt.Sprintf("attempt %d (%s) got %d %s: %s.", a.ID, a.Variant, a.Status, short(a.RespBody), rule), nil)
}
