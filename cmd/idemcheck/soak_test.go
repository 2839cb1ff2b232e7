package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	rules "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func soakArgs(url, dsn string, extra ...string) []string {
	return append([]string{"soak", "--url", url, "--path", "/orders", "--no-color",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--rate", "200", "--duration", "2s", "--cut-share", "0.1"}, extra...)
}

// readSoakReport reads the JSON report a soak wrote with --json.
func readSoakReport(t *testing.T, path string) idemcheck.SoakReport {
	t.Helper()
	var rep idemcheck.SoakReport
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

func TestSoakReference(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	jsonPath, hist := filepath.Join(dir, "soak.json"), filepath.Join(dir, "soak.jsonl")
	// The intent count, not the 2 s at 200/s, ends the run: on a busy
	// machine vegeta's pacer can reach the end of the duration a hit short.
	code, out, errOut := cli(t, soakArgs(url, dsn, "--replay-header", "Idempotent-Replayed", "--json", jsonPath, "--history", hist,
		"--intents", "400", "--duration", "1m")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)
	r := rep.Soak
	assert.EqualValues(t, 400, r.Intents, "the 400 intents asked for")
	assert.Positive(t, r.Cut, "some replies were cut")
	assert.Equal(t, r.Intents, r.Counted, "every intent's effects were counted")
	assert.Zero(t, r.Duplicates)
	assert.Zero(t, r.Lost)
	assert.InDelta(t, 1.0, r.SucceededShare, 0.001, "every cut reply had committed: its retry was a replay")
	assert.Equal(t, r.Intents+r.Cut, r.Attempts)
	require.NotNil(t, rep.Estimate)

	// The streamed history checks again offline.
	code, out, _ = cli(t, "check", "--no-color", hist)
	assert.Equal(t, idemcheck.ExitHeld, code, out)
}

// --intents ends the soak after that many intents, before --duration has
// passed, and every one of them is counted.
func TestSoakIntentsLimit(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	code, out, errOut := cli(t, append(soakArgs(url, dsn, "--json", jsonPath), "--intents", "50", "--duration", "1m")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)
	assert.EqualValues(t, 50, rep.Soak.Intents)
	assert.EqualValues(t, 50, rep.Soak.Counted)
	assert.Equal(t, rep.Soak.Intents+rep.Soak.Cut, rep.Soak.Attempts)
	assert.Less(t, rep.Soak.Duration.Seconds(), 60.0, "the limit, not the duration, ended it")
}

// A handler with no idempotency at all: each retry of a cut reply makes a
// second order, and the soak counts each one.
func TestSoakCountsDuplicates(t *testing.T) {
	dsn := pgtest.DSN(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(context.Background(), `CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id text NOT NULL)`)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			CustomerID string `json:"customerId"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var id int64
		if err := pool.QueryRow(r.Context(), `INSERT INTO orders (customer_id) VALUES ($1) RETURNING id`, body.CustomerID).Scan(&id); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"orderId": id})
	}))
	t.Cleanup(srv.Close)
	// Effects are counted after the load, or in batches while it runs;
	// with the query, or with its batch form as well.
	const batchSQL = "SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"
	for _, c := range []struct {
		during bool
		batch  string
	}{{false, ""}, {true, ""}, {false, batchSQL}, {true, batchSQL}} {
		t.Run(fmt.Sprintf("count-during=%v batch-sql=%v", c.during, c.batch != ""), func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "soak.json")
			args := soakArgs(srv.URL, dsn, "--json", jsonPath, fmt.Sprint("--count-during=", c.during))
			if c.batch != "" {
				args = append(args, "--effect-batch-sql", c.batch)
			}
			code, out, _ := cli(t, args...)
			require.Equal(t, idemcheck.ExitAnomalies, code, out)
			rep := readSoakReport(t, jsonPath)
			assert.Positive(t, rep.Soak.Cut)
			assert.Equal(t, rep.Soak.Intents, rep.Soak.Counted, "every intent counted")
			assert.Equal(t, rep.Soak.Cut, rep.Soak.Duplicates, "every retried intent was executed twice")
			assert.Positive(t, rep.Soak.DuplicatesPerMillion)
		})
	}
	// A batch form that counts otherwise than the query is caught.
	code, out, errOut := cli(t, soakArgs(srv.URL, dsn, "--duration", "500ms", "--effect-batch-sql",
		"SELECT customer_id::text, count(*) + 1 FROM orders WHERE customer_id = ANY($1) GROUP BY 1")...)
	assert.Equal(t, idemcheck.ExitUnavailable, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "the two must count the same")
}

func TestSoakBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--rate", "0"}, "--rate 0 is out of range"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--cut-share", "2"}, "--cut-share 2 is out of range"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--intents", "-1"}, "--intents -1 is out of range"},
		{[]string{"soak"}, "--url is required"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--junit", "x.xml"}, "flag provided but not defined: -junit"},
		{[]string{"soak", "--url", "https://127.0.0.1:1", "--cut-share", "0.1"}, "--cut-share 0.1: cut-reply acts on the connection's bytes"},
		{[]string{"soak", "--url", "ftp://127.0.0.1:1"}, `--url "ftp://127.0.0.1:1" is not an absolute http:// or https:// URL`},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--effect-arg", "{{intent}}"}, "--effect-arg needs --effect-sql"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--progress", "loud"}, `--progress "loud": use text, json, off or auto`},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--effect-batch-sql", "SELECT 1"}, "--effect-batch-sql needs --effect-sql"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--settle", "-1s"}, "--settle -1s must not be negative"},
		{[]string{"soak", "--url", "http://127.0.0.1:1", "--settle", "10s"}, "--settle waits for effects to settle, and needs --effect-sql to count them"},
	} {
		code, _, errOut := cli(t, c.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, c.want)
		assert.Contains(t, errOut, c.want)
	}
}

// A soak checks what a certification checks before it sends: the target
// answers on loopback and the effect query prepares. A target that
// answers nothing gets no verdict. None of them leaves a file behind.
func TestSoakRefusesWhatItCannotMeasure(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(hangUp.Close)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable", soakArgs("http://127.0.0.1:1", dsn), idemcheck.ExitUnavailable, "cannot reach target 127.0.0.1:1"},
		{"bad effect sql", append(soakArgs(url, dsn), "--effect-sql", "SELECT count(*) FROM nowhere WHERE id = $1"), idemcheck.ExitUsage, "--effect-sql: PostgreSQL says"},
		{"effect batch sql not an array", append(soakArgs(url, dsn), "--effect-batch-sql", "SELECT customer_id, count(*) FROM orders WHERE customer_id = $1 GROUP BY 1"),
			idemcheck.ExitUsage, "--effect-batch-sql's $1 is not an array: compare with = ANY($1)"},
		{"effect batch sql without the value as text", append(soakArgs(url, dsn), "--effect-batch-sql", "SELECT id, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"),
			idemcheck.ExitUsage, `--effect-batch-sql's first column "id" is not text: cast it`},
		{"effect batch sql with one column", append(soakArgs(url, dsn), "--effect-batch-sql", "SELECT count(*) FROM orders WHERE customer_id = ANY($1)"),
			idemcheck.ExitUsage, "--effect-batch-sql must return two columns"},
		{"effect batch sql that writes", append(soakArgs(url, dsn), "--effect-batch-sql", "WITH d AS (DELETE FROM orders WHERE customer_id = ANY($1) RETURNING customer_id) SELECT customer_id::text, count(*) FROM d GROUP BY 1"),
			idemcheck.ExitUsage, "--effect-batch-sql must only read, and this query writes"},
		{"effect batch sql for two arguments", append(soakArgs(url, dsn), "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1 AND $2::text IS NOT NULL", "--effect-arg", "{{key}}",
			"--effect-batch-sql", "SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"), idemcheck.ExitUsage, "--effect-batch-sql takes the values of one --effect-arg as an array, and 2 were given"},
		{"bad effect batch sql", append(soakArgs(url, dsn), "--effect-batch-sql", "SELECT k::text, count(*) FROM nowhere WHERE k = ANY($1) GROUP BY 1"), idemcheck.ExitUsage, "--effect-batch-sql: PostgreSQL says"},
		{"hangs up on every request", soakArgs(hangUp.URL, dsn, "--duration", "500ms", "--timeout", "2s"), idemcheck.ExitUnavailable, "answered none of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(c.args, "--json", filepath.Join(dir, "soak.json"), "--history", filepath.Join(dir, "soak.jsonl"))
			code, out, errOut := cli(t, args...)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			if c.code == idemcheck.ExitUsage {
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "no report, no history, no temporary file")
		})
	}
	// Refused before its pre-flight: no request reached the API.
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	defer pool.Close()
	var made int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&made))
	assert.Zero(t, made, "no order made")
}

