package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// signedConsumer serves the example consumer verifying scheme with
// secret, echoing each delivery's signature header in its reply, and
// returns its URL, the DSN of its database and the signatures it saw.
func signedConsumer(t *testing.T, scheme webhooks.Scheme, secret, header string) (string, string, func() []string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	p, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, webhooks.Migrate(context.Background(), p))
	api := webhooks.New(p, webhooks.Config{Secret: secret, Scheme: scheme})
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sig := r.Header.Get(header)
		if sig != "" {
			mu.Lock()
			seen = append(seen, sig)
			mu.Unlock()
		}
		w.Header().Set("X-Received-Signature", sig)
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, dsn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// A policy file's sign: block signs the run as --sign does: the consumer
// verifying Stripe signatures, certified with only --policy FILE, passes,
// the signature check included (its forged and stale deliveries refused),
// and neither the secret nor any signature reaches any artefact (the JSON
// report, the history, the JUnit and HTML reports, the output), though
// the consumer echoes each signature. A --sign flag overrides the file's
// field: the file's scheme is github, the consumer's stripe, and --sign
// stripe makes the run pass.
func TestPolicyFileSigns(t *testing.T) {
	const secret = "whsec_policy_file_s3cret_value"
	url, dsn, seen := signedConsumer(t, webhooks.Stripe, secret, "Stripe-Signature")
	t.Setenv("WH_SECRET", secret)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("preset: webhook\nsign: {scheme: stripe, secret: '${WH_SECRET}'}\n"), 0o600))
	out := func(name string) string { return filepath.Join(dir, name) }
	args := []string{"certify", "--url", url, "--path", "/webhooks", "--policy", policy,
		"--body", `{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500}}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM ledger WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--checks", "signature,webhook-redelivery,sequential-replay", "--redeliveries", "4", "--no-color"}
	code, stdout, stderr := cli(t, append(args, "--json", out("report.json"), "--history", out("history.jsonl"),
		"--junit", out("report.xml"), "--html", out("report.html"))...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "verdict PASS")
	assert.Regexp(t, `PASS\s+signature`, stdout)
	require.NotEmpty(t, seen())

	rep, err := os.ReadFile(out("report.json"))
	require.NoError(t, err)
	assert.Contains(t, string(rep), `"signing": {
      "scheme": "stripe",
      "header": "Stripe-Signature"
    }`, "the report says how the run signed")
	hist, err := os.ReadFile(out("history.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(hist), `"variant":"stale-signature"`, "the stale delivery was sent")
	assert.Contains(t, string(hist), `"Stripe-Signature":["[redacted]"]`, "the signature header is recorded, hidden")
	sigRE := regexp.MustCompile(`v1=[0-9a-f]{64}`)
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		assert.NotContains(t, text, "s3cret", name)
	}
	for _, f := range []string{"report.json", "history.jsonl", "report.xml", "report.html"} {
		b, err := os.ReadFile(out(f))
		require.NoError(t, err)
		text := string(b)
		assert.NotContains(t, text, "s3cret", f)
		assert.Empty(t, sigRE.FindAllString(text, 3), "%s holds a signature", f)
		for _, sig := range seen() {
			assert.NotContains(t, text, sig, f)
		}
	}

	// The flags override the file, field by field.
	require.NoError(t, os.WriteFile(policy, []byte("preset: webhook\nsign: {scheme: github, secret: '${WH_SECRET}'}\n"), 0o600))
	code, stdout, stderr = cli(t, append(args, "--checks", "signature,sequential-replay", "--sign", "stripe")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "verdict PASS")
}

// A policy file's sign: block is checked as --sign is: a wrong field is a
// usage error (exit 2) of one line, naming the file, its line and the
// field, never quoting the secret.
func TestPolicyFileSignErrors(t *testing.T) {
	t.Setenv("WH_SECRET", "whsec_s3cret-value!")
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	for doc, want := range map[string]string{
		"preset: webhook\nsign: {scheme: paypal, secret: '${WH_SECRET}'}\n":                  `--policy: ` + policy + `:2: sign.scheme: unknown signing scheme "paypal" (known: github, shopify, slack, standard-webhooks, stripe)`,
		"preset: webhook\nsign:\n  scheme: stripe\n  secret: whsec_s3cret-value\n":           `--policy: ` + policy + `:4: sign.secret: the secret comes from the environment: write '${NAME}'`,
		"preset: webhook\nsign:\n  scheme: standard-webhooks\n  secret: '${WH_SECRET}'\n":    `--policy: ` + policy + `:4: sign.secret: a standard-webhooks secret is whsec_ followed by its key in base64`,
		"preset: webhook\nsign: {scheme: stripe}\n":                                          `--policy: ` + policy + `:2: sign.secret is missing: stripe signs with a secret`,
		"preset: webhook\nsign: {scheme: stripe, secret: '${WH_SECRET}', skew: soon}\n":      `--policy: ` + policy + `:2: sign.skew: expected a duration such as -10m, got "soon"`,
		"preset: webhook\nsign: {scheme: github, secret: '${WH_SECRET}', header: 'X Sig'}\n": `--policy: ` + policy + `:2: sign.header: "X Sig" is not an HTTP header name`,
		"preset: webhook\nsign: {secret: '${WH_SECRET}'}\n":                                  `--policy: ` + policy + `:2: sign.scheme: missing: the signing scheme`,
	} {
		require.NoError(t, os.WriteFile(policy, []byte(doc), 0o600))
		code, _, errOut := cli(t, "certify", "--url", "http://127.0.0.1:1", "--path", "/webhooks", "--policy", policy)
		assert.Equal(t, idemcheck.ExitUsage, code, doc)
		assert.Contains(t, errOut, want, doc)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		assert.NotContains(t, errOut, "s3cret", doc)
	}
	// A soak sends nothing signed: a policy file that signs is refused.
	require.NoError(t, os.WriteFile(policy, []byte("preset: webhook\nsign: {scheme: stripe, secret: '${WH_SECRET}'}\n"), 0o600))
	code, _, errOut := cli(t, "soak", "--url", "http://127.0.0.1:1", "--path", "/webhooks", "--policy", policy)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "sign: a soak sends its requests unsigned")
}
