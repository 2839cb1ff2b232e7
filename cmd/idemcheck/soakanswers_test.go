package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

// A soak's verdict rests on answers: a target that answers every request
// with an error, a refusal, a conflict or a redirect promised nothing, so
// its soak tested no idempotency and is inconclusive, never a pass, with
// and without an effect query. A 3xx is a success only where the policy
// names it.
func TestSoakWithoutSuccessesIsInconclusive(t *testing.T) {
	_, dsn := ordersAPI(t, orders.Reference)
	for _, status := range []int{500, 503, 429, 409, 307} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if status == 307 {
				w.Header().Set("Location", "/elsewhere")
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		for _, withDB := range []bool{false, true} {
			name := strconv.Itoa(status)
			args := []string{"soak", "--url", srv.URL, "--path", "/orders", "--no-color", "--body", `{"customerId":"{{intent}}"}`,
				"--rate", "50", "--duration", "1s", "--cut-share", "0.1"}
			if withDB {
				name += " with --db"
				args = append(args, "--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}")
			}
			t.Run(name, func(t *testing.T) {
				jsonPath, htmlPath := filepath.Join(t.TempDir(), "soak.json"), filepath.Join(t.TempDir(), "soak.html")
				code, out, errOut := cli(t, append(args, "--json", jsonPath, "--html", htmlPath)...)
				require.Equal(t, idemcheck.ExitInconclusive, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
				assert.Contains(t, out, "verdict INCONCLUSIVE")
				assert.Contains(t, out, "intents were answered with a success the policy names")
				rep := readSoakReport(t, jsonPath)
				assert.Equal(t, idemcheck.Inconclusive, rep.Verdict)
				assert.Zero(t, rep.Soak.Succeeded)
				assert.Zero(t, rep.Soak.Success, "no success share")
				assert.NotEmpty(t, rep.Reason)
				page, err := os.ReadFile(htmlPath)
				require.NoError(t, err)
				assert.Contains(t, string(page), "intents were answered with a success the policy names", "the page says why")
			})
		}
	}
}

// A policy that names 307 a success makes a redirecting target's soak
// pass: the floor counts the policy's successes.
func TestSoakCountsADeclaredRedirectAsSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/orders/1")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("preset: ietf\nreplay_statuses: [307]\n"), 0o600))
	code, out, errOut := cli(t, "soak", "--url", srv.URL, "--path", "/orders", "--no-color", "--body", `{"customerId":"{{intent}}"}`,
		"--rate", "50", "--duration", "1s", "--cut-share", "0", "--policy", policy)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict PASS")
}
