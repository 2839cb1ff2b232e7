package certify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/scenarios"
)

// queueAPI answers 202 for each new key and makes the key's effect later,
// in a queue that runs one job at a time: the second job waits well past
// the quiet period behind the first, as a busy queue makes it. A retry of
// a key gets its saved 202. Its effects are read back per intent.
func queueAPI(t *testing.T, gap time.Duration) *url.URL {
	t.Helper()
	var mu sync.Mutex
	keys := map[string]string{}      // key: the payment id answered
	landed := map[string]int{}       // intent: effects made
	queued := map[string]time.Time{} // intent: when its queue is next free
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			n := landed[strings.TrimPrefix(r.URL.Path, "/count/")]
			mu.Unlock()
			fmt.Fprintf(w, `{"count":%d}`, n)
			return
		}
		var in struct{ Customer string }
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &in)
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		id, seen := keys[key]
		if !seen {
			id = fmt.Sprintf("pay_%d", len(keys)+1)
			keys[key] = id
			at := time.Now().Add(100 * time.Millisecond)
			if next := queued[in.Customer]; next.After(at) {
				at = next
			}
			queued[in.Customer] = at.Add(gap)
			time.AfterFunc(time.Until(at), func() {
				mu.Lock()
				landed[in.Customer]++
				mu.Unlock()
			})
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if seen {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"paymentId":%q,"status":"pending"}`, id)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u
}

// Two keys answered 202 are two operations, each owing its effect: the
// settle awaits both, however long after the first the queue runs the
// second, within the bound. Counting the first and calling the second lost
// once the count had been quiet a second would fail a correct service.
func TestSettleAwaitsAnEffectForEachAcceptedKey(t *testing.T) {
	base := queueAPI(t, 1500*time.Millisecond)
	cfg := certify.Config{Settings: certify.Settings{Policy: idemcheck.IETF()}}
	cfg.Policy.ReplayHeader = "Idempotent-Replayed"
	cfg.Endpoint.Base, cfg.Endpoint.Method = base, "POST"
	cfg.Endpoint.Path = idemcheck.MustTemplate("/payments")
	cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customer":"{{intent}}"}`)
	readBack := idemcheck.MustTemplate("/count/{{intent}}")
	cfg.EffectHTTP, cfg.EffectCount = &readBack, "/count"
	cfg.Checks = []string{idemcheck.CheckDistinctKeys}
	cfg.Options = scenarios.Defaults
	cfg.Options.Rounds, cfg.Options.Settle = 2, 6*time.Second
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s: %s", a.Kind, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	require.Len(t, res.History.Observations, 2)
	for _, o := range res.History.Observations {
		require.NotNil(t, o.Settle)
		assert.EqualValues(t, 2, o.Effects, o.Intent)
		assert.Equal(t, 2, o.Settle.Await, "one effect awaited for each key answered 202")
		assert.True(t, o.Settle.Settled)
	}
}
