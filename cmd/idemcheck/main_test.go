package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/internal/program"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// exampleServerCommand starts this test binary as a target process that
// serves one of the example APIs: the example code is linked into the
// tests, never into the command.
const exampleServerCommand = serve.ExampleCommand

func TestMain(m *testing.M) {
	// A test that needs a target process starts this binary with the
	// example-server command; the interrupt test starts it with
	// subcommand, to behave as the CLI.
	if len(os.Args) > 2 && os.Args[1] == leakyTargetCommand {
		os.Exit(leakyTarget(os.Args[2:]))
	}
	if len(os.Args) > 1 && (os.Args[1] == exampleServerCommand || os.Args[1] == subcommand) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		var code int
		if os.Args[1] == exampleServerCommand {
			code = idemcheck.ExitHeld
			if err := serve.Example(ctx, os.Args[2:], os.Stderr); err != nil {
				fmt.Fprintf(os.Stderr, "idemcheck: %v\n", err)
				code = idemcheck.ExitCode(err)
			}
		} else {
			// As program.Main runs the command, with a grace a test may
			// shorten.
			stop()
			grace := program.Grace
			if g, err := time.ParseDuration(os.Getenv("IDEMCHECK_TEST_GRACE")); err == nil {
				grace = g
			}
			os.Exit(program.Exec(os.Args[2:], grace, run))
		}
		stop()
		os.Exit(code)
	}
	mysqltest.Use()
	pgtest.Main(m, mysqltest.Close, ordersMySQLBin.Remove)
}

// withStdin gives the commands in this test in as their standard input.
func withStdin(t *testing.T, in string) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(in)
	t.Cleanup(func() { stdin = old })
}

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// ordersAPI serves a variant of the example API on loopback and returns its
// URL and the DSN of its database.
func ordersAPI(t *testing.T, v orders.Variant) (string, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	p, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, orders.Migrate(context.Background(), p))
	api := orders.New(p, orders.Config{Variant: v})
	t.Cleanup(api.Close)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, dsn
}

