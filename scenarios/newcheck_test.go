package scenarios_test

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

	idemassert "github.com/idemcheck/idemcheck/assert"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A new check is one value: registered, it is known by name, planned with
// its rule, run, judged, and its rule reaches the report and its
// contract, held against a target that replays and broken against one
// that executes every request again.
func TestANewCheckIsOneValue(t *testing.T) {
	const name = "triple-replay"
	const rule = "A test rule: a completed request sent twice more gets its saved result both times, with one effect."
	scenarios.Register(t, scenarios.Check{Name: name, Rule: rule}, func(r int) scenarios.Scenario {
		return scenarios.Scenario{Rounds: r, Steps: []scenarios.Step{{Attempts: 1}, {Attempts: 1}, {Attempts: 1}}}
	})
	require.Contains(t, scenarios.Names(), name)

	for _, racy := range []bool{false, true} {
		rep, h := certifyOne(t, name, racy)
		require.Equal(t, []idemcheck.PlannedCheck{{Name: name, Rule: rule}}, h.Run.Checks)
		require.Len(t, h.Attempts, 3*scenarios.Defaults.Rounds)
		for _, in := range h.Intents {
			assert.Equal(t, name, in.Check, "scenarios.Plan labels a check's scenarios with its name")
		}
		require.Len(t, rep.Checks, 1)
		assert.Equal(t, rule, rep.Checks[0].Rule)
		require.Len(t, rep.Contract, len(scenarios.Names()))
		assert.Equal(t, name, rep.Contract[0].Check)
		assert.Equal(t, rule, rep.Contract[0].Rule)
		if racy {
			assert.Equal(t, idemcheck.Fail, rep.Checks[0].Status)
			assert.Equal(t, idemcheck.RuleBroken, rep.Contract[0].Status)
			assert.Contains(t, kindsOf(rep.Anomalies), idemcheck.FreshResultOnReplay)
		} else {
			assert.Equal(t, idemcheck.Pass, rep.Checks[0].Status, rep.Checks[0].Reason)
			assert.Equal(t, idemcheck.RuleHeld, rep.Contract[0].Status)
		}
	}
}

// certifyOne plans the check called name under the IETF policy, runs it
// against a loopback target that replays (or, racy, executes every request
// again) and returns the report and the history: a check's own test.
func certifyOne(t *testing.T, name string, racy bool) (idemcheck.Report, *idemcheck.History) {
	t.Helper()
	base := replayTarget(t, racy)
	e := scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
		Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)}
	p := idemcheck.IETF()
	scs, plan, err := scenarios.Plan([]string{name}, scenarios.Defaults, p, e, nil, nil)
	require.NoError(t, err)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: p, Checks: plan, NotAsked: scenarios.NotAsked(plan)}}
	r := &runner.Runner{Endpoint: e, Policy: p, Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1}
	require.NoError(t, r.Run(context.Background(), scs, h))
	return idemassert.Report(h), h
}

func kindsOf(as []idemcheck.Anomaly) []idemcheck.Kind {
	var out []idemcheck.Kind
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

// replayTarget is an HTTP/1.1 target on loopback that answers every
// request 201 with one resource id, as a target that replays does, or,
// racy, a new id each time, as one without idempotency does.
func replayTarget(t *testing.T, racy bool) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	n := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		id := "o-1"
		if racy {
			id = fmt.Sprintf("o-%d", n)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":%q}`, id)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}
