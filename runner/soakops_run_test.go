package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// monitoredAPI is a real HTTP server for an API that answers 202 and
// works later: POST / answers 202 with the operation's status monitor,
// /ops/{intent}, in Location; the operation's effect (GET
// /count/{intent}) lands delay after the reply, as its monitor turns
// from "pending" to "succeeded". How each intent's operation ends is
// fate's (by the intent's number): "done", "pending" (never over, no
// effect), "failed" (no effect) or "short" (done, no effect: lost).
type monitoredAPI struct {
	fate  func(seq int) string
	delay time.Duration

	mu       sync.Mutex
	accepted map[string]time.Time
	reads    map[string]int
	badAuth  int
}

func (m *monitoredAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.accepted == nil {
		m.accepted, m.reads = map[string]time.Time{}, map[string]int{}
	}
	if r.Method == http.MethodPost {
		var in struct{ A string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		if _, ok := m.accepted[in.A]; !ok {
			m.accepted[in.A] = time.Now()
		}
		w.Header().Set("Location", "/ops/"+in.A)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"status":"pending"}`)
		return
	}
	what, intent, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	seq, _ := strconv.Atoi(intent[strings.LastIndex(intent, "-")+1:])
	at, ok := m.accepted[intent]
	if !ok {
		http.NotFound(w, r)
		return
	}
	fate, landed := m.fate(seq), time.Since(at) >= m.delay
	switch what {
	case "ops":
		m.reads[intent]++
		if r.Header.Get("Authorization") != "Bearer t-"+intent {
			m.badAuth++
		}
		state := "pending"
		switch {
		case fate == "failed" && landed:
			state = "failed"
		case (fate == "done" || fate == "short") && landed:
			state = "succeeded"
		}
		fmt.Fprintf(w, `{"status":%q}`, state)
	case "count":
		n := 0
		if fate == "done" && landed {
			n = 1
		}
		fmt.Fprintf(w, `{"count":%d}`, n)
	}
}

// soakMonitored soaks api with 24 intents, its status monitors followed
// under a settle bound (counted during the load with during), and returns
// the tally's result and the history.
func soakMonitored(t *testing.T, api *monitoredAPI, settle time.Duration, during bool) (idemcheck.SoakResult, *idemcheck.History) {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	pol := idemcheck.IETF()
	pol.StatusPointer, pol.StatusDone, pol.StatusFailed = "/status", []string{"succeeded"}, []string{"failed"}
	var buf bytes.Buffer
	tally := &checker.SoakTally{Policy: pol}
	sk := &runner.Soak{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`),
			Header: []scenarios.Header{{Name: "Authorization", Value: idemcheck.MustTemplate("Bearer t-{{intent}}")}}},
		Policy: pol, Rate: 100, Duration: time.Minute, Intents: 24, Seed: 1, Timeout: 10 * time.Second,
		Effects: &runner.Effects{HTTP: &runner.HTTPEffects{Base: base, Upstream: srv.Listener.Addr().String(),
			Path: idemcheck.MustTemplate("/count/{{intent}}"), Count: "/count"}},
		Settle: settle, CountDuring: during, Counter: tally, History: history.NewEncoder(&buf),
		Header: idemcheck.Run{Policy: pol, Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSoak}}},
	}
	load, err := sk.Run(context.Background())
	require.NoError(t, err)
	hs, err := history.ReadAll(&buf, "soak")
	require.NoError(t, err)
	require.Len(t, hs, 1)
	return tally.Result(*load), hs[0]
}

// offlineAgrees checks that the history, checked offline, gives the soak's
// counts, status monitors and verdict.
func offlineAgrees(t *testing.T, r idemcheck.SoakResult, h *idemcheck.History) {
	t.Helper()
	again := checker.Soak(h)
	assert.Equal(t, r.Operations, again.Operations)
	assert.Equal(t, r.Lost, again.Lost)
	assert.Equal(t, r.Pending, again.Pending)
	assert.Equal(t, r.Unsettled, again.Unsettled)
	assert.Equal(t, checker.SoakVerdict(r), checker.SoakVerdict(again))
	assert.Equal(t, checker.SoakReason(r), checker.SoakReason(again))
}

// A correct 202 API: every monitor is followed, with the endpoint's
// headers, from "pending" to "succeeded", the counts settle once every
// monitor said done, each intent's effect is there, and the soak passes;
// the history says what each monitor said, so the offline check agrees.
func TestSoakFollowsStatusMonitors(t *testing.T) {
	api := &monitoredAPI{fate: func(int) string { return "done" }, delay: 300 * time.Millisecond}
	r, h := soakMonitored(t, api, 10*time.Second, false)
	assert.EqualValues(t, 24, r.Counted)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Pending)
	assert.Zero(t, r.Unsettled)
	require.NotNil(t, r.Settle)
	assert.True(t, r.Settle.Settled, "%+v", *r.Settle)
	require.NotNil(t, r.Operations, "the monitors were followed")
	assert.EqualValues(t, 24, r.Operations.Monitors)
	assert.EqualValues(t, 24, r.Operations.Done)
	assert.Zero(t, r.Operations.Pending)
	assert.Zero(t, r.Operations.Unjudged)
	assert.Equal(t, idemcheck.Pass, checker.SoakVerdict(r), checker.SoakReason(r))
	api.mu.Lock()
	reads := 0
	for _, n := range api.reads {
		reads += n
	}
	assert.Len(t, api.reads, 24, "every monitor read")
	assert.Zero(t, api.badAuth, "read with the endpoint's headers")
	api.mu.Unlock()
	assert.EqualValues(t, reads, r.Operations.Reads, "the history says how often each monitor was read")
	assert.LessOrEqual(t, reads, 24*r.Settle.Passes, "one read a monitor a pass at most")
	for _, o := range h.Observations {
		require.NotNil(t, o.Settle, o.Intent)
		require.Len(t, o.Settle.Operations, 1, o.Intent)
		op := o.Settle.Operations[0]
		assert.Equal(t, "/ops/"+o.Intent, op.URL)
		assert.Equal(t, idemcheck.OperationDone, op.Over)
		assert.Equal(t, "succeeded", op.State)
		assert.Positive(t, op.Attempt)
	}
	offlineAgrees(t, r, h)
}