func certifyArgs(url, dsn string, extra ...string) []string {
	args := []string{"certify", "--url", url, "--path", "/orders",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--replay-header", "Idempotent-Replayed", "--no-color"}
	return append(args, extra...)
}

func TestCertifyReferenceWritesReportAndHistory(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	jsonPath, histPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "history.jsonl")
	code, out, errOut := cli(t, certifyArgs(url, dsn, "--json", jsonPath, "--history", histPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict PASS")
	assert.NotContains(t, out, "seed", "a certification makes no random choice: no seed is reported")

	var rep map[string]any
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.EqualValues(t, 1, rep["version"])
	assert.Equal(t, "pass", rep["verdict"])
	assert.NotContains(t, rep, "seed")
	assert.Len(t, rep["checks"], len(scenarios.Names()))
	assert.NotContains(t, string(b), "secret", "the DSN's password never reaches a report")

	// The recorded history checks again offline to the same verdict.
	code, out, _ = cli(t, "check", "--no-color", histPath)
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Contains(t, out, "verdict PASS")
}

func TestCertifyCheckThenInsertExitsOne(t *testing.T) {
	url, dsn := ordersAPI(t, orders.CheckThenInsert)
	dir := t.TempDir()
	histPath := filepath.Join(dir, "history.jsonl")
	code, out, _ := cli(t, certifyArgs(url, dsn, "--checks", "concurrent-burst", "--history", histPath)...)
	require.Equal(t, idemcheck.ExitAnomalies, code, out)
	assert.Contains(t, out, "verdict FAIL")
	assert.Regexp(t, `duplicate-effect|multiple-created`, out)

	// Offline re-check of a buggy run gives the same verdict.
	code, out2, _ := cli(t, "check", "--no-color", histPath)
	assert.Equal(t, idemcheck.ExitAnomalies, code, out2)
	assert.Equal(t, anomalyLines(out), anomalyLines(out2))
}

func anomalyLines(report string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if strings.Contains(l, " in concurrent-burst, intent ") {
			out = append(out, l)
		}
	}
	return out
}

func TestCertifyRedactsSecrets(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	histPath := filepath.Join(t.TempDir(), "h.jsonl")
	code, out, _ := cli(t, certifyArgs(url, dsn, "--checks", "sequential-replay", "--rounds", "1",
		"--header", "Authorization: Bearer tok-SECRET", "--header", "X-Api-Key: key-SECRET", "--redact-header", "X-Api-Key",
		"--history", histPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, out)
	b, err := os.ReadFile(histPath)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "SECRET")
	assert.Contains(t, string(b), "[redacted]")
}

// Bad input: a one-line error naming what is wrong, a distinct exit code,
// and no report file left behind.
func TestBadInput(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	// check without a file reads standard input: nothing comes in here.
	withStdin(t, "")
	badPolicy := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(badPolicy, []byte("preset: stripe\nreplay_header: Idempotent Replayed\n"), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable url", certifyArgs("http://127.0.0.1:1", dsn), idemcheck.ExitUnavailable, "cannot reach target 127.0.0.1:1"},
		{"bad dsn", certifyArgs(url, "postgres://app:hunter2@127.0.0.1:1/app"), idemcheck.ExitUnavailable, "postgres://app:xxxxx@127.0.0.1:1/app"},
		{"malformed body", append(certifyArgs(url, dsn), "--body", `{"customerId":`), idemcheck.ExitUsage, "--body is not valid JSON"},
		{"unknown template", append(certifyArgs(url, dsn), "--body", `{"customerId":"{{uuid4}}"}`), idemcheck.ExitUsage, "--body: unknown template function {{uuid4}} at byte 17"},
		{"unknown template in effect arg", append(certifyArgs(url, dsn), "--effect-arg", "{{nope}}"), idemcheck.ExitUsage, "--effect-arg"},
		{"effect sql fails", append(certifyArgs(url, dsn), "--effect-sql", "SELECT count(*) FROM missing WHERE id = $1"), idemcheck.ExitUsage, `relation "missing" does not exist`},
		{"burst out of range", append(certifyArgs(url, dsn), "--burst", "1"), idemcheck.ExitUsage, "--burst 1 is out of range: use 2 to 1024"},
		{"rounds out of range", append(certifyArgs(url, dsn), "--rounds", "0"), idemcheck.ExitUsage, "--rounds 0 is out of range"},
		{"not a number", append(certifyArgs(url, dsn), "--burst", "many"), idemcheck.ExitUsage, `invalid value "many" for flag -burst`},
		{"unknown check", append(certifyArgs(url, dsn), "--checks", "concurrent-burst,nope"), idemcheck.ExitUsage, `unknown check "nope"`},
		{"no checks", append(certifyArgs(url, dsn), "--checks", ""), idemcheck.ExitUsage, "--checks names no check"},
		{"key syntax neither required nor remark", append(certifyArgs(url, dsn), "--key-syntax", "strict"), idemcheck.ExitUsage,
			`--key-syntax "strict" is neither required nor remark`},
		{"unknown skipped check", append(certifyArgs(url, dsn), "--skip-checks", "key-syntax,nope"), idemcheck.ExitUsage, `--skip-checks: unknown check "nope"`},
		{"every check skipped", append(certifyArgs(url, dsn), "--checks", "key-syntax", "--skip-checks", "key-syntax"), idemcheck.ExitUsage,
			"--skip-checks leaves no check to run"},
		{"run with no checks", []string{"run", "-f", "suite.yaml", "--checks", ""}, idemcheck.ExitUsage, "--checks names no check"},
		// A setup mistake, not an API bug: the effect query would look for
		// what no request carried, or count nothing at all.
		{"effect arg the request never sends", append(certifyArgs(url, dsn), "--body", `{"customerId":"c-fixed","totalCents":4000}`), idemcheck.ExitUsage,
			"--effect-arg uses {{intent}}, which the request never sends (not in --body, --path or --header)"},
		{"db without an effect query", []string{"certify", "--url", url, "--db", dsn}, idemcheck.ExitUsage, "--db needs --effect-sql"},
		{"no url", []string{"certify"}, idemcheck.ExitUsage, "--url is required"},
		{"bad url", []string{"certify", "--url", "127.0.0.1:8080"}, idemcheck.ExitUsage, "is not an absolute http:// or https:// URL"},
		{"bad header", append(certifyArgs(url, dsn), "--header", "NoColon"), idemcheck.ExitUsage, "--header"},
		{"effect sql without db", []string{"certify", "--url", url, "--effect-sql", "SELECT 1"}, idemcheck.ExitUsage, "--effect-sql needs a database"},
		{"unknown command", []string{"frobnicate"}, idemcheck.ExitUsage, `unknown command "frobnicate"`},
		{"check without file", []string{"check"}, idemcheck.ExitUsage, "name one history file"},
		{"check missing file", []string{"check", "/nonexistent/h.jsonl"}, idemcheck.ExitUsage, "/nonexistent/h.jsonl"},
		// Input errors used to be blamed on the target ("refused every
		// connection: is it still running?") or to pass silently.
		{"line break in header", append(certifyArgs(url, dsn), "--header", "X-A: b\r\nX-Evil: 1"), idemcheck.ExitUsage, "--header X-A: the value holds a line break"},
		{"line break in path", append(certifyArgs(url, dsn), "--path", "/orders\r\nX: y"), idemcheck.ExitUsage, "--path"},
		{"space in path", append(certifyArgs(url, dsn), "--path", "/my orders"), idemcheck.ExitUsage, "percent-encode it"},
		{"newline in method", append(certifyArgs(url, dsn), "--method", "PO\nST"), idemcheck.ExitUsage, "is not an HTTP method"},
		{"timeout too short", append(certifyArgs(url, dsn), "--timeout", "1ns"), idemcheck.ExitUsage, "--timeout 1ns is too short"},
		{"rate NaN", append(certifyArgs(url, dsn), "--rate", "NaN"), idemcheck.ExitUsage, "--rate NaN"},
		{"rate tiny", append(certifyArgs(url, dsn), "--rate", "1e-300"), idemcheck.ExitUsage, "--rate 1e-300"},
		{"timeout zero", append(certifyArgs(url, dsn), "--timeout", "0"), idemcheck.ExitUsage, "--timeout 0s is too short"},
		{"max-duration zero", append(certifyArgs(url, dsn), "--max-duration", "0"), idemcheck.ExitUsage, "--max-duration 0s must be positive"},
		{"max-body zero", append(certifyArgs(url, dsn), "--max-body", "0"), idemcheck.ExitUsage, "--max-body 0 is out of range"},
		{"junit in a missing folder", append(certifyArgs(url, dsn), "--junit", "/nonexistent/r.xml"), idemcheck.ExitUsage, "--junit /nonexistent/r.xml cannot be written"},
		{"query string in url", certifyArgs(url+"/?token=abc", dsn), idemcheck.ExitUsage, `--url "` + url + `/?token=abc" carries a query string`},
		{"credentials in url", certifyArgs(strings.Replace(url, "http://", "http://user:hunter2@", 1), dsn), idemcheck.ExitUsage,
			`--url "` + strings.Replace(url, "http://", "http://user:[redacted]@", 1) + `" carries credentials`},
		// A certification makes no random choice: --seed is soak's alone.
		{"seed", append(certifyArgs(url, dsn), "--seed", "42"), idemcheck.ExitUsage, "certify: --seed is not a flag of certify: a certification makes no random choice"},
		{"seed in run", []string{"run", "-f", "suite.yaml", "--seed", "7"}, idemcheck.ExitUsage, "soak --seed chooses which of a soak's intents are cut"},
		{"header without colon", append(certifyArgs(url, dsn), "--header", "Authorization Bearer hunter2"), idemcheck.ExitUsage, "is not a header"},
		{"soak timeout too short", []string{"soak", "--url", url, "--timeout", "1ns"}, idemcheck.ExitUsage, "--timeout 1ns is too short"},
		{"https against plain http", certifyArgs(strings.Replace(url, "http://", "https://", 1), dsn), idemcheck.ExitUsage, "--url is https:// but the target at"},
		// Header names that are not HTTP tokens: refused before anything is sent.
		{"replay header with a space", append(certifyArgs(url, dsn), "--replay-header", "bad header"), idemcheck.ExitUsage,
			`--replay-header "bad header" is not an HTTP header name`},
		{"key header with a space", append(certifyArgs(url, dsn), "--key-header", "Idempotency Key"), idemcheck.ExitUsage,
			`--key-header "Idempotency Key" is not an HTTP header name`},
		{"empty key header", append(certifyArgs(url, dsn), "--key-header", ""), idemcheck.ExitUsage, "--key-header is empty"},
		{"header name with a space", append(certifyArgs(url, dsn), "--header", "X Api Key: k"), idemcheck.ExitUsage,
			`--header "X Api Key" is not an HTTP header name`},
		{"bad header in a policy file", append(certifyArgs(url, dsn), "--policy", badPolicy), idemcheck.ExitUsage,
			`policy.yaml:2: replay_header: replay_header "Idempotent Replayed" is not an HTTP header name`},
		{"bad header before the target starts", []string{"certify", "--cmd", "exit 7", "--replay-header", "bad header"}, idemcheck.ExitUsage,
			`--replay-header "bad header"`},
		{"soak replay header with a space", []string{"soak", "--url", url, "--replay-header", "bad header"}, idemcheck.ExitUsage,
			`--replay-header "bad header" is not an HTTP header name`},
		{"soak header name with a space", []string{"soak", "--url", url, "--header", "X Api: k"}, idemcheck.ExitUsage, `"X Api" is not an HTTP header name`},
		// One-number policy overrides.
		{"mismatch status out of range", append(certifyArgs(url, dsn), "--mismatch-status", "1000"), idemcheck.ExitUsage,
			"--mismatch-status 1000 is not an HTTP status: use 100 to 599, or 0 for none"},
		{"missing-key status out of range", append(certifyArgs(url, dsn), "--missing-key-status", "42"), idemcheck.ExitUsage, "--missing-key-status 42 is not an HTTP status"},
		{"in-progress status not a number", append(certifyArgs(url, dsn), "--in-progress-status", "409,lock"), idemcheck.ExitUsage,
			`--in-progress-status "409,lock": "lock" is not a status`},
		{"in-progress status that is a success", append(certifyArgs(url, dsn), "--in-progress-status", "409,201"), idemcheck.ExitUsage,
			"--in-progress-status 201 is also a success status"},
		{"in-progress none with others", append(certifyArgs(url, dsn), "--in-progress-status", "0,409"), idemcheck.ExitUsage, "0 means none and goes alone"},
		{"in-progress status twice", append(certifyArgs(url, dsn), "--in-progress-status", "409,409"), idemcheck.ExitUsage, "names 409 twice"},
		{"soak mismatch status out of range", []string{"soak", "--url", url, "--mismatch-status", "7"}, idemcheck.ExitUsage, "--mismatch-status 7 is not an HTTP status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "")
			dir := t.TempDir()
			args := append(c.args, "--json", filepath.Join(dir, "r.json"), "--history", filepath.Join(dir, "h.jsonl"))
			if c.args[0] != "certify" {
				args = c.args
			}
			code, out, errOut := cli(t, args...)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
			assert.NotContains(t, errOut, "hunter2")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "no report or history, not even a partial one")
		})
	}
}

