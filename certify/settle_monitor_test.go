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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/scenarios"
)

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
