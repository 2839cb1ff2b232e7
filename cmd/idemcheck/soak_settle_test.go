package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/payments"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// paymentsAPI serves the queue-backed payments example (202 Accepted, a
// River worker making the payment 100-500 ms later, its job retried once
// 1.5 s after) on a fresh database, and returns its URL and the DSN.
func paymentsAPI(t *testing.T, v payments.Variant) (string, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, payments.Migrate(context.Background(), pool))
	api, err := payments.New(context.Background(), pool, payments.Config{Variant: v})
	require.NoError(t, err)
	t.Cleanup(api.Close)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, dsn
}

// paymentsSoak soaks the payments API with 100 intents at 50 a second, a
// tenth of the replies cut after commit, and returns the exit code, the
// report and what was printed.
func paymentsSoak(t *testing.T, url, dsn string, extra ...string) (int, idemcheck.SoakReport, string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	args := append([]string{"soak", "--url", url, "--path", "/payments", "--no-color",
		"--body", `{"customerId":"{{intent}}","amountCents":1500}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM payments WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--replay-header", "Idempotent-Replayed", "--rate", "50", "--intents", "100", "--duration", "1m", "--cut-share", "0.1",
		"--json", jsonPath}, extra...)
	code, out, errOut := cli(t, args...)
	require.Contains(t, []int{idemcheck.ExitHeld, idemcheck.ExitAnomalies, idemcheck.ExitInconclusive}, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	rep := readSoakReport(t, jsonPath)
	require.EqualValues(t, 100, rep.Soak.Intents, out)
	require.Equal(t, rep.Soak.Intents, rep.Soak.Counted, "every intent counted:\n%s", out)
	return code, rep, out
}

// The reference payments API, soaked: with --settle its effects are
// counted once settled after the load and it passes; counted right after
// the load, or as each intent completes, the payments still in the
// worker's hands are pending, never lost, and the soak says to settle;
// counted during the load with --settle, every intent is counted again
// once the bound has passed and nothing appeared late.
func TestSoakSettlePaymentsReference(t *testing.T) {
	url, dsn := paymentsAPI(t, payments.Reference)

	hist := filepath.Join(t.TempDir(), "soak.jsonl")
	start := time.Now()
	code, rep, out := paymentsSoak(t, url, dsn, "--settle", "10s", "--history", hist)
	t.Logf("--settle 10s after the load: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	r := rep.Soak
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Equal(t, idemcheck.Pass, rep.Verdict)
	assert.Zero(t, r.Duplicates)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Pending)
	assert.Zero(t, r.Unsettled)
	require.NotNil(t, r.Settle)
	assert.True(t, r.Settle.Settled, "%+v", *r.Settle)
	assert.GreaterOrEqual(t, r.Settle.Passes, 2)
	assert.Equal(t, 10*time.Second, r.Settle.Bound)
	assert.Equal(t, time.Second, r.Settle.Quiet)
	assert.Contains(t, out, "effects counted once settled: ")
	// The history says how each count settled: checked offline, it
	// gives the same verdict.
	code, out, _ = cli(t, "check", "--no-color", hist)
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Contains(t, out, "effects counted once settled: ")

	// Counted right after the load: no payment is called lost.
	start = time.Now()
	code, rep, out = paymentsSoak(t, url, dsn)
	t.Logf("no --settle, counted after the load: %v, %d pending\n%s", time.Since(start).Round(time.Millisecond), rep.Soak.Pending, out)
	assert.Zero(t, rep.Soak.Lost)
	assert.Zero(t, rep.Soak.Duplicates)
	if rep.Soak.Pending > 0 {
		assert.Equal(t, idemcheck.ExitInconclusive, code)
		assert.Contains(t, rep.Reason, "count effects once they settle (--settle)")
	}

	// Counted as each intent completes, before its worker ran: pending.
	code, rep, out = paymentsSoak(t, url, dsn, "--count-during")
	t.Logf("--count-during, no --settle: %d pending\n%s", rep.Soak.Pending, out)
	assert.Zero(t, rep.Soak.Lost)
	assert.Positive(t, rep.Soak.Pending, "a worker takes 100 ms at least: some intent was counted before it")
	assert.Equal(t, idemcheck.ExitInconclusive, code)
	assert.Equal(t, idemcheck.Inconclusive, rep.Verdict)
	assert.Contains(t, rep.Reason, "right after the reply")

	// Counted as each completes and again 5 s after the load: the
	// payments pending at first are all there, once each.
	start = time.Now()
	code, rep, out = paymentsSoak(t, url, dsn, "--count-during", "--settle", "5s")
	t.Logf("--count-during --settle 5s: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	r = rep.Soak
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Equal(t, r.Counted, r.Recounted)
	assert.Zero(t, r.LateDuplicates)
	assert.Zero(t, r.Pending)
	require.NotNil(t, rep.Estimate)
	assert.Zero(t, rep.Estimate.LateDuplicatesPerDay)
}

// unkeyed-effect's worker writes its payment with no key, so the job River
// runs again (its receipt failed after the payment committed) writes a
// second one about two seconds after the 202. Counted as each intent
// completes and again once --settle has passed after the load, every
// intent holds one payment more than it was judged with: late duplicates,
// each with both counts and their times, the verdict FAIL, the estimate
// counting them, and the history checked offline says the same. Counted
// once settled after the load, the passes wait for the second payments,
// and they are duplicates.
func TestSoakSettlePaymentsUnkeyedEffect(t *testing.T) {
	url, dsn := paymentsAPI(t, payments.UnkeyedEffect)

	hist := filepath.Join(t.TempDir(), "soak.jsonl")
	start := time.Now()
	code, rep, out := paymentsSoak(t, url, dsn, "--count-during", "--settle", "5s", "--history", hist)
	t.Logf("--count-during --settle 5s: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	r := rep.Soak
	assert.Equal(t, idemcheck.ExitAnomalies, code, out)
	assert.Equal(t, idemcheck.Fail, rep.Verdict)
	assert.Equal(t, r.Counted, r.Recounted, "every intent counted again")
	assert.Equal(t, r.Recounted, r.LateDuplicates, "every job was run again after its payment committed")
	assert.InDelta(t, 1.0, r.LateDuplicateRate, 1e-9)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Pending, "every payment pending at the reply was found by the recount")
	require.Len(t, r.Anomalies, idemcheck.MaxSoakAnomalies)
	for _, a := range r.Anomalies {
		assert.Equal(t, idemcheck.LateDuplicateEffect, a.Kind)
		assert.EqualValues(t, 2, a.Observed["late_effects"], a.Intent)
		assert.Contains(t, []any{0.0, 1.0}, a.Observed["effects"], a.Intent)
		judgedAt, err := time.Parse(time.RFC3339Nano, a.Observed["effects_at"].(string))
		require.NoError(t, err)
		lateAt, err := time.Parse(time.RFC3339Nano, a.Observed["late_at"].(string))
		require.NoError(t, err)
		assert.Greater(t, lateAt.Sub(judgedAt), 4*time.Second, "counted again once 5 s had passed after the load")
	}
	assert.Contains(t, out, "late duplicates (100.00%)")
	assert.Contains(t, out, "late-duplicate-effect ic-")
	require.NotNil(t, rep.Estimate)
	assert.InDelta(t, 1.0, rep.Estimate.Inputs.LateDuplicateRate, 1e-9)
	assert.Contains(t, rep.EstimateAssumes, "late duplicates in 100 intents counted again")

	// Offline, from the history alone: the same late duplicates.
	offline := filepath.Join(t.TempDir(), "check.json")
	code, out, _ = cli(t, "check", "--no-color", "--json", offline, hist)
	assert.Equal(t, idemcheck.ExitAnomalies, code, out)
	again := readSoakReport(t, offline)
	assert.Equal(t, r.LateDuplicates, again.Soak.LateDuplicates)
	assert.Equal(t, r.Recounted, again.Soak.Recounted)

	// Counted once settled after the load: the second payments are in
	// the settled counts, duplicates.
	start = time.Now()
	code, rep, out = paymentsSoak(t, url, dsn, "--settle", "10s")
	t.Logf("--settle 10s after the load: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	r = rep.Soak
	assert.Equal(t, idemcheck.ExitAnomalies, code, out)
	assert.Equal(t, r.Counted, r.Duplicates, "every intent's job made two payments")
	assert.Zero(t, r.LateDuplicates)
	require.NotNil(t, r.Settle)
	assert.True(t, r.Settle.Settled, "%+v", *r.Settle)
}

// The reference payments API soaked with its status monitors followed
// (the policy's status_pointer): every 202's monitor, GET
// /payments/{id}, is read while the effects settle until it says
// "succeeded", the counts settle only then, and the soak passes; the
// history holds what each monitor said, and checked offline gives the
// same report.
func TestSoakSettlePaymentsStatusMonitors(t *testing.T) {
	url, dsn := paymentsAPI(t, payments.Reference)
	dir := t.TempDir()
	policy := filepath.Join(dir, "payments-policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("preset: ietf\nreplay_header: Idempotent-Replayed\nstatus_pointer: /status\nstatus_done: [succeeded]\nstatus_failed: [failed]\n"), 0o600))
	hist := filepath.Join(dir, "soak.jsonl")
	start := time.Now()
	code, rep, out := paymentsSoak(t, url, dsn, "--policy", policy, "--settle", "10s", "--history", hist)
	t.Logf("--settle 10s, status monitors followed: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	r := rep.Soak
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Equal(t, idemcheck.Pass, rep.Verdict)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Pending)
	assert.Zero(t, r.Unsettled)
	require.NotNil(t, r.Settle)
	assert.True(t, r.Settle.Settled, "%+v", *r.Settle)
	require.NotNil(t, r.Operations, out)
	assert.EqualValues(t, 100, r.Operations.Monitors, "one monitor an intent")
	assert.EqualValues(t, 100, r.Operations.Done)
	assert.Zero(t, r.Operations.Pending)
	assert.GreaterOrEqual(t, r.Operations.Reads, int64(100))
	assert.Contains(t, out, "status monitors followed: 100 (")

	offline := filepath.Join(dir, "check.json")
	code, again, _ := cli(t, "check", "--no-color", "--json", offline, hist)
	assert.Equal(t, idemcheck.ExitHeld, code, again)
	assert.Contains(t, again, "status monitors followed: 100 (")
	assert.Equal(t, r.Operations, readSoakReport(t, offline).Soak.Operations)
}
