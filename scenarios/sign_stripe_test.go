package scenarios

import (
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Stripe publishes no fixed signing example, so the stripe preset is
// checked against Stripe's own Go library: what idemcheck signs, its
// webhook.ValidatePayload accepts, and refuses once one byte of the body
// or the timestamp changed, or the signature is an hour old. The library
// is a test dependency only; the binary does not link it.
func TestStripeSigningPassesStripesOwnVerification(t *testing.T) {
	const secret = "whsec_idemcheck_test_secret"
	body := []byte(`{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}`)
	g := Signing{Scheme: SignStripe, Secret: secret}
	require.NoError(t, g.Check())
	now := time.Now()
	h := http.Header{}
	g.Sign(h, "", body, now)
	sig := h.Get("Stripe-Signature")
	require.NotEmpty(t, sig)
	assert.NoError(t, webhook.ValidatePayload(body, sig, secret), "Stripe's library accepts what idemcheck signed")

	changed := append([]byte(nil), body...)
	changed[len(changed)/2] ^= 1
	assert.Error(t, webhook.ValidatePayload(changed, sig, secret), "one byte of the body changed")
	assert.Error(t, webhook.ValidatePayload(body, sig, secret+"x"), "another secret")

	stale := http.Header{}
	g.Sign(stale, "", body, now.Add(-time.Hour))
	assert.Error(t, webhook.ValidatePayload(body, stale.Get("Stripe-Signature"), secret), "an hour old: past Stripe's 5-minute tolerance")
	assert.NoError(t, webhook.ValidatePayloadIgnoringTolerance(body, stale.Get("Stripe-Signature"), secret), "yet correctly signed")

	// The library's own signature, over the same bytes at the same time,
	// is the one idemcheck sent.
	assert.Contains(t, sig, "v1="+hex.EncodeToString(webhook.ComputeSignature(now, body, secret)))
}
