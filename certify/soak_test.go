package certify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A soak from Go, against the orders reference on a real PostgreSQL: the
// report carries its counts and its cost estimate, the history comes back
// and is in its file, and a correct API passes.
func TestSoakFromGo(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	cfg := certify.SoakConfig{
		Settings: ordersConfig(base, pool).Settings,
		Duration: 10 * time.Second, Intents: 60, Seed: 3, Value: 40,
		Faults:      []runner.SoakFault{{Fault: faults.CutReply, Share: 0.2}},
		HistoryFile: filepath.Join(t.TempDir(), "soak.jsonl"), KeepHistory: true,
	}
	cfg.Rate = 100
	res, err := certify.Soak(context.Background(), cfg)
	require.NoError(t, err)
	rep := res.Report
	assert.Equal(t, idemcheck.Pass, rep.Verdict, rep.Reason)
	require.NotNil(t, rep.Soak)
	assert.EqualValues(t, 60, rep.Soak.Intents)
	assert.EqualValues(t, 60, rep.Soak.Counted, "every intent's effects counted")
	assert.Zero(t, rep.Soak.Duplicates)
	assert.Positive(t, rep.Soak.Cut, "the cut-reply fault hit some first attempts")
	require.NotNil(t, rep.Estimate, "the report carries its cost estimate")
	assert.NotEmpty(t, rep.EstimateAssumes)
	assert.Equal(t, "/orders", rep.Target.Path)

	require.NotNil(t, res.History)
	assert.Len(t, res.History.Intents, 60)
	assert.Equal(t, []string{"cut-reply@0.2"}, res.History.Run.SoakFaults)
	f, err := os.Open(cfg.HistoryFile)
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, cfg.HistoryFile)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Len(t, hs[0].Attempts, len(res.History.Attempts), "the file holds the history returned")
}

// A soak hides what --redact-field and --redact-query name, in the
// requests and the replies, in its history and its report, as a
// certification does.
func TestSoakRedactsFieldsAndQueryValues(t *testing.T) {
	const card, apiKey = "4111-5e3c-9d2a-0077", "QK-8c1f0b7ad2e4"
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("api_key") == apiKey && bytes.Contains(b, []byte(card)) {
			seen.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		// The reply echoes the card, as a careless API does.
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	hist := filepath.Join(t.TempDir(), "soak.jsonl")
	cfg := certify.SoakConfig{
		Settings: certify.Settings{
			Endpoint: scenarios.Endpoint{Base: u, Method: "POST",
				Path: idemcheck.MustTemplate("/orders?api_key=" + apiKey + "&n={{intent}}"),
				Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}","card":{"number":"` + card + `"}}`)},
			Policy:       idemcheck.IETF(),
			RedactFields: []string{"/card/number"}, RedactQuery: []string{"api_key"},
		},
		Duration: 10 * time.Second, Intents: 20, Seed: 1,
		Faults:      []runner.SoakFault{{Fault: faults.CutReply, Share: 0.2}},
		HistoryFile: hist, KeepHistory: true,
	}
	cfg.Rate = 100
	res, err := certify.Soak(context.Background(), cfg)
	require.NoError(t, err)
	assert.Positive(t, seen.Load(), "the secrets were sent")
	b, err := os.ReadFile(hist)
	require.NoError(t, err)
	require.Contains(t, string(b), `"attempt"`, "the history holds the attempts")
	var rep bytes.Buffer
	require.NoError(t, res.Report.WriteJSON(&rep))
	kept, err := json.Marshal(res.History)
	require.NoError(t, err)
	for name, out := range map[string]string{"history": string(b), "report": rep.String(), "history returned": string(kept)} {
		assert.NotContains(t, out, card, "the %s holds the redacted body field", name)
		assert.NotContains(t, out, apiKey, "the %s holds the redacted query value", name)
	}
}

// A soak's configuration errors are usage errors naming the setting in
// Go's words, never a flag, before anything is sent.
func TestSoakConfigErrorsNameFields(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	good := certify.SoakConfig{
		Settings: certify.Settings{Endpoint: scenarios.Endpoint{Base: u, Method: "POST", Path: idemcheck.MustTemplate("/orders")}, Policy: idemcheck.IETF(), Rate: 10},
		Duration: time.Second,
	}
	for _, c := range []struct {
		field idemcheck.Field
		set   func(*certify.SoakConfig)
		want  string
	}{
		{"Rate", func(c *certify.SoakConfig) { c.Rate = 0 }, "Rate 0 is out of range: use 1 to 100000"},
		{"Rate", func(c *certify.SoakConfig) { c.Rate = 2.5 }, "Rate 2.5 is not a whole number"},
		{"Duration", func(c *certify.SoakConfig) { c.Duration = 0 }, "Duration 0s must be positive"},
		{"Workers", func(c *certify.SoakConfig) { c.Workers = 5000 }, "Workers 5000 is out of range"},
		{"Settle", func(c *certify.SoakConfig) { c.Settle = time.Second }, "Settle waits for effects to settle, and needs EffectSQL"},
		{"EffectBatchSQL", func(c *certify.SoakConfig) { c.EffectBatchSQL = "SELECT 1" }, "EffectBatchSQL needs EffectSQL"},
		{"Rate", func(c *certify.SoakConfig) { c.Rate, c.Shard = 3, idemcheck.Shard{Index: 3, Count: 4} }, "Rate 3 over 4 shards leaves shard 3 nothing to send: use Rate 4 or more"},
		{"Faults", func(c *certify.SoakConfig) {
			c.Faults = []runner.SoakFault{{Fault: faults.Fault{Name: "db-latency", Link: faults.LinkDB}}}
		}, "Faults: "},
		{"EffectSQL", func(c *certify.SoakConfig) { c.EffectSQL = "SELECT 1" }, "EffectSQL needs a database"},
	} {
		t.Run(c.want, func(t *testing.T) {
			cfg := good
			c.set(&cfg)
			_, err := certify.Soak(context.Background(), cfg)
			require.Error(t, err)
			var ie *idemcheck.Error
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, idemcheck.ExitUsage, ie.Code, err.Error())
			var fe *idemcheck.FieldError
			require.True(t, errors.As(err, &fe), err.Error())
			assert.Equal(t, c.field, fe.Field)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "--", "a library error names no flag")
		})
	}
	assert.Zero(t, hits.Load(), "nothing sent")
}