// An intent whose every answer was an error promised nothing: no effect is
// then no lost effect, as for the checker's lost-effect. Here a proxy in
// front of the reference API answers every third request 503 itself.
func TestSoakErrorRepliesPromiseNothing(t *testing.T) {
	api, dsn := ordersAPI(t, orders.Reference)
	u, err := url.Parse(api)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	code, out, errOut := cli(t, soakArgs(srv.URL, dsn, "--intents", "150", "--duration", "1m", "--json", jsonPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)
	assert.EqualValues(t, 150, rep.Soak.Counted)
	assert.Less(t, rep.Soak.Success, 0.8, "a third of the first attempts were answered 503")
	assert.Zero(t, rep.Soak.Lost)
	assert.Zero(t, rep.Soak.Duplicates)
}

// A soak's streamed history, tallied again offline by the same rules,
// gives the figures the soak reported.
func TestSoakHistoryTalliesToItsReport(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	jsonPath, hist := filepath.Join(dir, "soak.json"), filepath.Join(dir, "soak.jsonl")
	code, out, errOut := cli(t, soakArgs(url, dsn, "--replay-header", "Idempotent-Replayed", "--json", jsonPath, "--history", hist,
		"--intents", "200", "--duration", "1m")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)

	f, err := os.Open(hist)
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, hist)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	again := rules.Soak(hs[0])
	for name, pair := range map[string][2]int64{
		"intents": {rep.Soak.Intents, again.Intents}, "attempts": {rep.Soak.Attempts, again.Attempts},
		"cut": {rep.Soak.Cut, again.Cut}, "unresolved": {rep.Soak.Unresolved, again.Unresolved},
		"counted": {rep.Soak.Counted, again.Counted}, "duplicates": {rep.Soak.Duplicates, again.Duplicates}, "lost": {rep.Soak.Lost, again.Lost},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: the soak reported %d, its history tallies to %d", name, pair[0], pair[1])
		}
	}
	if rep.Soak.SucceededShare != again.SucceededShare {
		t.Errorf("succeeded share: the soak reported %v, its history tallies to %v", rep.Soak.SucceededShare, again.SucceededShare)
	}
}