func TestCheckRejectsAFileThatIsNotAHistory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(p, []byte("{\"run\":{}}\nnot json\n"), 0o644))
	code, _, errOut := cli(t, "check", p)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "bad.jsonl:2:")
}

func TestRunSuiteWritesOneReportForAllEndpoints(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	dir := t.TempDir()
	suitePath := filepath.Join(dir, "suite.yaml")
	require.NoError(t, os.WriteFile(suitePath, []byte(`
version: 1
target: {url: "${T_URL}", db: "${T_DB}"}
policy: {preset: ietf, replay_header: Idempotent-Replayed}
options: {burst: 8, burst_rounds: 2, rounds: 1}
endpoints:
  - name: orders
    path: /orders
    body: {customerId: "{{intent}}", totalCents: 4000}
    effect: {sql: "SELECT count(*) FROM orders WHERE customer_id = $1", args: ["{{intent}}"]}
  - name: orders, wire only
    path: /orders
    body: '{"customerId":"{{intent}}","totalCents":10}'
    checks: [sequential-replay, missing-key]
`), 0o644))
	t.Setenv("T_URL", url)
	t.Setenv("T_DB", dsn)
	summary := filepath.Join(dir, "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	jsonPath, junitPath, histPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "h.jsonl")
	code, out, errOut := cli(t, "run", "-f", suitePath, "--json", jsonPath, "--junit", junitPath, "--history", histPath, "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "orders, wire only")
	// The target's address, given as ${T_URL}, is no secret: the report
	// says where the run went. The suite ends with its own verdict.
	assert.Contains(t, out, "POST "+url+"/orders")
	assert.NotContains(t, out, "[redacted]")
	assert.True(t, strings.HasSuffix(out, "\nsuite "+suitePath+": PASS: 2 endpoints, 2 passed, 0 failed, 0 neither\n"), "the last line is the suite's verdict:\n%s", out)

	var rep idemcheck.SuiteReport
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, idemcheck.Pass, rep.Verdict)
	require.Len(t, rep.Reports, 2)
	assert.Len(t, rep.Reports[1].Checks, 2)
	// Suite options apply: bursts of 8, two rounds. On a busy machine a
	// loose burst is repeated, so there may be more bursts, never other sizes.
	burst := rep.Reports[0].Checks[0]
	assert.GreaterOrEqual(t, burst.Attempts, 8*2, "suite options apply")
	assert.Zero(t, burst.Attempts%8, "bursts of 8: %d attempts", burst.Attempts)

	x, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	assert.Contains(t, string(x), "<testsuites")
	assert.Equal(t, len(scenarios.Names())+2, strings.Count(string(x), "<testcase "), "one test case per endpoint and check")
	md, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "orders, wire only")

	// Both endpoints' histories check again offline, with the same verdict.
	code, out, _ = cli(t, "check", "--no-color", histPath)
	assert.Equal(t, idemcheck.ExitHeld, code, out)
	assert.Equal(t, 2, strings.Count(out, "verdict PASS"))
}

