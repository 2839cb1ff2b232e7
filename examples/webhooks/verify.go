package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a delivery's signed timestamp may be from the
// consumer's clock, either way: the five minutes Stripe, Slack and the
// Standard Webhooks libraries use. An older signature is a replay.
const Tolerance = 5 * time.Minute

// SecretEnv is the variable the webhooks command reads its signing secret
// from: when it is set, every delivery must be signed.
const SecretEnv = "WEBHOOK_SECRET"

// verify checks a delivery's Standard Webhooks signature: webhook-id,
// webhook-timestamp and webhook-signature ("v1,<base64>", several separated
// by spaces during a key rotation), the HMAC-SHA256 of "id.timestamp.body"
// keyed by the secret's base64 key after whsec_. It is what the
// specification's reference libraries do, written out so that the example
// needs nothing beyond the standard library.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return errors.New("the consumer's signing secret is not whsec_ and base64")
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("the delivery is not signed: webhook-id, webhook-timestamp and webhook-signature are required")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not a Unix time")
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > Tolerance || at.Sub(now) > Tolerance {
		return fmt.Errorf("webhook-timestamp is %s from now, outside the %s tolerance", now.Sub(at).Round(time.Second), Tolerance)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	for _, s := range strings.Fields(sigs) {
		if v, sig, ok := strings.Cut(s, ","); ok && v == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("no webhook-signature matches the delivery")
}
