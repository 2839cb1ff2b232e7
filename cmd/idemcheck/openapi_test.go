package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

const examplesSpec = "../../examples/orders/openapi.yaml"

// initSuite writes the suite init makes of the examples' description for
// url, and returns its path.
func initSuite(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "suite.yaml")
	code, out, errOut := cli(t, "init", "--openapi", examplesSpec, "--url", url, "-o", path)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, errOut, "4 operations: 2 endpoints written")
	return path
}

func TestInitOnTheExamplesDescription(t *testing.T) {
	path := initSuite(t, "http://127.0.0.1:8080")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, want := range []string{
		`body: '{"customerId":"{{intent}}","totalCents":4000}'`, // the example, {{intent}} where the list filters
		`http: "GET /orders?customerId={{intent}}"`,
		`http: "GET /payments?orderRef={{intent}}"`,
		`count: "/data"`,
		"key_header: Idempotency-Key",
		"created_statuses: [201]",
		"mismatch_status: 422",
		"replay_header: Idempotent-Replayed",
		`path: "/payments"`, // cross_endpoint of createOrder
	} {
		assert.Contains(t, s, want)
	}

	// -o does not overwrite without --force; bad input is one line, exit 2.
	code, _, errOut := cli(t, "init", "--openapi", examplesSpec, "-o", path)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--force")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init"}, "--openapi FILE is required"},
		{[]string{"init", "--openapi", "nowhere.yaml"}, "--openapi nowhere.yaml: cannot read it"},
		{[]string{"init", "--openapi", examplesSpec, "--methods", "GET"}, "--methods"},
		{[]string{"init", "--openapi", "http://192.0.2.1:8080/openapi.yaml"}, "not loopback"},
		{[]string{"run", "--openapi", examplesSpec}, "--openapi needs --url"},
		{[]string{"run", "--openapi", examplesSpec, "--url", "http://192.0.2.1:8080"}, "--url host 192.0.2.1"},
		{[]string{"certify", "--url", "http://127.0.0.1:1", "--effect-http", "POST /orders", "--effect-count", "/data"}, "only sends GET"},
		{[]string{"certify", "--url", "http://127.0.0.1:1", "--effect-http", "GET /orders?c={{intent}}"}, "needs --effect-count"},
	} {
		code, out, errOut := cli(t, c.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%v: %s%s", c.args, out, errOut)
		assert.Contains(t, errOut, c.want, "%v", c.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	}
}

// init on the examples' description, then run: the reference passes every
// check that applies to a URL target, with effects read back through its
// list endpoints, and the report says so.
func TestInitThenRunPassesTheReference(t *testing.T) {
	url, _ := ordersAPI(t, orders.Reference)
	suitePath := initSuite(t, url)
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut := cli(t, "run", "-f", suitePath, "--json", jsonPath, "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "effects read back through the API with GET /orders?customerId={{intent}}")

	var rep idemcheck.SuiteReport
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Reports, 2)
	for _, r := range rep.Reports {
		assert.Equal(t, idemcheck.Pass, r.Verdict, r.Target.Name)
		assert.NotEmpty(t, r.Target.ReadBack)
		held := 0
		for _, rr := range r.Contract {
			if rr.Status == idemcheck.RuleHeld {
				held++
				assert.Contains(t, rr.Basis, "read back through the API", rr.Check)
			}
		}
		assert.Positive(t, held)
	}
}

// run --openapi certifies straight from the description; an endpoint whose
// generated body the target rejects is reported with its answer, and the
// run goes on with the others.
func TestRunOpenAPIReportsARejectedBody(t *testing.T) {
	url, _ := ordersAPI(t, orders.Reference)
	spec, err := os.ReadFile(examplesSpec)
	require.NoError(t, err)
	// The payment's example now breaks the API's rule: a customer and an
	// order reference at once.
	bad := strings.Replace(string(spec), "              oneOf:\n", "              example: {orderRef: o-1, customerId: c-1, amountCents: 5}\n              oneOf:\n", 1)
	require.NotEqual(t, string(spec), bad)
	specPath := filepath.Join(t.TempDir(), "openapi.yaml")
	require.NoError(t, os.WriteFile(specPath, []byte(bad), 0o600))

	jsonPath := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut := cli(t, "run", "--openapi", specPath, "--url", url, "--checks", "sequential-replay,payload-mismatch", "--json", jsonPath, "--no-color")
	assert.NotEqual(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotEqual(t, idemcheck.ExitUsage, code)
	var rep idemcheck.SuiteReport
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Reports, 2)
	assert.Equal(t, idemcheck.Pass, rep.Reports[0].Verdict, "createOrder")
	assert.Equal(t, idemcheck.AllSkipped, rep.Reports[1].Verdict, "createPayment")
	for _, c := range rep.Reports[1].Checks {
		assert.Contains(t, c.Reason, "did not accept the generated body: it answered 400")
	}
	assert.Contains(t, out, "answered 400")
}

// init, then run each zoo variant that a wire or HTTP-counted check can
// catch against a URL target, with the check that catches it: every one is
// caught, with its anomaly. Left out: the variants whose bug needs a fault
// inside the target (a crash, a cut database link: a target idemcheck
// starts), replicas (in-memory-lock), two clients' credentials
// (not-scoped-per-client: the description names none), the key's expiry
// (short-ttl), and the timed races of concurrent-burst, caught by their own
// tests.
func TestInitThenRunCatchesTheZoo(t *testing.T) {
	for _, v := range []orders.Variant{
		orders.NoFingerprint, orders.RawBytesFingerprint, orders.BodyOnlyFingerprint, orders.DedupeByBody,
		orders.KeyOptional, orders.RerenderReplay, orders.SavesValidationErrors, orders.TruncatesKeys,
		orders.CheckThenInsert, orders.UniqueViolation500, orders.ShortTTL, orders.NotScopedPerClient,
	} {
		t.Run(string(v), func(t *testing.T) {
			check, anomaly := orders.Expectation(v)
			url, _ := ordersAPI(t, v)
			suitePath := initSuite(t, url)
			if v == orders.NotScopedPerClient {
				// The description names no credentials: the user gives two
				// clients' own, as for any suite.
				b, err := os.ReadFile(suitePath)
				require.NoError(t, err)
				s := strings.ReplaceAll(string(b), "    method: POST\n",
					"    method: POST\n    tenants: [\"Authorization: Bearer client-a\", \"Authorization: Bearer client-b\"]\n")
				require.NoError(t, os.WriteFile(suitePath, []byte(s), 0o644))
			}
			if v == orders.ShortTTL {
				// The user states how long clients retry; the variant forgets
				// keys sooner than that.
				f, err := os.OpenFile(suitePath, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = fmt.Fprintf(f, "options:\n  retry_window: %s\n", 2*orders.ShortTTLRetention)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			jsonPath := filepath.Join(t.TempDir(), "report.json")
			code, out, errOut := cli(t, "run", "-f", suitePath, "--checks", check, "--json", jsonPath, "--no-color")
			require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			var rep idemcheck.SuiteReport
			b, err := os.ReadFile(jsonPath)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &rep))
			found := false
			for _, r := range rep.Reports {
				for _, a := range r.Anomalies {
					found = found || (a.Check == check && string(a.Kind) == anomaly)
				}
			}
			assert.True(t, found, "%s by %s:\n%s", anomaly, check, out)
		})
	}
}

// run --openapi reads ${NAME} in --header from the environment, as certify
// does, and hides what it expands to; an unset name is a usage error.
func TestRunOpenAPIHeaderReadsTheEnvironment(t *testing.T) {
	url, _ := ordersAPI(t, orders.Reference)
	t.Setenv("IDEMCHECK_TEST_TOKEN", "s3cr3t-token-value")
	hist := filepath.Join(t.TempDir(), "history.jsonl")
	code, out, errOut := cli(t, "run", "--openapi", examplesSpec, "--url", url, "--checks", "sequential-replay",
		"--header", "X-Api-Token: ${IDEMCHECK_TEST_TOKEN}", "--history", hist, "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err := os.ReadFile(hist)
	require.NoError(t, err)
	assert.Contains(t, string(b), "X-Api-Token", "the history records the header")
	assert.NotContains(t, string(b)+out+errOut, "s3cr3t-token-value")

	code, _, errOut = cli(t, "run", "--openapi", examplesSpec, "--url", url, "--header", "X-Api-Token: ${IDEMCHECK_TEST_UNSET}")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--header: environment variable IDEMCHECK_TEST_UNSET is not set")
}
