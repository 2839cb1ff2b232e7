package webhooks

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	assert.NoError(t, verify(secret, h, body, at.Add(10*time.Second)))
	assert.ErrorContains(t, verify(secret, h, body, at.Add(Tolerance+time.Second)), "outside the 5m0s tolerance")
	assert.ErrorContains(t, verify(secret, h, body, at.Add(-Tolerance-time.Second)), "outside the 5m0s tolerance")
	changed := []byte(`{"test": 2432232315}`)
	assert.ErrorContains(t, verify(secret, h, changed, at), "no webhook-signature matches")
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK")
	assert.ErrorContains(t, verify(secret, h, body, at), "no webhook-signature matches")
	h.Del("webhook-signature")
	assert.ErrorContains(t, verify(secret, h, body, at), "not signed")
}
