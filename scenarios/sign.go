package scenarios

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/idemcheck/idemcheck"
)

// Signing schemes: how each webhook sender signs a delivery. Each is
// computed per attempt, at send time, over the exact body sent.
const (
	// SignStripe: Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
	// "<unix>.<body>">, keyed by the whole secret (whsec_ and all).
	SignStripe = "stripe"
	// SignGitHub: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of body>.
	SignGitHub = "github"
	// SignShopify: X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of body>.
	SignShopify = "shopify"
	// SignSlack: X-Slack-Request-Timestamp: <unix> and X-Slack-Signature:
	// v0=<hex HMAC-SHA256 of "v0:<unix>:<body>">.
	SignSlack = "slack"
	// SignStandardWebhooks: webhook-id (the event id: the intent's key),
	// webhook-timestamp and webhook-signature: v1,<base64 HMAC-SHA256 of
	// "<id>.<unix>.<body>">, keyed by the base64-decoded secret after its
	// whsec_ prefix (the Standard Webhooks specification, used by Svix,
	// Resend, Clerk and others).
	SignStandardWebhooks = "standard-webhooks"
)

// StaleAge is how old the stale delivery of the signature check is
// signed: far past the five minutes senders document as their consumers'
// tolerance.
const StaleAge = time.Hour

// forgedSecret signs the forged delivery of the signature check: a valid
// secret of every scheme (standard-webhooks' is base64), and not the
// consumer's.
const forgedSecret = "whsec_Zm9yZ2VkIGJ5IGlkZW1jaGVjaw=="

// SignSchemes lists the signing schemes, for help and errors.
var SignSchemes = []string{SignGitHub, SignShopify, SignSlack, SignStandardWebhooks, SignStripe}

// signatureHeader is each scheme's signature header, which Signing.Header
// renames.
var signatureHeader = map[string]string{
	SignStripe:           "Stripe-Signature",
	SignGitHub:           "X-Hub-Signature-256",
	SignShopify:          "X-Shopify-Hmac-Sha256",
	SignSlack:            "X-Slack-Signature",
	SignStandardWebhooks: "webhook-signature",
}

// Signing is how every request is signed, as a webhook sender signs its
// deliveries: each attempt (each of a burst's, each redelivery) gets a
// fresh timestamp and a signature over the exact bytes it sends, while a
// redelivered event keeps its id and body.
type Signing struct {
	// Scheme is one of SignSchemes.
	Scheme string
	// Secret is the signing secret (for standard-webhooks, whsec_ and the
	// base64 key). It is hidden in every report and history, with every
	// signature made with it.
	Secret string
	// Header, when set, is the signature header's name instead of the
	// scheme's, for a sender that follows a scheme under another name.
	Header string
	// Skew shifts the clock the timestamps are taken from: negative for a
	// delivery signed in the past, to test a consumer's tolerance.
	Skew time.Duration
}

// Check reports what is wrong with g, in words a front end prefixes with
// its field.
func (g Signing) Check() error {
	if _, ok := signatureHeader[g.Scheme]; !ok {
		return fmt.Errorf("unknown signing scheme %q (known: %s)", g.Scheme, strings.Join(SignSchemes, ", "))
	}
	if g.Secret == "" {
		return fmt.Errorf("%s signing needs a secret", g.Scheme)
	}
	if g.Header != "" && !httpguts.ValidHeaderFieldName(g.Header) {
		return fmt.Errorf("signature header %q is not an HTTP header name", g.Header)
	}
	if g.Scheme == SignStandardWebhooks {
		if _, err := g.key(); err != nil {
			return err
		}
	}
	return nil
}

// key is the HMAC key: the secret's bytes, or for standard-webhooks the
// base64 after whsec_.
func (g Signing) key() ([]byte, error) {
	if g.Scheme != SignStandardWebhooks {
		return []byte(g.Secret), nil
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(g.Secret, "whsec_"))
	if err != nil || len(k) == 0 {
		// The secret itself is never quoted.
		return nil, fmt.Errorf("a standard-webhooks secret is whsec_ followed by its key in base64; the one given does not decode")
	}
	return k, nil
}

// SignsTime reports whether the scheme signs a timestamp with each
// delivery (idemcheck.SignsTime): github and shopify sign the body alone,
// so a stale delivery of theirs is the same bytes as a fresh one.
func (g Signing) SignsTime() bool { return idemcheck.SignsTime(g.Scheme) }

// SignatureHeader is the name of the header that carries the signature.
func (g Signing) SignatureHeader() string {
	if g.Header != "" {
		return g.Header
	}
	return signatureHeader[g.Scheme]
}

// Secrets are the values to hide wherever they appear: the secret and,
// for standard-webhooks, its key without the prefix.
func (g Signing) Secrets() []string {
	out := []string{g.Secret}
	if k, ok := strings.CutPrefix(g.Secret, "whsec_"); ok && k != "" {
		out = append(out, k)
	}
	return out
}

// Sign sets on h the headers that sign body for the event id at time now.
// A Signing that passed Check cannot fail.
func (g Signing) Sign(h http.Header, id string, body []byte, now time.Time) {
	key, _ := g.key()
	mac := hmac.New(sha256.New, key)
	ts := strconv.FormatInt(now.Unix(), 10)
	name := g.SignatureHeader()
	switch g.Scheme {
	case SignStripe:
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		h.Set(name, "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	case SignGitHub:
		mac.Write(body)
		h.Set(name, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	case SignShopify:
		mac.Write(body)
		h.Set(name, base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	case SignSlack:
		mac.Write([]byte("v0:" + ts + ":"))
		mac.Write(body)
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set(name, "v0="+hex.EncodeToString(mac.Sum(nil)))
	case SignStandardWebhooks:
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set(name, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
}

// Forged returns g with its secret replaced by one the target does not
// know: the signature check's forged delivery, validly signed but by
// someone else.
func (g Signing) Forged() Signing {
	g.Secret = forgedSecret
	return g
}
