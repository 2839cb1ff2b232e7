package runner_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A cancelled soak ends the requests in flight instead of waiting for
// their timeout: here the target never answers and the timeout is longer
// than the test may run, so a soak that waited would hang the test.
func TestSoakCancelEndsRequestsInFlight(t *testing.T) {
	var arrived atomic.Int64
	var ended sync.WaitGroup
	first := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ended.Add(1)
		defer ended.Done()
		if arrived.Add(1) >= 2 {
			once.Do(func() { close(first) })
		}
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client going
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-first
		cancel()
	}()
	sk := &runner.Soak{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`)},
		Policy:   idemcheck.IETF(), Rate: 100, Duration: time.Hour, Workers: 4, Timeout: time.Hour,
	}
	_, err = sk.Run(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	ended.Wait() // every handler saw its client go
	assert.GreaterOrEqual(t, arrived.Load(), int64(2))
}

// soakHistory runs a soak of 200 intents with seed 9 under fs against srv
// and returns its history.
func soakHistory(t *testing.T, srv *httptest.Server, timeout time.Duration, fs ...runner.SoakFault) *idemcheck.History {
	t.Helper()
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	var buf bytes.Buffer
	sk := &runner.Soak{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`)},
		Policy:   idemcheck.IETF(), Rate: 200, Duration: time.Minute, Intents: 200, Seed: 9, Timeout: timeout, Faults: fs,
		History: history.NewEncoder(&buf),
	}
	_, err = sk.Run(context.Background())
	require.NoError(t, err)
	hs, err := history.ReadAll(&buf, "soak")
	require.NoError(t, err)
	require.Len(t, hs, 1)
	return hs[0]
}

// faultedSeqs are the intents (by sequence number) whose first attempt
// went through each fault.
func faultedSeqs(h *idemcheck.History) map[string][]int {
	seqs := map[string]int{}
	for _, in := range h.Intents {
		seqs[in.ID] = in.Seq
	}
	out := map[string][]int{}
	for _, a := range h.Attempts {
		if a.Step == 1 && a.Fault != "" {
			out[a.Fault] = append(out[a.Fault], seqs[a.Intent])
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// The seed chooses which intents meet which fault, one draw per intent in
// the order of their numbers: the same seed gives the same schedule, and
// cut-reply is drawn first, so adding faults leaves the cut intents as
// they were. A reply slower than the client's timeout is lost to it, and
// retried with the same key through the clean link. The timeout is 10 s,
// so that on a starved runner only the 20 s slow reply misses it.
func TestSoakFaultSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)

	cut := runner.SoakFault{Fault: faults.CutReply, Share: 0.2}
	slow := runner.SoakFault{Fault: faults.SlowReply(20 * time.Second), Share: 0.1}
	alone := faultedSeqs(soakHistory(t, srv, 10*time.Second, cut))
	reset := runner.SoakFault{Fault: faults.Reset, Share: 0.1}
	h := soakHistory(t, srv, 10*time.Second, slow, cut, reset)
	many := faultedSeqs(h)
	again := faultedSeqs(soakHistory(t, srv, 10*time.Second, slow, cut, reset))

	require.NotEmpty(t, alone["cut-reply"])
	assert.Equal(t, alone["cut-reply"], many["cut-reply"], "the same intents are cut with more faults")
	require.NotEmpty(t, many["slow-reply:delay=20s"])
	assert.Equal(t, many, again, "the same seed, the same schedule")
	require.NotEmpty(t, many["reset"])
	for _, n := range append(many["slow-reply:delay=20s"], many["reset"]...) {
		assert.NotContains(t, many["cut-reply"], n, "a first attempt meets one fault at most")
	}

	assert.Equal(t, []string{"cut-reply@0.2", "slow-reply:delay=20s@0.1", "reset@0.1"}, h.Run.SoakFaults)
	byIntent := h.ByIntent()
	for _, in := range h.Intents {
		atts := byIntent[in.ID]
		if atts[0].Fault == "" {
			continue
		}
		assert.Equal(t, []string{idemcheck.LinkClient}, atts[0].FaultLinks)
		assert.NotEqual(t, idemcheck.Replied, atts[0].Outcome, "%s: no reply within the timeout", atts[0].Fault)
		if assert.Len(t, atts, 2, "%s: retried", atts[0].Fault) {
			assert.Equal(t, atts[0].Key, atts[1].Key)
			assert.Empty(t, atts[1].Fault)
			assert.Equal(t, idemcheck.Replied, atts[1].Outcome, "the retry after %s: %s", atts[0].Fault, atts[1].Error)
		}
	}
}
