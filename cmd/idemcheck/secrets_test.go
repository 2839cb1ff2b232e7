package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoAPI answers every request 201 with what it was sent: its headers and
// body, as a careless API (or an error page) would echo a credential back.
func echoAPI(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Tenant", r.Header.Get("X-Tenant-Token"))
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.Header.Get("Idempotency-Key"), "headers": r.Header, "body": string(body)})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// artefacts reads every file a run wrote, and its output, into one text.
func artefacts(t *testing.T, dir string, outputs ...string) string {
	t.Helper()
	var b strings.Builder
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		b.Write(data)
	}
	for _, o := range outputs {
		b.WriteString(o)
	}
	return b.String()
}

// Every credential idemcheck is given stays out of every artefact: tenant
// values in any header, redacted headers' values wherever they are echoed,
// and a suite's ${NAME} expansions; also when the target echoes them back.
func TestPlantedSecretsReachNoArtefact(t *testing.T) {
	url := echoAPI(t)

	t.Run("certify", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(dir, "summary.md"))
		code, out, errOut := cli(t, "certify", "--url", url, "--path", "/orders", "--no-color",
			"--body", `{"customerId":"{{intent}}","note":"plain"}`,
			"--checks", "sequential-replay,cross-tenant", "--rounds", "1",
			"--tenant", "X-Tenant-Token: tenant-a-PLANTED1", "--tenant", "X-Tenant-Token: tenant-b-PLANTED2",
			"--header", "Authorization: Bearer bearer-PLANTED3", "--header", "X-Api-Key: key-PLANTED4", "--redact-header", "X-Api-Key",
			"--json", filepath.Join(dir, "r.json"), "--junit", filepath.Join(dir, "r.xml"), "--history", filepath.Join(dir, "h.jsonl"))
		require.NotEqual(t, 2, code, errOut)
		all := artefacts(t, dir, out, errOut)
		assert.NotContains(t, all, "PLANTED")
		assert.Contains(t, all, "[redacted]")
	})

	t.Run("body field and query", func(t *testing.T) {
		dir := t.TempDir()
		code, out, errOut := cli(t, "certify", "--url", url, "--path", "/orders?token=qtok-PLANTED7&x=1", "--no-color",
			"--body", `{"customerId":"{{intent}}","card":{"number":"4242-PLANTED8"}}`,
			"--checks", "sequential-replay", "--rounds", "1",
			"--redact-field", "/card/number", "--redact-query", "token",
			"--json", filepath.Join(dir, "r.json"), "--junit", filepath.Join(dir, "r.xml"), "--history", filepath.Join(dir, "h.jsonl"))
		require.NotEqual(t, 2, code, errOut)
		all := artefacts(t, dir, out, errOut)
		assert.NotContains(t, all, "PLANTED")
		assert.Contains(t, all, "x=1", "the rest of the query is kept")
	})

	t.Run("suite", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("TOKEN", "tok-PLANTED5")
		t.Setenv("CARD", "4242-PLANTED6")
		t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(dir, "summary.md"))
		suiteFile := filepath.Join(t.TempDir(), "s.yaml")
		require.NoError(t, os.WriteFile(suiteFile, []byte(`endpoints:
  - name: orders
    url: `+url+`
    path: /orders
    headers: {X-Token: '${TOKEN}'}
    body: '{"customerId":"{{intent}}","card":"${CARD}"}'
    checks: [sequential-replay]
`), 0o644))
		code, out, errOut := cli(t, "run", "-f", suiteFile, "--no-color",
			"--json", filepath.Join(dir, "r.json"), "--junit", filepath.Join(dir, "r.xml"), "--history", filepath.Join(dir, "h.jsonl"))
		require.NotEqual(t, 2, code, errOut)
		all := artefacts(t, dir, out, errOut)
		assert.NotContains(t, all, "PLANTED")
	})
}

// A soak reads ${NAME} in its --header and --body from the environment, as
// a Kubernetes pod gets a Secret's value, sends the value, and keeps it out
// of its history and reports, even where the API echoes it back.
func TestSoakReadsSecretsFromTheEnvironment(t *testing.T) {
	url := echoAPI(t)
	const token = "tok-4f1c9a77e2d0"
	t.Setenv("IC_SOAK_TOKEN", token)
	dir := t.TempDir()
	code, out, errOut := cli(t, "soak", "--url", url, "--path", "/orders", "--no-color",
		"--header", "X-Tenant-Token: ${IC_SOAK_TOKEN}", "--body", `{"customerId":"{{intent}}","t":"${IC_SOAK_TOKEN}"}`,
		"--intents", "20", "--rate", "100", "--duration", "1m", "--cut-share", "0",
		"--history", filepath.Join(dir, "soak.jsonl"), "--json", filepath.Join(dir, "soak.json"))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	all := artefacts(t, dir, out, errOut)
	assert.NotContains(t, all, token)
	assert.NotContains(t, all, "${IC_SOAK_TOKEN}", "the value was sent, not the variable's name")

	code, _, errOut = cli(t, "soak", "--url", url, "--header", "X-Tenant-Token: ${IC_SOAK_UNSET}")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--header: environment variable IC_SOAK_UNSET is not set")
}