// Operations that do not finish well: one whose monitor never says done
// leaves its intent unjudged, never lost, and the soak inconclusive,
// naming the monitor; one that failed owed no effect; the bound ends
// the passes. Done with no effect is a lost effect: the API said the
// work was done.
func TestSoakStatusMonitorsDecideWhatIsOwed(t *testing.T) {
	fates := []string{"done", "pending", "failed"}
	r, h := soakMonitored(t, &monitoredAPI{fate: func(seq int) string { return fates[seq%3] }}, 3*time.Second, false)
	assert.EqualValues(t, 24, r.Counted)
	assert.Zero(t, r.Lost, "no pending operation is called lost")
	assert.Zero(t, r.Pending)
	assert.Zero(t, r.Unsettled)
	require.NotNil(t, r.Operations)
	assert.EqualValues(t, 24, r.Operations.Monitors)
	assert.EqualValues(t, 8, r.Operations.Done)
	assert.EqualValues(t, 8, r.Operations.Failed)
	assert.EqualValues(t, 8, r.Operations.Pending)
	assert.EqualValues(t, 8, r.Operations.Unjudged)
	assert.EqualValues(t, 8, r.Operations.OwedNothing)
	require.NotNil(t, r.Settle)
	assert.False(t, r.Settle.Settled)
	assert.Equal(t, idemcheck.Inconclusive, checker.SoakVerdict(r))
	reason := checker.SoakReason(r)
	assert.Contains(t, reason, "the status monitors of 8 intents still said their operation was pending")
	assert.Regexp(t, `the first, intent (ic-\S+): the status monitor of attempt \d+ \(GET /ops/ic-\S+\) still said "pending" after \d+ reads`, reason)
	offlineAgrees(t, r, h)

	r, h = soakMonitored(t, &monitoredAPI{fate: func(seq int) string { return []string{"done", "short"}[seq%2] }}, 3*time.Second, false)
	assert.EqualValues(t, 12, r.Lost, "done and short")
	assert.Zero(t, r.Pending)
	require.NotNil(t, r.Operations)
	assert.EqualValues(t, 24, r.Operations.Done)
	assert.Equal(t, idemcheck.Fail, checker.SoakVerdict(r))
	offlineAgrees(t, r, h)
}

// Counted during the load, each intent is counted as it completes (its
// effect not there yet: pending) and again once the bound has passed,
// its status monitor read once with the recount: done with its effect,
// it is pending no more; still pending, it is unjudged, naming the
// monitor; failed, it owed nothing; done with no effect, it is lost.
func TestSoakCountDuringReadsStatusMonitorsAtTheRecount(t *testing.T) {
	fates := []string{"done", "pending", "failed", "short"}
	r, h := soakMonitored(t, &monitoredAPI{fate: func(seq int) string { return fates[seq%4] }, delay: 200 * time.Millisecond}, time.Second, true)
	assert.EqualValues(t, 24, r.Counted)
	assert.EqualValues(t, 24, r.Recounted)
	assert.Zero(t, r.Pending, "every intent pending when judged is told apart by the recount")
	assert.EqualValues(t, 6, r.Lost, "done and short")
	require.NotNil(t, r.Operations)
	assert.EqualValues(t, 24, r.Operations.Monitors)
	assert.EqualValues(t, 24, r.Operations.Reads, "one read each, with the recount")
	assert.EqualValues(t, 12, r.Operations.Done)
	assert.EqualValues(t, 6, r.Operations.Failed)
	assert.EqualValues(t, 6, r.Operations.Pending)
	assert.EqualValues(t, 6, r.Operations.Unjudged)
	assert.EqualValues(t, 6, r.Operations.OwedNothing)
	assert.Equal(t, idemcheck.Fail, checker.SoakVerdict(r))
	offlineAgrees(t, r, h)

	r, h = soakMonitored(t, &monitoredAPI{fate: func(seq int) string { return fates[seq%3] }, delay: 200 * time.Millisecond}, time.Second, true)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Pending)
	assert.Equal(t, idemcheck.Inconclusive, checker.SoakVerdict(r))
	assert.Contains(t, checker.SoakReason(r), "the status monitors of 8 intents still said their operation was pending")
	offlineAgrees(t, r, h)
}
