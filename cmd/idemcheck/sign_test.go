package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/webhooks"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A consumer that verifies Standard Webhooks signatures, certified with
// --sign: it is PASS (every attempt signed as it verifies), and neither the
// secret, its key, nor any signature reaches the report or the history,
// even though the consumer echoes each delivery's signature in its reply.
func TestCertifySignedConsumerHidesSecretAndSignatures(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	dsn := pgtest.DSN(t)
	p, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, webhooks.Migrate(context.Background(), p))
	api := webhooks.New(p, webhooks.Config{Secret: secret})
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An echo of what was received, as some consumers log or return.
		sig := r.Header.Get("Webhook-Signature")
		if sig != "" {
			mu.Lock()
			seen = append(seen, sig)
			mu.Unlock()
		}
		w.Header().Set("X-Received-Signature", sig)
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("WH_SECRET", secret)

	dir := t.TempDir()
	jsonPath, histPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "history.jsonl")
	code, out, errOut := cli(t, "certify", "--url", srv.URL, "--path", "/webhooks", "--policy", "webhook",
		"--body", `{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500}}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM ledger WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--checks", "webhook-redelivery,sequential-replay,distinct-keys", "--redeliveries", "4",
		"--sign", "standard-webhooks", "--sign-secret", "${WH_SECRET}", "--no-color", "--json", jsonPath, "--history", histPath)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict PASS")
	require.NotEmpty(t, seen)

	sigRE := regexp.MustCompile(`v1,[A-Za-z0-9+/]{43}=`)
	for _, f := range []string{jsonPath, histPath} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(b)
		assert.NotContains(t, text, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", f)
		assert.Empty(t, sigRE.FindAllString(text, 3), "%s holds a signature", f)
		for _, sig := range seen {
			assert.NotContains(t, text, sig, f)
		}
	}
	rep, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	assert.Contains(t, string(rep), `"signing": {
      "scheme": "standard-webhooks",
      "header": "webhook-signature"
    }`, "the report says how the run signed")
	b, err := os.ReadFile(histPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Webhook-Signature":["[redacted]"]`, "the signature header is recorded, hidden")
	assert.Contains(t, string(b), `"X-Received-Signature":["[redacted]"]`, "the echo is hidden too")
}

// --sign-secret takes the secret from the environment, never literally.
func TestSignSecretFromEnvironmentOnly(t *testing.T) {
	code, _, errOut := cli(t, "certify", "--url", "http://127.0.0.1:1", "--path", "/webhooks", "--sign", "github", "--sign-secret", "literal-s3cret")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--sign-secret takes the secret from the environment: write '${NAME}'")
	assert.NotContains(t, errOut, "literal-s3cret")
	code, _, errOut = cli(t, "certify", "--url", "http://127.0.0.1:1", "--path", "/webhooks", "--sign-skew", "-10m")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--sign-skew goes with --sign")
}
