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

// monitoredConfig certifies srv's POST /payments with sequential-replay,
// its status monitors followed (/status: succeeded or failed) and its
// effects read back from GET /count/{intent}.
func monitoredConfig(t *testing.T, srv *httptest.Server) certify.Config {
	t.Helper()
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	cfg := certify.Config{Settings: certify.Settings{Policy: idemcheck.IETF()}}
	cfg.Policy.StatusPointer, cfg.Policy.StatusDone, cfg.Policy.StatusFailed = "/status", []string{"succeeded"}, []string{"failed"}
	cfg.Endpoint.Base, cfg.Endpoint.Method = base, "POST"
	cfg.Endpoint.Path = idemcheck.MustTemplate("/payments")
	cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customer":"{{intent}}"}`)
	readBack := idemcheck.MustTemplate("/count/{{intent}}")
	cfg.EffectHTTP, cfg.EffectCount = &readBack, "/count"
	cfg.Checks = []string{idemcheck.CheckSequentialReplay}
	cfg.Options = scenarios.Defaults
	return cfg
}

// A status monitor that says done while the effect never comes: the API
// itself said the work was done, so once the count has been quiet the
// settle stops waiting for the effect and the intent is judged short, a
// lost effect, rather than awaited until the bound and left undecided.
func TestSettleDoneAndShortIsLost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			var in struct{ Customer string }
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &in)
			w.Header().Set("Location", "/ops/"+in.Customer)
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"status":"pending"}`)
		case strings.HasPrefix(r.URL.Path, "/ops/"):
			_, _ = io.WriteString(w, `{"status":"succeeded"}`)
		default:
			fmt.Fprint(w, `{"count":0}`) // the worker said done and wrote nothing
		}
	}))
	cfg := monitoredConfig(t, srv)
	cfg.Options.Rounds, cfg.Options.Settle = 1, 30*time.Second
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, idemcheck.Fail, res.Report.Verdict, res.Report.Checks[0].Reason)
	require.NotEmpty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.LostEffect, res.Report.Anomalies[0].Kind)
	require.Len(t, res.History.Observations, 1)
	o := res.History.Observations[0]
	require.NotNil(t, o.Settle)
	assert.True(t, o.Settle.Settled, "settled before the bound: the monitor said done")
	require.Len(t, o.Settle.Operations, 1)
	assert.Equal(t, idemcheck.OperationDone, o.Settle.Operations[0].Over)
}

// A worker that commits its effect, later than the quiet period, while its
// status monitor is being read: the monitor says done, and the effect is
// there for any read after it. Each poll reads the monitors before it
// counts, so the count taken after a monitor said done holds the effect:
// PASS. Counted first (as it once was), the quiet count of none beside a
// monitor that had just said done made a lost effect of a correct service
// (seen under load, where a worker's commit fell between the two reads).
func TestSettleCountsAfterTheMonitorSaidDone(t *testing.T) {
	var mu sync.Mutex
	made := map[string]int{}
	posted := map[string]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			var in struct{ Customer string }
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &in)
			mu.Lock()
			if _, ok := posted[in.Customer]; !ok {
				posted[in.Customer] = time.Now()
			}
			mu.Unlock()
			w.Header().Set("Location", "/ops/"+in.Customer)
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"status":"pending"}`)
		case strings.HasPrefix(r.URL.Path, "/ops/"):
			// The worker's commit lands as its monitor is read, once the
			// quiet period (1 s) has passed since the request.
			id := strings.TrimPrefix(r.URL.Path, "/ops/")
			mu.Lock()
			if time.Since(posted[id]) > 1500*time.Millisecond {
				made[id] = 1
			}
			state := map[int]string{0: "pending", 1: "succeeded"}[made[id]]
			mu.Unlock()
			fmt.Fprintf(w, `{"status":%q}`, state)
		default:
			mu.Lock()
			n := made[strings.TrimPrefix(r.URL.Path, "/count/")]
			mu.Unlock()
			fmt.Fprintf(w, `{"count":%d}`, n)
		}
	}))
	cfg := monitoredConfig(t, srv)
	cfg.Options.Rounds, cfg.Options.Settle = 2, 5*time.Second
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict, res.Report.Checks[0].Reason)
}
