package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		code, out, errOut := cli(t, arg)
		require.Equal(t, idemcheck.ExitHeld, code, errOut)
		assert.Regexp(t, `^idemcheck (\(devel\)|v\S+)( \(.*\))?\n$`, out)
		assert.Contains(t, out, runtime.Version(), "the Go version the binary was built with")
	}
	code, _, errOut := cli(t, "version", "extra")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "version takes no arguments")
}

// The message for an unknown command names every command the usage lists.
func TestUnknownCommandListsEveryCommand(t *testing.T) {
	code, _, errOut := cli(t, "frobnicate")
	require.Equal(t, idemcheck.ExitUsage, code)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	listed := regexp.MustCompile(`(?m)^  idemcheck ([a-z-]+)`).FindAllStringSubmatch(usage, -1)
	require.NotEmpty(t, listed)
	for _, m := range listed {
		assert.Regexp(t, `[ ,]`+m[1]+`[, ]`, errOut, "the usage lists %s", m[1])
	}
	assert.Contains(t, errOut, "soak")
}

// The usage's exit codes are every one the command returns, 4 (nothing
// proved either way) included.
func TestUsageNamesEveryExitCode(t *testing.T) {
	_, text, ok := strings.Cut(usage, "Exit codes:")
	require.True(t, ok, "the usage has its exit codes")
	text = strings.Join(strings.Fields(text), " ")
	for _, code := range []int{idemcheck.ExitHeld, idemcheck.ExitAnomalies, idemcheck.ExitUsage, idemcheck.ExitUnavailable, idemcheck.ExitInconclusive} {
		assert.Regexp(t, `(^|, )`+strconv.Itoa(code)+` [a-z]`, text, "exit code %d", code)
	}
}

// A recorded history checked again is coloured under FORCE_COLOR and plain
// under NO_COLOR (render.Colour's rule, seen through the command).
func TestColourFollowsNoColorAndForceColor(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	code, out, errOut := cli(t, certifyArgs(url, dsn, "--checks", "sequential-replay", "--history", hist)...)
	require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
	t.Setenv("FORCE_COLOR", "1")
	_, out, _ = cli(t, "check", hist)
	assert.Contains(t, out, "\x1b[", "FORCE_COLOR colours a report that is not on a terminal")
	t.Setenv("NO_COLOR", "1")
	_, out, _ = cli(t, "check", hist)
	assert.NotContains(t, out, "\x1b[")
}

// Every report says which build made it and when the run started.
func TestReportsCarryToolVersionAndStartTime(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	jsonPath, junitPath, hist, summary := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	before := time.Now().UTC().Truncate(time.Millisecond)
	code, out, errOut := cli(t, certifyArgs(url, dsn, "--checks", "sequential-replay", "--json", jsonPath, "--junit", junitPath, "--history", hist)...)
	after := time.Now().UTC()
	require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "by "+tool.String())

	var rep idemcheck.Report
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, "idemcheck", rep.Tool.Name)
	assert.Equal(t, tool.Version, rep.Tool.Version)
	assert.Equal(t, runtime.Version(), rep.Tool.Go)
	assert.False(t, rep.StartedAt.Before(before), "started %v, run began %v", rep.StartedAt, before)
	assert.False(t, rep.StartedAt.After(after))

	x, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	assert.Contains(t, string(x), `<property name="tool" value="`+tool.String()+`">`)
	assert.Contains(t, string(x), `<property name="started_at" value="`+rep.StartedAt.Format(time.RFC3339Nano)+`">`)
	assert.Contains(t, string(x), `<testsuite name="POST /orders"`, "the suite is named without the port")
	assert.NotContains(t, string(x), `classname="POST http`)

	md, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "started "+rep.StartedAt.Format(time.RFC3339))
	assert.Contains(t, string(md), "idemcheck "+tool.Version)

	// Checked again offline, the run started when its first attempt did.
	again := filepath.Join(dir, "again.json")
	code, _, _ = cli(t, "check", "--json", again, hist)
	require.Equal(t, idemcheck.ExitHeld, code)
	var rep2 idemcheck.Report
	b, err = os.ReadFile(again)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep2))
	assert.False(t, rep2.StartedAt.Before(before))
	assert.False(t, rep2.StartedAt.After(after))
}

// A target that refuses the request itself (a missing or wrong body) is a
// usage error with a hint, exit 2, and no report, not a list of anomalies;
// the run stops before the checks send their attempts.
func TestSame4xxOnEveryFirstAttemptIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		status int
		hint   string
	}{
		{400, "check --body, --header, --path"},
		{401, "check the credentials in --header"},
		{404, "check --path and --method"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			var mu = make(chan struct{}, 1)
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu <- struct{}{}
				hits++
				<-mu
				http.Error(w, `{"error":"customerId is required"}`, tc.status)
			}))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			jsonPath := filepath.Join(dir, "r.json")
			code, out, errOut := cli(t, "certify", "--url", srv.URL, "--path", "/orders", "--no-color", "--json", jsonPath)
			require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, "the target answers "+strconv.Itoa(tc.status)+" to the request itself")
			assert.Contains(t, errOut, tc.hint)
			assert.Equal(t, 1, strings.Count(errOut, "idemcheck: "), "one error line: %q", errOut)
			assert.NotContains(t, out, "unexpected-status", "no report of anomalies")
			_, err := os.Stat(jsonPath)
			assert.True(t, errors.Is(err, os.ErrNotExist), "no report written")
			// The run stopped at the pre-flight, before the checks' ~200
			// attempts.
			mu <- struct{}{}
			n := hits
			<-mu
			assert.Less(t, n, 10, "requests the target was sent")
		})
	}
}