func TestRunSuiteErrorsNameTheFileAndLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(p, []byte("endpoints:\n  - url: http://127.0.0.1:1\n    path: /a\n    checks: [nope]\n"), 0o644))
	code, _, errOut := cli(t, "run", "-f", p)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "bad.yaml:4: endpoints[0].checks[0]: unknown check \"nope\"")
	code, _, errOut = cli(t, "run")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "-f SUITE.yaml is required")
}

// The one-number overrides apply on top of the preset: the reference
// answers a reused key with another body 422.
func TestPolicyOverrideFlags(t *testing.T) {
	url, _ := ordersAPI(t, orders.Reference)
	args := []string{"certify", "--url", url, "--path", "/orders", "--no-color",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`, "--checks", "payload-mismatch", "--rounds", "1"}
	code, out, _ := cli(t, append(args, "--mismatch-status", "400")...)
	assert.Equal(t, idemcheck.ExitAnomalies, code, out)
	assert.Contains(t, out, "must get 400")

	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, _ = cli(t, append(args, "--policy", "stripe", "--mismatch-status", "422", "--missing-key-status", "400",
		"--in-progress-status", "409,423", "--key-syntax", "remark", "--json", jsonPath)...)
	require.NotEqual(t, idemcheck.ExitUsage, code, out)
	var rep idemcheck.Report
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, 422, rep.Policy.MismatchStatus)
	assert.Equal(t, 400, rep.Policy.MissingKeyStatus)
	assert.Equal(t, 409, rep.Policy.InProgressStatus)
	assert.Equal(t, []int{409, 423}, rep.Policy.InProgressStatuses)
	assert.Equal(t, "Idempotent-Replayed", rep.Policy.ReplayHeader, "the rest of the preset stays")
	assert.Equal(t, idemcheck.KeySyntaxRemark, rep.Policy.KeySyntax, "stripe's required key syntax, overridden")
}

func TestPolicyFlag(t *testing.T) {
	url, _ := ordersAPI(t, orders.Reference)
	// The reference answers a reused key with another body 422: under the
	// Stripe preset (400) that is a broken promise, under an override it holds.
	code, out, _ := cli(t, "certify", "--url", url, "--path", "/orders", "--no-color",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`, "--checks", "payload-mismatch", "--rounds", "1",
		"--policy", "stripe", "--key-header", "Idempotency-Key")
	assert.Equal(t, idemcheck.ExitAnomalies, code, out)
	assert.Contains(t, out, "unexpected-status")

	pf := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pf, []byte("preset: stripe\nmismatch_status: 422\ncreated_statuses: [201]\n"), 0o644))
	code, out, _ = cli(t, "certify", "--url", url, "--path", "/orders", "--no-color",
		"--body", `{"customerId":"{{intent}}","totalCents":4000}`, "--checks", "payload-mismatch", "--rounds", "1", "--policy", pf)
	assert.Equal(t, idemcheck.ExitHeld, code, out)

	code, _, errOut := cli(t, "certify", "--url", url, "--policy", "paypal")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, `--policy "paypal" is neither a preset (gofiber, ietf, stripe, webhook) nor a readable file`)
}
