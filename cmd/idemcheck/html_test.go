package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

// svgs are the drawings of an HTML report: what it drew from the history.
var svgs = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// certify --html draws the run as a page, and check --html draws the same
// pictures from the run's history: the page can be drawn again later.
func TestCertifyAndCheckDrawTheSamePage(t *testing.T) {
	url, dsn := ordersAPI(t, orders.CheckThenInsert)
	dir := t.TempDir()
	page, hist, again := filepath.Join(dir, "report.html"), filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "again.html")
	code, out, errOut := cli(t, certifyArgs(url, dsn, "--checks", "concurrent-burst", "--html", page, "--history", hist)...)
	require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	for _, want := range []string{`id="verdict"`, "idemcheck: FAIL", `class="contract"`, `class="timeline"`, "Burst sensitivity:"} {
		assert.Contains(t, html, want)
	}
	fi, err := os.Stat(page)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	code, _, errOut = cli(t, "check", "--no-color", "--html", again, hist)
	require.Equal(t, idemcheck.ExitAnomalies, code, errOut)
	b, err = os.ReadFile(again)
	require.NoError(t, err)
	drawn, redrawn := svgs.FindAllString(html, -1), svgs.FindAllString(string(b), -1)
	require.NotEmpty(t, drawn)
	require.Equal(t, len(drawn), len(redrawn))
	for i := range drawn {
		// Not assert.Equal: a drawing is long, and a difference is
		// best found with the files at hand.
		assert.True(t, drawn[i] == redrawn[i], "drawing %d of %d differs", i+1, len(drawn))
	}
}

// soak --html plots the soak; a path that cannot be written is a usage
// error before anything is sent, for every command.
func TestHTMLOutputs(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	page := filepath.Join(dir, "soak.html")
	code, out, errOut := cli(t, "soak", "--url", url+"/orders", "--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--rate", "50", "--duration", "2s", "--html", page, "--history", filepath.Join(dir, "soak.jsonl"))
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(b), `<svg class="chart"`))
	assert.Contains(t, string(b), "idemcheck: PASS")

	// The soak's history, checked later, draws the soak's page again: its
	// charts, not a certification's checks.
	again := filepath.Join(t.TempDir(), "again.html")
	code, out, errOut = cli(t, "check", "--html", again, filepath.Join(dir, "soak.jsonl"))
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err = os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(b), `<svg class="chart"`))
	assert.NotContains(t, string(b), `id="check-`)
	require.NoError(t, os.Remove(filepath.Join(dir, "soak.jsonl")))

	suite := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(suite, []byte("endpoints:\n  - url: "+url+"\n    path: /orders\n"), 0o644))
	for _, args := range [][]string{
		certifyArgs(url, dsn, "--html", "/nonexistent/r.html"),
		{"soak", "--url", url + "/orders", "--html", "/nonexistent/r.html"},
		{"run", "-f", suite, "--html", "/nonexistent/r.html"},
		{"check", "--html", "/nonexistent/r.html", "h.jsonl"},
		certifyArgs(url, dsn, "--html", dir),
	} {
		code, out, errOut := cli(t, args...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%v: stdout:\n%s\nstderr:\n%s", args, out, errOut)
		assert.Contains(t, errOut, "--html ")
		assert.Empty(t, out, "nothing ran")
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the soak's page alone, no half-written file")
}
