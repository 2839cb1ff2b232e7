package webhooks

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/idemcheck/idemcheck/scenarios"
)

// The consumer's verification against the Standard Webhooks reference
// library's published signing example (libraries/go/webhook_test.go).
func TestVerifyPublishedExample(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	at := time.Unix(1614265330, 0)
	assert.NoError(t, verifyStandardWebhooks(secret, h, body, at.Add(10*time.Second)))
	assert.ErrorContains(t, verifyStandardWebhooks(secret, h, body, at.Add(Tolerance+time.Second)), "outside the 5m0s tolerance")
	assert.ErrorContains(t, verifyStandardWebhooks(secret, h, body, at.Add(-Tolerance-time.Second)), "outside the 5m0s tolerance")
	changed := []byte(`{"test": 2432232315}`)
	assert.ErrorContains(t, verifyStandardWebhooks(secret, h, changed, at), "no webhook-signature matches")
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK")
	assert.ErrorContains(t, verifyStandardWebhooks(secret, h, body, at), "no webhook-signature matches")
	h.Del("webhook-signature")
	assert.ErrorContains(t, verifyStandardWebhooks(secret, h, body, at), "not signed")
}

// The other schemes against their providers' own examples: GitHub's
// "Hello, World!" (Validating webhook deliveries), Shopify's HMAC of the
// same (the digest in base64), Slack's slash command (Verifying requests
// from Slack), and for Stripe, which publishes no fixed example, a
// delivery signed by its own Go library (stripe-go's
// webhook.GenerateTestSignedPayload), several v1 signatures as during a
// secret's roll.
func TestVerifyProvidersExamples(t *testing.T) {
	const ghSecret = "It's a Secret to Everybody"
	hello := []byte("Hello, World!")
	gh := http.Header{}
	gh.Set("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	assert.NoError(t, verify(GitHub, ghSecret, gh, hello, time.Now()))
	assert.ErrorContains(t, verify(GitHub, ghSecret, gh, []byte("Hello, World?"), time.Now()), "does not match")

	sh := http.Header{}
	sh.Set("X-Shopify-Hmac-Sha256", "dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc=")
	assert.NoError(t, verify(Shopify, ghSecret, sh, hello, time.Now()))
	assert.ErrorContains(t, verify(Shopify, ghSecret+"x", sh, hello, time.Now()), "does not match")

	const slackBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	sl := http.Header{}
	sl.Set("X-Slack-Request-Timestamp", "1531420618")
	sl.Set("X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503")
	at := time.Unix(1531420618, 0)
	assert.NoError(t, verify(Slack, "8f742231b10e8888abcd99yyyzzz85a5", sl, []byte(slackBody), at.Add(time.Minute)))
	assert.ErrorContains(t, verify(Slack, "8f742231b10e8888abcd99yyyzzz85a5", sl, []byte(slackBody), at.Add(Tolerance+time.Second)), "outside the 5m0s tolerance")
	assert.ErrorContains(t, verify(Slack, "8f742231b10e8888abcd99yyyzzz85a5", sl, []byte(slackBody), at.Add(-Tolerance-time.Second)), "outside the 5m0s tolerance")

	const stripeSecret = "whsec_test_secret"
	body := []byte(`{"id":"evt_test_webhook","object":"event"}`)
	now := time.Now()
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: now.Add(-time.Minute)})
	st := http.Header{}
	st.Set("Stripe-Signature", p.Header)
	assert.NoError(t, verify(Stripe, stripeSecret, st, body, now))
	other := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_rolled", Timestamp: now.Add(-time.Minute)})
	// The old secret's signature first, then the new one's, and a v0 to
	// ignore: the header Stripe sends while a secret rolls.
	st.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s,v0=%s,v1=%s", p.Timestamp.Unix(), hex.EncodeToString(other.Signature),
		"6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39", hex.EncodeToString(p.Signature)))
	assert.NoError(t, verify(Stripe, stripeSecret, st, body, now))
	assert.NoError(t, verify(Stripe, "whsec_rolled", st, body, now))
	stale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: now.Add(-Tolerance - time.Second)})
	st.Set("Stripe-Signature", stale.Header)
	assert.ErrorContains(t, verify(Stripe, stripeSecret, st, body, now), "outside the 5m0s tolerance")
}

// Every scheme idemcheck signs with (--sign) has its verifier here, and
// each accepts a delivery idemcheck signed, and refuses one with a byte of
// the body changed, one signed with another secret, an unsigned one, and,
// where the scheme signs a timestamp, one signed past the tolerance. A
// GitHub or Shopify delivery signed an hour ago is the same bytes as one
// signed now: accepted, as their consumers must.
func TestVerifyEveryScheme(t *testing.T) {
	var names []string
	for _, s := range Schemes() {
		names = append(names, string(s))
	}
	assert.ElementsMatch(t, scenarios.SignSchemes, names, "a verifier for each of idemcheck's schemes")

	const secret = "whsec_aWRlbWNoZWNrIHpvbyBzaWduaW5nIGtleQ=="
	const id = "8fcf9215-4c66-456f-a216-0e98a4b26db9"
	body := []byte(`{"eventId":"` + id + `","type":"payment.succeeded","data":{"customerId":"c-1","amountCents":500}}`)
	now := time.Now()
	for _, scheme := range Schemes() {
		t.Run(string(scheme), func(t *testing.T) {
			g := scenarios.Signing{Scheme: string(scheme), Secret: secret}
			require.NoError(t, g.Check())
			signed := func(g scenarios.Signing, at time.Time) http.Header {
				h := http.Header{}
				h.Set("Content-Type", "application/json")
				g.Sign(h, id, body, at)
				return h
			}
			h := signed(g, now)
			assert.NoError(t, verify(scheme, secret, h, body, now), "signed now")
			assert.NoError(t, verify(scheme, secret, signed(g, now.Add(-time.Minute)), body, now), "signed a minute ago")

			changed := slices.Clone(body)
			changed[len(changed)/2] ^= 1
			assert.Error(t, verify(scheme, secret, h, changed, now), "one byte of the body changed")

			forged := g
			forged.Secret = "whsec_Zm9yZ2VkIGJ5IGlkZW1jaGVjaw=="
			assert.Error(t, verify(scheme, secret, signed(forged, now), body, now), "another secret")

			h.Del(g.SignatureHeader())
			assert.ErrorContains(t, verify(scheme, secret, h, body, now), "not signed", "unsigned")

			old := signed(g, now.Add(-time.Hour))
			if g.SignsTime() {
				assert.ErrorContains(t, verify(scheme, secret, old, body, now), "outside the 5m0s tolerance", "signed an hour ago")
				assert.ErrorContains(t, verify(scheme, secret, signed(g, now.Add(-Tolerance-time.Second)), body, now), "outside the 5m0s tolerance")
			} else {
				assert.NoError(t, verify(scheme, secret, old, body, now), "no timestamp is signed: an old delivery is a fresh one")
			}
		})
	}
	p, err := ParseScheme("")
	require.NoError(t, err)
	assert.Equal(t, StandardWebhooks, p)
	_, err = ParseScheme("paypal")
	assert.ErrorContains(t, err, `unknown signing scheme "paypal" (known: standard-webhooks, stripe, github, shopify, slack)`)
}
