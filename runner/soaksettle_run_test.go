package runner_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	checker "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A soak counting once settled after the load whose counts do not settle
// within the bound: an odd intent's effect lands half a second after the
// first count, between the first pass and the second; an even one's never
// comes. The passes stop when the bound leaves no room for another a quiet
// period after the last, the counts carry what settling did, and nothing
// is called lost: the odd intents' counts were still changing, the even
// ones are pending, and the soak is inconclusive, saying so.
func TestSoakSettleBoundRunsOut(t *testing.T) {
	var mu sync.Mutex
	var firstCount time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		if firstCount.IsZero() {
			firstCount = time.Now()
		}
		since := time.Since(firstCount)
		mu.Unlock()
		intent := strings.TrimPrefix(r.URL.Path, "/count/")
		seq, _ := strconv.Atoi(intent[strings.LastIndex(intent, "-")+1:])
		n := 0
		if seq%2 == 1 && since > 500*time.Millisecond {
			n = 1
		}
		fmt.Fprintf(w, `{"count":%d}`, n)
	}))
	defer srv.Close()
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	tally := &checker.SoakTally{Policy: idemcheck.IETF()}
	sk := &runner.Soak{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`)},
		Policy:   idemcheck.IETF(), Rate: 100, Duration: time.Minute, Intents: 20, Seed: 1, Timeout: 10 * time.Second,
		Effects: &runner.Effects{HTTP: &runner.HTTPEffects{Base: base, Upstream: srv.Listener.Addr().String(),
			Path: idemcheck.MustTemplate("/count/{{intent}}"), Count: "/count"}},
		Settle:  2 * time.Second,
		Counter: tally,
	}
	load, err := sk.Run(context.Background())
	require.NoError(t, err)
	r := tally.Result(*load)
	assert.EqualValues(t, 20, r.Intents)
	assert.EqualValues(t, 20, r.Counted)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Duplicates)
	assert.EqualValues(t, 10, r.Pending, "the even intents: answered 202, no effect yet")
	assert.EqualValues(t, 10, r.Unsettled, "the odd intents: still changing")
	require.NotNil(t, r.Settle)
	assert.False(t, r.Settle.Settled)
	assert.Equal(t, 2*time.Second, r.Settle.Bound)
	assert.Equal(t, time.Second, r.Settle.Quiet)
	assert.Equal(t, 2, r.Settle.Passes, "a third pass would have begun after the bound")
	assert.Less(t, r.Settle.Waited, 2*time.Second)
	assert.Equal(t, idemcheck.Inconclusive, checker.SoakVerdict(r))
	reason := checker.SoakReason(r)
	assert.Contains(t, reason, "10 intents answered with an accepted status (effect pending) still had no effect when the settle bound (2s) ran out")
	assert.Contains(t, reason, "the effect counts of 10 intents were still changing when the settle bound ran out (2s, 2 passes over")
}
