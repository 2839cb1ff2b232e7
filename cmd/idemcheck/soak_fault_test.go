package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	rules "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A soak under the faults of a bad day, against the reference API on
// loopback: each faulted first attempt records its fault and link, each
// that got no reply is retried with the same key, each fault is counted,
// and the reference still passes. A reset comes after the commit, so its
// retry is a replay; a cut request and a swallowed one (timeout) never
// ran, so their retries execute, once; a reply slower than the client's
// patience is late, not lost. Two faults on the whole client link are a
// chain of proxies every attempt goes through.
//
// Only a fault may leave an attempt without its reply, so the load stays
// within what the in-process target can answer on a loaded runner: at most
// 16 requests in flight, against its pool of 4 connections, and 15 s of
// patience. With 64 in flight, 100 a second and 3 s, two busy loops starved
// the race-instrumented target until clean attempts timed out as well.
func TestSoakUnderFaults(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	jsonPath, hist := filepath.Join(dir, "soak.json"), filepath.Join(dir, "soak.jsonl")
	code, out, errOut := cli(t, soakArgs(url, dsn, "--replay-header", "Idempotent-Replayed", "--json", jsonPath, "--history", hist,
		"--intents", "200", "--rate", "50", "--workers", "16", "--duration", "1m", "--timeout", "15s", "--seed", "5",
		"--fault", "reset@0.2", "--fault", "cut-request@10%", "--fault", "timeout@0.05", "--fault", "slow-reply:delay=50ms@0.1",
		"--fault", "latency:ms=5", "--fault", "bandwidth:kbps=1000")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "10.0% of replies cut after commit, reset on 20.0%, cut-request on 10.0%, timeout on 5.0%, slow-reply:delay=50ms on 10.0%, latency:jitter=0,ms=5 on every attempt, bandwidth:kbps=1000 on every attempt")
	assert.Contains(t, out, "  faults:\n    cut-reply  ")
	assert.Contains(t, out, "verdict PASS")

	r := readSoakReport(t, jsonPath).Soak
	assert.EqualValues(t, 200, r.Intents)
	assert.Equal(t, r.Intents, r.Counted)
	assert.Zero(t, r.Duplicates)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Unresolved)
	assert.Equal(t, r.Intents+r.Cut, r.Attempts, "every first attempt without a reply was retried once")
	byName := map[string]idemcheck.SoakFaultResult{}
	var names []string
	var retried int64
	for _, f := range r.Faults {
		byName[f.Fault] = f
		names = append(names, f.Fault)
		retried += f.Retried
	}
	require.Equal(t, []string{"cut-reply", "reset", "cut-request", "timeout", "slow-reply:delay=50ms", "latency:jitter=0,ms=5", "bandwidth:kbps=1000"}, names,
		"cut-reply first, then the others as given, the whole link's last")
	assert.Equal(t, r.Cut, retried, "no first attempt lost its reply but to a fault")
	for _, name := range []string{"cut-reply", "reset", "cut-request", "timeout"} {
		f := byName[name]
		assert.Positive(t, f.Attempts, name)
		assert.Equal(t, f.Attempts, f.Retried, "%s: every first attempt it hit got no reply", name)
		assert.Equal(t, idemcheck.LinkClient, f.Link)
	}
	assert.Equal(t, byName["reset"].Retried, byName["reset"].Replayed, "a reset comes after the commit: every retry is a replay")
	assert.Equal(t, byName["cut-reply"].Retried, byName["cut-reply"].Replayed)
	assert.Zero(t, byName["cut-request"].Replayed, "a cut request never ran: its retry executes")
	assert.Zero(t, byName["timeout"].Replayed, "a swallowed request never ran: its retry executes")
	assert.InDelta(t, 0.2, float64(byName["reset"].Attempts)/200, 0.08, "about its share")
	slow := byName["slow-reply:delay=50ms"]
	assert.Positive(t, slow.Attempts)
	assert.Zero(t, slow.Retried, "a reply 50 ms late is answered within the 15 s timeout")
	lat := byName["latency:jitter=0,ms=5"]
	assert.True(t, lat.WholeLink)
	assert.Equal(t, r.Attempts, lat.Attempts)
	assert.GreaterOrEqual(t, r.P50, 10*time.Millisecond, "5 ms each way on every attempt")
	assert.Equal(t, idemcheck.SoakFaultResult{Fault: "bandwidth:kbps=1000", Link: idemcheck.LinkClient, WholeLink: true, Attempts: r.Attempts}, byName["bandwidth:kbps=1000"])
	assert.Less(t, r.SucceededShare, 1.0, "the cut and swallowed requests' retries were no replays")

	// The history says what happened to each attempt, and tallies offline
	// to the same faults.
	f, err := os.Open(hist)
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, hist)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	h := hs[0]
	assert.Equal(t, []string{"cut-reply@0.1", "reset@0.2", "cut-request@0.1", "timeout@0.05", "slow-reply:delay=50ms@0.1", "latency:jitter=0,ms=5", "bandwidth:kbps=1000"}, h.Run.SoakFaults)
	byIntent := h.ByIntent()
	seen := map[string]int{}
	for _, in := range h.Intents {
		atts := byIntent[in.ID]
		first := atts[0]
		require.Equal(t, 1, first.Step)
		assert.NotContains(t, first.Fault, "latency", "a whole link's fault is the header's, not an attempt's")
		assert.NotContains(t, first.Fault, "bandwidth")
		if first.Fault == "" {
			assert.Len(t, atts, 1, "a clean first attempt was answered")
			continue
		}
		seen[first.Fault]++
		assert.Equal(t, []string{idemcheck.LinkClient}, first.FaultLinks)
		if first.Outcome == idemcheck.Replied {
			assert.Len(t, atts, 1)
			continue
		}
		require.Len(t, atts, 2, "%s: retried once", first.Fault)
		retry := atts[1]
		assert.Equal(t, 2, retry.Step)
		assert.Equal(t, first.Key, retry.Key, "retried with the same key")
		assert.Empty(t, retry.Fault, "the retry goes through the clean link")
		assert.Equal(t, idemcheck.Replied, retry.Outcome)
		replayed := retry.RespHeader.Get("Idempotent-Replayed") == "true"
		switch first.Fault {
		case "reset", "cut-reply":
			assert.True(t, replayed, "%s: the first attempt had committed", first.Fault)
		case "cut-request", "timeout":
			assert.False(t, replayed, "%s: the first attempt never ran", first.Fault)
		}
	}
	for _, name := range []string{"cut-reply", "reset", "cut-request", "timeout", "slow-reply:delay=50ms"} {
		assert.Equal(t, int(byName[name].Attempts), seen[name], name)
	}
	assert.Equal(t, r.Faults, rules.Soak(h).Faults, "the history tallies to the report's faults")
}

