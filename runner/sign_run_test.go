package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// signedDelivery is what a signed consumer received.
type signedDelivery struct {
	id, ts, sig, deliveryID, body, eventID string
}

// A sender's redelivery, as idemcheck makes it: every attempt (each copy of
// a burst, each redelivery) is signed on its own, over the exact body it
// sends, with its own computed headers, and keeps the event's id and body.
// The signing clock is shifted by the skew.
func TestEveryAttemptSignedAsASenderSigns(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	var mu sync.Mutex
	var got []signedDelivery
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || len(b) == 0 {
			return // the harness's probe of the protocol the target speaks
		}
		var ev struct{ EventID string }
		_ = json.Unmarshal(b, &ev)
		mu.Lock()
		got = append(got, signedDelivery{id: r.Header.Get("Webhook-Id"), ts: r.Header.Get("Webhook-Timestamp"), sig: r.Header.Get("Webhook-Signature"),
			deliveryID: r.Header.Get("X-Delivery-Id"), body: string(b), eventID: ev.EventID})
		seen[ev.EventID]++
		n := seen[ev.EventID]
		mu.Unlock()
		if n <= 5 { // the burst of 4 and the first redelivery
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	const skew = -90 * time.Second
	r := &runner.Runner{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/webhooks"),
			Body:   idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"t","data":{"customerId":"{{intent}}"}}`),
			Header: []scenarios.Header{{Name: "X-Delivery-Id", Value: idemcheck.MustTemplate("{{uuid}}")}},
			Sign:   &scenarios.Signing{Scheme: scenarios.SignStandardWebhooks, Secret: secret, Skew: skew}},
		Policy: idemcheck.Webhook(), Timeout: 30 * time.Second,
	}
	start := time.Now()
	var h idemcheck.History
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.WebhookRedelivery(1, 4)}, &h))
	end := time.Now()

	require.GreaterOrEqual(t, len(got), 6, "a burst of 4, then redeliveries until acknowledged")
	deliveries := map[string]bool{}
	key := scenarios.Signing{Scheme: scenarios.SignStandardWebhooks, Secret: secret}
	for _, d := range got {
		assert.Equal(t, got[0].eventID, d.eventID, "one event")
		assert.Equal(t, d.eventID, d.id, "webhook-id is the event's id")
		assert.Equal(t, got[0].body, d.body, "a redelivery keeps its body")
		sec, err := strconv.ParseInt(d.ts, 10, 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, sec, start.Add(skew).Unix(), "the clock is shifted by the skew")
		assert.LessOrEqual(t, sec, end.Add(skew).Unix())
		want := http.Header{}
		key.Sign(want, d.id, []byte(d.body), time.Unix(sec, 0))
		assert.Equal(t, want.Get("Webhook-Signature"), d.sig, "signed over the bytes sent, at its own timestamp")
		assert.False(t, deliveries[d.deliveryID], "a computed header is computed per attempt")
		deliveries[d.deliveryID] = true
	}
	// The history records each attempt's own computed headers, the
	// signature hidden.
	require.Len(t, h.Attempts, len(got))
	recorded := map[string]bool{}
	for _, a := range h.Attempts {
		assert.Equal(t, []string{runner.Redacted}, a.Header["Webhook-Signature"])
		recorded[a.Header.Get("X-Delivery-Id")] = true
	}
	assert.Equal(t, deliveries, recorded, "the delivery ids recorded are those sent")
}
