package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a delivery's signed timestamp may be from the
// consumer's clock: the five minutes Stripe, Slack and the Standard
// Webhooks libraries use. An older signature is a replay.
const Tolerance = 5 * time.Minute

// SecretEnv is the variable the webhooks command reads its signing secret
// from: when it is set, every delivery must be signed.
const SecretEnv = "WEBHOOK_SECRET"

// SchemeEnv is the variable that names the signing scheme the webhooks
// command verifies (a Scheme), beside SecretEnv; unset, it is
// standard-webhooks.
const SchemeEnv = "WEBHOOK_SIGNING"

// Scheme is how a sender signs its deliveries, and so how the consumer
// verifies them: each as its provider documents it, written out so that
// the example needs nothing beyond the standard library.
type Scheme string

const (
	// StandardWebhooks: webhook-id, webhook-timestamp and
	// webhook-signature (verifyStandardWebhooks). The default.
	StandardWebhooks Scheme = "standard-webhooks"
	// Stripe: Stripe-Signature: t=<unix>,v1=<hex> (verifyStripe).
	Stripe Scheme = "stripe"
	// GitHub: X-Hub-Signature-256: sha256=<hex> (verifyGitHub).
	GitHub Scheme = "github"
	// Shopify: X-Shopify-Hmac-Sha256: <base64> (verifyShopify).
	Shopify Scheme = "shopify"
	// Slack: X-Slack-Request-Timestamp and X-Slack-Signature: v0=<hex>
	// (verifySlack).
	Slack Scheme = "slack"
)

// verifier checks one delivery's signature, made with secret, over the
// exact body received, at the consumer's time now.
type verifier func(secret string, h http.Header, body []byte, now time.Time) error

var verifiers = map[Scheme]verifier{
	StandardWebhooks: verifyStandardWebhooks,
	Stripe:           verifyStripe,
	GitHub:           verifyGitHub,
	Shopify:          verifyShopify,
	Slack:            verifySlack,
}

// Schemes lists the signing schemes the consumer verifies, the default
// first.
func Schemes() []Scheme { return []Scheme{StandardWebhooks, Stripe, GitHub, Shopify, Slack} }

// ParseScheme turns an environment value into a Scheme; empty is
// StandardWebhooks.
func ParseScheme(s string) (Scheme, error) {
	if s == "" {
		return StandardWebhooks, nil
	}
	if _, ok := verifiers[Scheme(s)]; !ok {
		var known []string
		for _, k := range Schemes() {
			known = append(known, string(k))
		}
		return "", fmt.Errorf("webhooks: unknown signing scheme %q (known: %s)", s, strings.Join(known, ", "))
	}
	return Scheme(s), nil
}

// verify checks a delivery's signature under scheme (empty:
// StandardWebhooks): what the consumer does before any work.
func verify(scheme Scheme, secret string, h http.Header, body []byte, now time.Time) error {
	if scheme == "" {
		scheme = StandardWebhooks
	}
	v, ok := verifiers[scheme]
	if !ok {
		return fmt.Errorf("unknown signing scheme %q", scheme)
	}
	return v(secret, h, body, now)
}