// A fault of the database link on a target idemcheck starts: every query
// of the target waits, so every attempt does, and the reference passes.
func TestSoakDBLatencyOnStartedTarget(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	code, out, errOut := cli(t, "soak", "--cmd", self+" "+exampleServerCommand+" orders", "--path", "/orders", "--no-color",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", pgtest.DSN(t), "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--replay-header", "Idempotent-Replayed", "--rate", "100", "--intents", "60", "--duration", "1m", "--cut-share", "0.1",
		"--fault", "db-latency:ms=20", "--json", jsonPath)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "    db-latency:ms=20  the whole database link: every attempt (")
	r := readSoakReport(t, jsonPath).Soak
	assert.EqualValues(t, 60, r.Counted)
	assert.Zero(t, r.Duplicates)
	assert.Zero(t, r.Lost)
	require.Len(t, r.Faults, 2)
	db := r.Faults[1]
	assert.Equal(t, idemcheck.SoakFaultResult{Fault: "db-latency:ms=20", Link: idemcheck.LinkDB, WholeLink: true, Attempts: r.Attempts}, db)
	assert.GreaterOrEqual(t, r.P50, 40*time.Millisecond, "at least one query per request, 20 ms each way")
}

// A bad --fault is a one-line usage error naming the flag, before anything
// is started or sent.
func TestSoakFaultBadInput(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fault", "nope"}, `--fault nope: unknown fault "nope" (known: `},
		{[]string{"--fault", "latency:ms=x"}, `--fault latency:ms=x: latency: ms="x": want whole milliseconds from 0 to 3600000`},
		{[]string{"--fault", "reset:x=1"}, `--fault reset:x=1: reset: unknown parameter "x" (reset takes no parameters)`},
		{[]string{"--fault", "reset@2"}, `--fault reset@2: share "2" is out of range: use 0 to 1, or 0% to 100%, such as reset@0.02`},
		{[]string{"--fault", "reset@-1%"}, `--fault reset@-1%: share "-1%" is out of range`},
		{[]string{"--fault", "latency:ms=5@0.1"}, `--fault latency:ms=5@0.1: latency acts on the whole client link, every attempt, not on a share of them: leave out "@0.1"`},
		{[]string{"--fault", "db-latency:ms=5"}, `--fault db-latency:ms=5 acts on the target's database link, which idemcheck holds only for a target it starts: give --cmd instead of --url`},
		{[]string{"--fault", "db-cut"}, `--fault db-cut: db-cut is not a soak's fault: it acts once, on one chosen statement, which a load of concurrent intents cannot aim at; the checks failed-attempt, webhook-redelivery reach it, on a target idemcheck starts (--cmd or --image)`},
		{[]string{"--fault", "none"}, `--fault none: none is clean traffic, not a fault: leave --fault out`},
		{[]string{"--fault", "reset@0.6", "--fault", "timeout@0.5"}, `--fault: the shares of first attempts add up to 1.11 (cut-reply@0.01, reset@0.6, timeout@0.5): at most 1, since a first attempt meets one fault at most`},
		{[]string{"--fault", "reset", "--fault", "reset@0.1"}, `--fault: reset is given twice: give each fault once`},
		{[]string{"--fault", "cut-reply@0.2", "--cut-share", "0.1"}, `--fault cut-reply@0.2 and --cut-share both set the share of replies cut after commit: give one`},
	} {
		code, out, errOut := cli(t, append([]string{"soak", "--url", srv.URL, "--no-color"}, c.args...)...)
		assert.Equal(t, idemcheck.ExitUsage, code, c.want)
		assert.True(t, strings.HasPrefix(errOut, "idemcheck: "+c.want), "want %q, got %q", c.want, errOut)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		assert.Empty(t, out)
	}
	assert.Zero(t, hits.Load(), "nothing was sent")
}
