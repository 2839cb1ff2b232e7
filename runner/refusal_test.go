package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	idemassert "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// limitedTarget is a correct target behind a limiter: at most inFlight
// requests in its handler at once, the rest refused with 429 and
// Retry-After: 0; and the first refuseFirst requests refused whatever.
type limitedTarget struct {
	base        *url.URL
	mu          sync.Mutex
	inFlight    int
	busy        int
	refuseFirst int
	seen        int
	saved       map[string]string
}

func newLimitedTarget(t *testing.T, inFlight, refuseFirst int) *limitedTarget {
	t.Helper()
	lt := &limitedTarget{inFlight: inFlight, refuseFirst: refuseFirst, saved: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		lt.mu.Lock()
		lt.seen++
		if lt.seen <= lt.refuseFirst || lt.busy >= lt.inFlight {
			lt.mu.Unlock()
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		lt.busy++
		key := r.Header.Get("Idempotency-Key")
		body, replay := lt.saved[key]
		if !replay {
			body = fmt.Sprintf(`{"id":"o-%d"}`, len(lt.saved)+1)
			lt.saved[key] = body
		}
		lt.mu.Unlock()
		// In the handler a while, as real work is, and long enough that the
		// other copies of a burst arrive while it is there even on a loaded
		// machine (at 20 ms, one copy in some runs came after the first had
		// finished, was admitted, and the burst counted as concurrent).
		time.Sleep(250 * time.Millisecond)
		lt.mu.Lock()
		lt.busy--
		lt.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if replay {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	lt.base = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return lt
}

func limitedRunner(lt *limitedTarget) *Runner {
	return &Runner{
		Endpoint: scenarios.Endpoint{Base: lt.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
			Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)},
		Policy: idemcheck.IETF(), Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1,
		looseSpread: func(int) time.Duration { return time.Hour },
	}
}

// A burst round none of whose attempts but one reached the handler is
// sent again after Retry-After, with a fresh intent, at most
// RefusalRepeats times; every burst stays in the history, and the check
// is inconclusive: nothing ran concurrently in the handler.
func TestRefusedBurstRoundsAreSentAgain(t *testing.T) {
	lt := newLimitedTarget(t, 1, 0)
	r := limitedRunner(lt)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: idemcheck.IETF(),
		Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckConcurrentBurst}}}}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.ConcurrentBurst(4, 2)}, h))
	rounds := 2 * (1 + RefusalRepeats)
	require.Len(t, h.Bursts, rounds)
	require.Len(t, h.Intents, rounds, "each send of a round has an intent of its own")
	refused := 0
	for _, a := range h.Attempts {
		if a.Refusal() {
			refused++
		}
	}
	assert.Equal(t, 3*rounds, refused, "one attempt of each burst admitted, three refused")
	rep := idemassert.Report(h)
	assert.Empty(t, rep.Anomalies)
	require.Len(t, rep.Checks, 1)
	assert.Equal(t, idemcheck.Inconclusive, rep.Checks[0].Status)
	assert.Contains(t, rep.Checks[0].Reason, "rate limit")
}

// A sequential attempt refused before the handler is sent again after
// Retry-After, at most RefusalResends times, and judged on the send that
// was admitted.
func TestRefusedAttemptIsSentAgain(t *testing.T) {
	lt := newLimitedTarget(t, 8, 2)
	r := limitedRunner(lt)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: idemcheck.IETF(),
		Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSequentialReplay}}}}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.SequentialReplay(1)}, h))
	var statuses []int
	for _, a := range h.Attempts {
		statuses = append(statuses, a.Status)
	}
	assert.Equal(t, []int{429, 429, 201, 201}, statuses, "step 1 refused twice, then admitted; step 2 replayed")
	rep := idemassert.Report(h)
	assert.Empty(t, rep.Anomalies)
	assert.Equal(t, idemcheck.Pass, rep.Checks[0].Status, rep.Checks[0].Reason)

	lt = newLimitedTarget(t, 8, 100) // refuses everything
	h = &idemcheck.History{Run: idemcheck.Run{Policy: idemcheck.IETF(),
		Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSequentialReplay}}}}
	require.NoError(t, limitedRunner(lt).Run(context.Background(), []scenarios.Scenario{scenarios.SequentialReplay(1)}, h))
	assert.Len(t, h.Attempts, 2*(1+RefusalResends), "each step sent once and again RefusalResends times")
	rep = idemassert.Report(h)
	assert.Empty(t, rep.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, rep.Checks[0].Status)
}

// Retry-After is honoured in seconds or as a date, 1 s where it is
// missing or unreadable, and never more than MaxRefusalWait.
func TestRefusalWait(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ra   string
		want time.Duration
	}{
		{"", time.Second},
		{"2", 2 * time.Second},
		{"3600", MaxRefusalWait},
		{"soon", time.Second},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 50 * time.Millisecond},
	} {
		h := http.Header{}
		if c.ra != "" {
			h.Set("Retry-After", c.ra)
		}
		assert.Equal(t, c.want, RefusalWait(h, now), "Retry-After %q", c.ra)
	}
}
