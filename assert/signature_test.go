package assert

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

// The signature check's rules on recorded histories: a forged delivery
// acknowledged, or refused after its work was done, is a failure; a stale
// one acknowledged is remarked on; both refused with nothing done holds.
func TestSignatureRules(t *testing.T) {
	for _, c := range []struct {
		name          string
		forged, stale int
		effects       int64
		want          []idemcheck.Kind
	}{
		{"refused before any work", 401, 401, 0, nil},
		{"forged delivery acknowledged", 200, 401, 1, []idemcheck.Kind{idemcheck.BadSignatureAccepted}},
		{"stale delivery acknowledged", 401, 200, 1, []idemcheck.Kind{idemcheck.StaleSignatureAccepted}},
		{"refused after the work", 401, 401, 1, []idemcheck.Kind{idemcheck.BadSignatureAccepted}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := idemcheck.Intent{ID: "ic-1", Key: "k1", Check: idemcheck.CheckSignature, Round: 1}
			h := &idemcheck.History{
				Run:     idemcheck.Run{Policy: idemcheck.Webhook()},
				Intents: []idemcheck.Intent{in},
				Attempts: []idemcheck.Attempt{
					{ID: 1, Intent: in.ID, Key: in.Key, Check: in.Check, Step: 1, Variant: idemcheck.BadSignature, Outcome: idemcheck.Replied, Status: c.forged},
					{ID: 2, Intent: in.ID, Key: in.Key, Check: in.Check, Step: 2, Variant: idemcheck.StaleSignature, Outcome: idemcheck.Replied, Status: c.stale},
				},
				Observations: []idemcheck.Observation{{Intent: in.ID, Effects: c.effects, Query: "q"}},
			}
			var got []idemcheck.Kind
			for _, a := range Check(h) {
				got = append(got, a.Kind)
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// A run signed with a clock shifted past the senders' tolerance
// (--sign-skew) whose deliveries were acknowledged is remarked on once;
// within the tolerance, or refused, or under a scheme that signs no
// timestamp (github, shopify), it is not.
func TestStaleSkewAccepted(t *testing.T) {
	for _, c := range []struct {
		scheme string
		skewMS int64
		status int
		want   int
	}{{"stripe", -10 * 60 * 1000, 200, 1}, {"stripe", -4 * 60 * 1000, 200, 0}, {"stripe", -10 * 60 * 1000, 401, 0}, {"stripe", 0, 200, 0},
		{"slack", -10 * 60 * 1000, 200, 1}, {"github", -10 * 60 * 1000, 200, 0}, {"shopify", -10 * 60 * 1000, 200, 0}} {
		in := idemcheck.Intent{ID: "ic-1", Key: "k1", Check: idemcheck.CheckSequentialReplay, Round: 1}
		h := &idemcheck.History{
			Run:     idemcheck.Run{Policy: idemcheck.Webhook(), Target: idemcheck.Target{Signing: &idemcheck.TargetSigning{Scheme: c.scheme, Header: "X-Signature", SkewMS: c.skewMS}}},
			Intents: []idemcheck.Intent{in},
			Attempts: []idemcheck.Attempt{
				{ID: 1, Intent: in.ID, Key: in.Key, Check: in.Check, Step: 1, Outcome: idemcheck.Replied, Status: c.status},
				{ID: 2, Intent: in.ID, Key: in.Key, Check: in.Check, Step: 2, Outcome: idemcheck.Replied, Status: c.status},
			},
		}
		var got int
		for _, a := range staleSkewAccepted(h) {
			assert.Equal(t, idemcheck.StaleSignatureAccepted, a.Kind)
			assert.Contains(t, a.Explanation, "2 of them were acknowledged")
			got++
		}
		assert.Equal(t, c.want, got, "%s, skew %d ms, status %d", c.scheme, c.skewMS, c.status)
	}
}