// The newcomer's mistake itself: the example orders API certified with
// every flag but --body. The effect query's {{intent}} is then sent
// nowhere, and the run stops before anything is sent, on a hint that
// names --body, instead of reporting every attempt as an
// unexpected-status anomaly. (A body the target refuses is the
// pre-flight's: TestSame4xxOnEveryFirstAttemptIsAUsageError.)
func TestMissingBodyAgainstTheExampleAPIIsAUsageError(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	var args []string
	for a := certifyArgs(url, dsn); len(a) > 0; a = a[1:] {
		if a[0] == "--body" {
			a = a[1:]
			continue
		}
		args = append(args, a[0])
	}
	require.NotContains(t, args, "--body")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, append(args, "--json", jsonPath)...)
	require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "--effect-arg uses {{intent}}, but the request has no body (--body)")
	assert.Contains(t, errOut, `give the body, such as {"customerId":"{{intent}}","totalCents":4000}`)
	assert.NotContains(t, out, "unexpected-status")
	assert.NoFileExists(t, jsonPath, "no report")
}

// A target that answers 400 only where a check means it to (no key, a
// broken body) is judged as usual: the stop needs every plain request
// refused.
func TestA4xxOnlyToDeliberateVariantsIsNoUsageError(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	code, out, errOut := cli(t, certifyArgs(url, dsn, "--checks", "missing-key,corrected-retry")...)
	require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
}

func TestFlagsReadTheEnvironment(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "s3cr3t", "EMPTY": ""}[k]
		return v, ok
	}
	got, used, err := expandFlag("--header", "Authorization: Bearer ${TOKEN}", lookup)
	require.NoError(t, err)
	assert.Equal(t, "Authorization: Bearer s3cr3t", got)
	assert.Equal(t, []string{"s3cr3t"}, used)
	got, _, err = expandFlag("--body", `{"a":"$${TOKEN}","p":"$5","q":"$$","e":"${EMPTY}"}`, lookup)
	require.NoError(t, err)
	assert.Equal(t, `{"a":"${TOKEN}","p":"$5","q":"$$","e":""}`, got)
	_, _, err = expandFlag("--tenant", "Authorization: ${NOPE}", lookup)
	require.Error(t, err)
	assert.Equal(t, "--tenant: environment variable NOPE is not set: export it, or write $${NOPE} for a literal ${NOPE}", err.Error())

	// Through the command: the header carries the variable's value to the
	// target, the report hides it, and an unset one stops the run first.
	var seen []string
	got2 := make(chan string, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got2 <- r.Header.Get("X-Api-Key") + " " + r.URL.Path:
		default:
		}
		w.WriteHeader(201)
		w.Write([]byte(`{"id":"1"}`))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("IC_TEST_KEY", "k-9f8e7d")
	t.Setenv("IC_TEST_URL", srv.URL)
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	code, out, errOut := cli(t, "certify", "--url", "${IC_TEST_URL}", "--path", "/orders", "--header", "X-Api-Key: ${IC_TEST_KEY}",
		"--redact-header", "X-Nothing", "--checks", "sequential-replay", "--no-color", "--history", hist)
	require.NotEqual(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
	close(got2)
	for s := range got2 {
		seen = append(seen, s)
	}
	assert.Contains(t, seen, "k-9f8e7d /orders")
	h, err := os.ReadFile(hist)
	require.NoError(t, err)
	assert.NotContains(t, string(h), "k-9f8e7d", "a value read from the environment is hidden in the history")
	assert.NotContains(t, out, "k-9f8e7d")

	code, _, errOut = cli(t, "certify", "--url", srv.URL, "--header", "Authorization: Bearer ${IC_TEST_UNSET_TOKEN}")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--header: environment variable IC_TEST_UNSET_TOKEN is not set")
}

// A --cmd target whose readiness path answers 404 is up without that
// route: certify exits 3 soon, not after the whole wait, and names the
// flag to give, in the command's words.
func TestCmdWithoutItsReadinessRouteNamesTheFlag(t *testing.T) {
	code, out, errOut := cli(t, certifyCmdArgs(t, "", "--ready", "/no-such-route")...)
	require.Equal(t, idemcheck.ExitUnavailable, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "/no-such-route answered 404 Not Found for 3s")
	assert.Contains(t, errOut, "give --ready PATH, a path that answers 2xx once it serves, or --ready tcp")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
}
