package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// consumer is a webhook consumer on loopback that refuses the first
// refuse deliveries of every event with 503 and acknowledges the rest.
type consumer struct {
	mu     sync.Mutex
	seen   map[string]int
	refuse int
}

func (c *consumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct{ EventID string }
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &ev)
	c.mu.Lock()
	c.seen[ev.EventID]++
	n := c.seen[ev.EventID]
	c.mu.Unlock()
	if n <= c.refuse {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func runWebhook(t *testing.T, refuse int, p idemcheck.Policy, scs ...scenarios.Scenario) *idemcheck.History {
	t.Helper()
	srv := httptest.NewServer(&consumer{seen: map[string]int{}, refuse: refuse})
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	failing := idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"t","data":{"customerId":"{{intent}}","failFirst":true}}`)
	r := &runner.Runner{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/webhooks"),
			Body: idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"t","data":{"customerId":"{{intent}}"}}`), FailingBody: &failing},
		Policy: p, Timeout: 30 * time.Second,
	}
	var h idemcheck.History
	require.NoError(t, r.Run(context.Background(), scs, &h))
	// On a busy machine a burst released too loosely is repeated with a
	// fresh event; the deliveries these tests count are those of the
	// rounds that counted.
	loose := map[int]bool{}
	for _, b := range h.Bursts {
		loose[b.ID] = b.Loose
	}
	repeated := map[string]bool{}
	for _, a := range h.Attempts {
		if loose[a.Burst] {
			repeated[a.Intent] = true
		}
	}
	kept := h.Attempts[:0]
	for _, a := range h.Attempts {
		if !repeated[a.Intent] {
			kept = append(kept, a)
		}
	}
	h.Attempts = kept
	return &h
}

type delivery struct {
	status, redelivery int
}

func deliveries(h *idemcheck.History) []delivery {
	var out []delivery
	for _, a := range h.Attempts {
		out = append(out, delivery{a.Status, a.Redelivery})
	}
	return out
}

// A delivery refused twice is delivered again, after the backoff, until
// the third delivery is acknowledged; nothing after that.
func TestRedeliverUntilAcknowledged(t *testing.T) {
	h := runWebhook(t, 2, idemcheck.Webhook(), scenarios.RedeliveryAfterFailingBody(1))
	assert.Equal(t, []delivery{{503, 0}, {503, 1}, {200, 2}}, deliveries(h))
	for i, a := range h.Attempts {
		assert.Equal(t, idemcheck.Failing, a.Variant, "a redelivery sends the same request")
		assert.Equal(t, h.Attempts[0].Body, a.Body)
		if i > 0 {
			// A timer never fires early: a lower bound, not a timing bet.
			assert.GreaterOrEqual(t, a.Start.Sub(h.Attempts[i-1].End), scenarios.Redelivery(idemcheck.Webhook(), i), "wait before redelivery %d", i)
		}
	}
}

// A sender gives up after MaxRedeliveries: five deliveries in all.
func TestRedeliveryIsBounded(t *testing.T) {
	h := runWebhook(t, 100, idemcheck.Webhook(), scenarios.RedeliveryAfterFailingBody(1))
	want := []delivery{{503, 0}}
	for n := 1; n <= scenarios.MaxRedeliveries; n++ {
		want = append(want, delivery{503, n})
	}
	assert.Equal(t, want, deliveries(h))
}

// A burst none of whose copies is acknowledged is redelivered one at a
// time; a burst with one acknowledged copy is not.
func TestBurstRedeliveredWhenNoCopyIsAcknowledged(t *testing.T) {
	h := runWebhook(t, 4, idemcheck.Webhook(), scenarios.WebhookRedelivery(1, 4))
	assert.Equal(t, []delivery{{503, 0}, {503, 0}, {503, 0}, {503, 0}, {200, 1}}, deliveries(h))
	assert.NotZero(t, h.Attempts[0].Burst)
	assert.Zero(t, h.Attempts[4].Burst, "a redelivery is no part of the burst")

	h = runWebhook(t, 1, idemcheck.Webhook(), scenarios.WebhookRedelivery(1, 4))
	assert.Len(t, h.Attempts, 4, "one copy was acknowledged: no redelivery")
}

// Under an ack-only policy every check's deliveries are redelivered until
// acknowledged; under another policy, nothing is.
func TestPlanRedeliversUnderAckOnly(t *testing.T) {
	e := scenarios.Endpoint{Body: idemcheck.MustTemplate(`{"eventId":"{{key}}"}`)}
	names := []string{idemcheck.CheckSequentialReplay, idemcheck.CheckDistinctKeys, idemcheck.CheckMissingKey, idemcheck.CheckWebhookRedeliver}
	scs, _, err := scenarios.Plan(names, scenarios.Defaults, idemcheck.Webhook(), e, nil, nil)
	require.NoError(t, err)
	for _, sc := range scs {
		for i, st := range sc.Steps {
			assert.Equal(t, st.Variant != idemcheck.NoKey, st.Then.Has(scenarios.RedeliverUntilAck), "%s step %d (%s)", sc.Check, i+1, st.Variant)
		}
	}
	scs, _, err = scenarios.Plan(names[:3], scenarios.Defaults, idemcheck.IETF(), e, nil, nil)
	require.NoError(t, err)
	for _, sc := range scs {
		for i, st := range sc.Steps {
			assert.False(t, st.Then.Has(scenarios.RedeliverUntilAck), "%s step %d", sc.Check, i+1)
		}
	}
}

// The backoff doubles from 50 ms; a lease stretches it so that the last
// redelivery comes after the lease and its margin.
func TestRedeliverySchedule(t *testing.T) {
	p := idemcheck.Webhook()
	var waits []time.Duration
	for n := 1; n <= scenarios.MaxRedeliveries; n++ {
		waits = append(waits, scenarios.Redelivery(p, n))
	}
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, waits)
	p.Lease = time.Second
	var sum time.Duration
	for n := 1; n <= scenarios.MaxRedeliveries; n++ {
		sum += scenarios.Redelivery(p, n)
	}
	assert.Greater(t, sum, p.Lease+scenarios.LeaseMargin)
}
