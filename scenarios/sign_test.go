package scenarios

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each scheme against its provider's published example, and each changed
// by one byte of what it signs (the body, the timestamp, the id), which
// must change the signature.
func TestSigningPublishedExamples(t *testing.T) {
	// GitHub's docs ("Validating webhook deliveries"): "Hello, World!"
	// signed with "It's a Secret to Everybody".
	const ghSum = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	raw, err := hex.DecodeString(ghSum)
	require.NoError(t, err)
	// Slack's docs ("Verifying requests from Slack"): the slash command
	// example.
	const slackBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	for _, c := range []struct {
		name   string
		g      Signing
		id     string
		body   string
		at     int64
		header string
		want   string
		also   map[string]string
	}{
		{name: "github", g: Signing{Scheme: SignGitHub, Secret: "It's a Secret to Everybody"}, body: "Hello, World!",
			header: "X-Hub-Signature-256", want: "sha256=" + ghSum},
		// Shopify signs the same HMAC of the body, in base64: GitHub's
		// published digest, encoded so.
		{name: "shopify", g: Signing{Scheme: SignShopify, Secret: "It's a Secret to Everybody"}, body: "Hello, World!",
			header: "X-Shopify-Hmac-Sha256", want: base64.StdEncoding.EncodeToString(raw)},
		{name: "slack", g: Signing{Scheme: SignSlack, Secret: "8f742231b10e8888abcd99yyyzzz85a5"}, body: slackBody, at: 1531420618,
			header: "X-Slack-Signature", want: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
			also: map[string]string{"X-Slack-Request-Timestamp": "1531420618"}},
		// The Standard Webhooks reference library's signing test
		// (libraries/go/webhook_test.go, TestWebhookSign).
		{name: "standard-webhooks", g: Signing{Scheme: SignStandardWebhooks, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			id: "msg_p5jXN8AQM9LWM0D4loKWxJek", body: `{"test": 2432232314}`, at: 1614265330,
			header: "Webhook-Signature", want: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
			also: map[string]string{"Webhook-Id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "Webhook-Timestamp": "1614265330"}},
		// Stripe publishes no fixed example (TestStripeSigningPassesStripesOwnVerification
		// checks the preset with stripe-go itself): stripe-go's tests sign with
		// its ComputeSignature, an HMAC-SHA256 keyed by the whole secret
		// over "<t>.<payload>", hex in v1. This one is that HMAC computed
		// apart, with the template functions.
		{name: "stripe", g: Signing{Scheme: SignStripe, Secret: "whsec_test_secret"}, body: `{"id": "evt_test_webhook", "object": "event"}`, at: 1614265330,
			header: "Stripe-Signature", want: "t=1614265330,v1=" + stripeV1("whsec_test_secret", "1614265330", `{"id": "evt_test_webhook", "object": "event"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.g.Check())
			h := http.Header{}
			c.g.Sign(h, c.id, []byte(c.body), time.Unix(c.at, 0))
			assert.Equal(t, c.want, h.Get(c.header))
			for k, v := range c.also {
				assert.Equal(t, v, h.Get(k))
			}
			// One byte of the body changed, then of the time, then of the
			// id: the signature must change.
			b := []byte(c.body)
			b[len(b)/2] ^= 1
			h2 := http.Header{}
			c.g.Sign(h2, c.id, b, time.Unix(c.at, 0))
			assert.NotEqual(t, c.want, h2.Get(c.header), "a changed body")
			if c.at != 0 {
				h3 := http.Header{}
				c.g.Sign(h3, c.id, []byte(c.body), time.Unix(c.at+1, 0))
				assert.NotEqual(t, h.Get(c.header), h3.Get(c.header), "a changed timestamp")
			}
			if c.id != "" {
				h4 := http.Header{}
				c.g.Sign(h4, c.id+"x", []byte(c.body), time.Unix(c.at, 0))
				assert.NotEqual(t, c.want, h4.Get(c.header), "a changed id")
			}
			// The header can be renamed.
			g := c.g
			g.Header = "X-Sig"
			h5 := http.Header{}
			g.Sign(h5, c.id, []byte(c.body), time.Unix(c.at, 0))
			assert.Equal(t, c.want, h5.Get("X-Sig"))
			assert.Empty(t, h5.Get(c.header))
		})
	}
}

func stripeV1(secret, ts, body string) string {
	return mustFill(`{{hmac_sha256_hex "`+secret+`" (printf "%s.%s" "`+ts+`" body)}}`, body)
}

func TestSigningCheck(t *testing.T) {
	assert.ErrorContains(t, Signing{Scheme: "paypal", Secret: "x"}.Check(), `unknown signing scheme "paypal" (known: github, shopify, slack, standard-webhooks, stripe)`)
	assert.ErrorContains(t, Signing{Scheme: SignGitHub}.Check(), "github signing needs a secret")
	err := Signing{Scheme: SignStandardWebhooks, Secret: "whsec_not base64!"}.Check()
	assert.ErrorContains(t, err, "does not decode")
	assert.NotContains(t, err.Error(), "not base64!")
	assert.ErrorContains(t, Signing{Scheme: SignGitHub, Secret: "x", Header: "X Sig"}.Check(), "not an HTTP header name")
	assert.Equal(t, []string{"whsec_MfKQ", "MfKQ"}, Signing{Scheme: SignStandardWebhooks, Secret: "whsec_MfKQ"}.Secrets())
}

// SignsTime says which schemes put the time in what they send: the
// headers of one delivery signed now and an hour ago differ exactly for
// those. The signature check sends its stale delivery only for them: a
// GitHub or Shopify delivery signed an hour ago is the same bytes as one
// signed now, which its consumer must accept.
func TestSignsTimeAndTheStaleDelivery(t *testing.T) {
	body := []byte(`{"eventId":"e1"}`)
	now := time.Now()
	for _, scheme := range SignSchemes {
		g := Signing{Scheme: scheme, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
		fresh, stale := http.Header{}, http.Header{}
		g.Sign(fresh, "e1", body, now)
		g.Sign(stale, "e1", body, now.Add(-StaleAge))
		assert.Equal(t, !assert.ObjectsAreEqual(fresh, stale), g.SignsTime(), scheme)

		scs, _, err := Plan([]string{idemcheck.CheckSignature}, Defaults, idemcheck.Webhook(),
			Endpoint{Body: idemcheck.MustTemplate(`{"eventId":"{{key}}"}`), Sign: &g}, nil, nil)
		require.NoError(t, err)
		require.Len(t, scs, 1)
		var variants []idemcheck.Variant
		for _, st := range scs[0].Steps {
			variants = append(variants, st.Variant)
		}
		want := []idemcheck.Variant{idemcheck.BadSignature}
		if g.SignsTime() {
			want = append(want, idemcheck.StaleSignature)
		}
		assert.Equal(t, want, variants, scheme)
	}
	assert.False(t, Signing{Scheme: SignGitHub}.SignsTime())
	assert.False(t, Signing{Scheme: SignShopify}.SignsTime())
}

// mustFill fills a template over body, for tests.
func mustFill(tmpl, body string) string {
	return idemcheck.MustTemplate(tmpl).FillAt(idemcheck.Intent{}, idemcheck.Send{Body: []byte(body)})
}

// BenchmarkSign is what signing costs one attempt: the HMAC over a
// webhook-sized body and the headers set (BENCHMARKS.md).
func BenchmarkSign(b *testing.B) {
	body := []byte(`{"eventId":"8fcf9215-4c66-456f-a216-0e98a4b26db9","type":"payment.succeeded","data":{"customerId":"ic-471390c9-1","amountCents":500}}`)
	for _, scheme := range SignSchemes {
		b.Run(scheme, func(b *testing.B) {
			g := Signing{Scheme: scheme, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
			now := time.Now()
			for b.Loop() {
				g.Sign(http.Header{}, "8fcf9215-4c66-456f-a216-0e98a4b26db9", body, now)
			}
		})
	}
}