// --history - streams the soak's history to standard output, which then
// holds nothing else: the report goes to standard error.
func TestSoakHistoryToStdout(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	code, out, errOut := cli(t, soakArgs(url, dsn, "--history", "-", "--intents", "50", "--duration", "1m")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "verdict PASS")
	hs, err := history.ReadAll(strings.NewReader(out), "stdout")
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Len(t, hs[0].Intents, 50)
	assert.Len(t, hs[0].Observations, 50)
	assert.Equal(t, idemcheck.Pass, rules.SoakVerdict(rules.Soak(hs[0])))
}

// --progress json writes the soak's running count as JSON lines on
// standard error while it runs, the last one with every first attempt and
// the rate over the whole soak;
// --progress text writes it for a person, a line each time when standard
// error is not a terminal.
func TestSoakProgress(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	code, out, errOut := cli(t, soakArgs(url, dsn, "--intents", "150", "--rate", "100", "--duration", "1m", "--progress", "json", "--progress-every", "200ms")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var lines []map[string]any
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "{") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m), l)
			lines = append(lines, m)
		}
	}
	require.GreaterOrEqual(t, len(lines), 2, "a line each interval and one at the end:\n%s", errOut)
	last := lines[len(lines)-1]
	assert.Equal(t, "soak-progress", last["event"])
	assert.EqualValues(t, 150, last["sent"])
	assert.InDelta(t, (150-last["cut"].(float64))/150, last["success"], 1e-9, "every first attempt not cut was answered 201")
	for _, k := range []string{"time", "elapsed_s", "rate", "cut", "errors", "retried"} {
		assert.Contains(t, last, k)
	}
	assert.InDelta(t, 150, last["rate"].(float64)*last["elapsed_s"].(float64), 1e-6, "the last count's rate is over the whole soak")

	code, out, errOut = cli(t, soakArgs(url, dsn, "--intents", "50", "--duration", "1m", "--progress", "text", "--progress-every", "100ms")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Regexp(t, `soak [0-9.]+m?s: 50 sent, [0-9]+/s, [0-9.]+% success, [0-9]+ cut and retried, 0 errors\n`, errOut)
	assert.NotContains(t, errOut, "\r", "no redrawing where standard error is not a terminal")

	code, _, errOut = cli(t, soakArgs(url, dsn, "--intents", "20", "--duration", "1m")...)
	require.Equal(t, idemcheck.ExitHeld, code)
	assert.NotContains(t, errOut, "sent,", "no progress by default where standard error is not a terminal")
}

// --vegeta-results writes vegeta's own result of every first attempt in
// vegeta's encoding: vegeta's decoder reads it back, and its metrics are
// the soak's load.
func TestSoakVegetaResults(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	results, jsonPath := filepath.Join(dir, "results.bin"), filepath.Join(dir, "soak.json")
	code, out, errOut := cli(t, soakArgs(url, dsn, "--intents", "120", "--duration", "1m", "--vegeta-results", results, "--json", jsonPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)

	f, err := os.Open(results)
	require.NoError(t, err)
	defer f.Close()
	dec := vegeta.NewDecoder(f)
	var m vegeta.Metrics
	n := 0
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		n++
		m.Add(&r)
		assert.Equal(t, "POST", r.Method)
		assert.Equal(t, url+"/orders", r.URL, "the target's URL, not the soak's routing")
		assert.Nil(t, r.Body, "no reply body")
		assert.Nil(t, r.Headers, "no reply headers")
		assert.Positive(t, r.Latency)
	}
	m.Close()
	assert.Equal(t, 120, n, "one result per first attempt")
	assert.EqualValues(t, 120, m.Requests)
	assert.Equal(t, rep.Soak.Success, m.Success, "vegeta's success share is the soak's")
	assert.EqualValues(t, 120-rep.Soak.Cut, m.StatusCodes["201"])

	code, _, errOut = cli(t, soakArgs(url, dsn, "--vegeta-results", dir)...)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--vegeta-results "+dir+" is a folder")
}