// hmacSHA256 is the HMAC-SHA256 of the parts, in order, keyed by key.
func hmacSHA256(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// verifyStandardWebhooks checks a delivery's Standard Webhooks signature:
// webhook-id, webhook-timestamp and webhook-signature ("v1,<base64>",
// several separated by spaces during a key rotation), the HMAC-SHA256 of
// "id.timestamp.body" keyed by the secret's base64 key after whsec_, the
// timestamp within Tolerance either way. It is what the specification's
// reference libraries do.
func verifyStandardWebhooks(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return errors.New("the consumer's signing secret is not whsec_ and base64")
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("the delivery is not signed: webhook-id, webhook-timestamp and webhook-signature are required")
	}
	if err := within("webhook-timestamp", ts, now, true); err != nil {
		return err
	}
	want := []byte(base64.StdEncoding.EncodeToString(hmacSHA256(key, []byte(id+"."+ts+"."), body)))
	for _, s := range strings.Fields(sigs) {
		if v, sig, ok := strings.Cut(s, ","); ok && v == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("no webhook-signature matches the delivery")
}

// verifyStripe checks a delivery's Stripe-Signature, as Stripe's
// libraries do (stripe-go's webhook.ValidatePayload): the header is
// "t=<unix>,v1=<hex>" with possibly several v1 (during a secret's roll)
// and other schemes that are ignored; the signed message is
// "<t>.<body>", keyed by the whole secret, whsec_ and all; a timestamp
// older than Tolerance is refused.
func verifyStripe(secret string, h http.Header, body []byte, now time.Time) error {
	header := h.Get("Stripe-Signature")
	if header == "" {
		return errors.New("the delivery is not signed: Stripe-Signature is required")
	}
	var ts string
	var sigs [][]byte
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(v, "=") {
			return errors.New("Stripe-Signature is not t=<unix>,v1=<hex>")
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return errors.New("Stripe-Signature has no timestamp (t=) or no v1 signature")
	}
	if err := within("Stripe-Signature's t", ts, now, false); err != nil {
		return err
	}
	want := hmacSHA256([]byte(secret), []byte(ts+"."), body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return errors.New("no v1 signature of Stripe-Signature matches the delivery")
}

// verifyGitHub checks a delivery's X-Hub-Signature-256, as GitHub's
// "Validating webhook deliveries" does: "sha256=" and the hex HMAC-SHA256
// of the body keyed by the secret, compared in constant time. GitHub signs
// no timestamp.
func verifyGitHub(secret string, h http.Header, body []byte, _ time.Time) error {
	got := h.Get("X-Hub-Signature-256")
	if got == "" {
		return errors.New("the delivery is not signed: X-Hub-Signature-256 is required")
	}
	want := "sha256=" + hex.EncodeToString(hmacSHA256([]byte(secret), body))
	if !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("X-Hub-Signature-256 does not match the delivery")
	}
	return nil
}

// verifyShopify checks a delivery's X-Shopify-Hmac-Sha256, as Shopify's
// "Verify webhooks" does: the base64 HMAC-SHA256 of the raw body keyed by
// the app's client secret, compared in constant time. Shopify signs no
// timestamp.
func verifyShopify(secret string, h http.Header, body []byte, _ time.Time) error {
	got := h.Get("X-Shopify-Hmac-Sha256")
	if got == "" {
		return errors.New("the delivery is not signed: X-Shopify-Hmac-Sha256 is required")
	}
	want := base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), body))
	if !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("X-Shopify-Hmac-Sha256 does not match the delivery")
	}
	return nil
}

// verifySlack checks a request's Slack signature, as Slack's "Verifying
// requests from Slack" does: X-Slack-Request-Timestamp within five minutes
// of the consumer's clock, either way, then X-Slack-Signature, "v0=" and
// the hex HMAC-SHA256 of "v0:<timestamp>:<body>" keyed by the signing
// secret, compared in constant time.
func verifySlack(secret string, h http.Header, body []byte, now time.Time) error {
	ts, got := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || got == "" {
		return errors.New("the request is not signed: X-Slack-Request-Timestamp and X-Slack-Signature are required")
	}
	if err := within("X-Slack-Request-Timestamp", ts, now, true); err != nil {
		return err
	}
	want := "v0=" + hex.EncodeToString(hmacSHA256([]byte(secret), []byte("v0:"+ts+":"), body))
	if !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("X-Slack-Signature does not match the request")
	}
	return nil
}

// within checks a signed Unix time against the consumer's clock: no older
// than Tolerance, and with future, no further ahead either.
func within(name, ts string, now time.Time, future bool) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a Unix time", name)
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > Tolerance || future && at.Sub(now) > Tolerance {
		return fmt.Errorf("%s is %s from now, outside the %s tolerance", name, now.Sub(at).Round(time.Second), Tolerance)
	}
	return nil
}
