package main

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// tlsSoakArgs soaks a keyedAPI (tls_test.go) over TLS: a few intents, no
// effect counting.
func tlsSoakArgs(url string, extra ...string) []string {
	return append([]string{"soak", "--url", url, "--path", "/orders", "--body", `{"customerId":"{{intent}}"}`,
		"--rate", "200", "--intents", "40", "--duration", "1m", "--no-color"}, extra...)
}

// A soak reaches an https:// target with the TLS flags of certify and
// run: the first attempts (vegeta's) and the retries (the harness's own
// client) both go over the one configuration they make. A swallowed first
// attempt (timeout) is retried over TLS and answered.
func TestSoakTLSTrust(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)

	t.Run("cacert", func(t *testing.T) {
		jsonPath := filepath.Join(t.TempDir(), "soak.json")
		code, out, errOut := cli(t, tlsSoakArgs(url, "--cacert", ca, "--fault", "timeout@0.2", "--timeout", "2s", "--json", jsonPath)...)
		require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, errOut, "timeout on 20.0%", "an https:// soak cuts no reply unless told: only the fault given")
		assert.NotContains(t, errOut, "replies cut after commit")
		assert.NotContains(t, out, "insecure")
		rep := readSoakReport(t, jsonPath)
		assert.False(t, rep.Target.Insecure)
		r := rep.Soak
		assert.EqualValues(t, 40, r.Intents)
		assert.Positive(t, r.Cut, "some first attempts were swallowed")
		assert.Zero(t, r.Unresolved, "every swallowed first attempt was retried over TLS and answered")
		assert.Equal(t, r.Intents+r.Cut, r.Attempts)
		require.Len(t, r.Faults, 1)
		assert.Positive(t, r.Faults[0].Attempts)
		assert.Equal(t, r.Faults[0].Attempts, r.Faults[0].Retried, "each swallowed first attempt was retried")
		// Every intent reached the handler: the pre-flight's and the 40
		// (first attempts answered, and the retries of those swallowed).
		hits, _ := api.counts()
		assert.GreaterOrEqual(t, hits, 41)
	})

	t.Run("untrusted", func(t *testing.T) {
		dir := t.TempDir()
		before, _ := api.counts()
		code, out, errOut := cli(t, tlsSoakArgs(url, "--json", filepath.Join(dir, "soak.json"), "--history", filepath.Join(dir, "soak.jsonl"))...)
		require.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, errOut, "certificate is not trusted")
		assert.Contains(t, errOut, "--cacert")
		assert.Contains(t, errOut, "--insecure")
		assert.Equal(t, 1, countLines(errOut), "one line: %q", errOut)
		assert.Empty(t, out)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "no report, no history, no temporary file")
		after, _ := api.counts()
		assert.Equal(t, before, after, "no request reached the handler")
	})

	t.Run("insecure", func(t *testing.T) {
		jsonPath := filepath.Join(t.TempDir(), "soak.json")
		code, out, errOut := cli(t, tlsSoakArgs(url, "--insecure", "--json", jsonPath)...)
		require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "insecure: the target's TLS certificate was not verified")
		assert.True(t, readSoakReport(t, jsonPath).Target.Insecure)
		b, err := os.ReadFile(jsonPath)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"insecure": true`)
	})
}

func TestSoakMutualTLS(t *testing.T) {
	cert, certFile, keyFile := clientCert(t)
	// TLS 1.3 refuses a missing client certificate after the client's
	// handshake is done, TLS 1.2 within it: both are caught before the
	// soak sends.
	for _, v := range []struct {
		name string
		max  uint16
	}{{"TLS 1.3", 0}, {"TLS 1.2", tls.VersionTLS12}} {
		t.Run(v.name, func(t *testing.T) {
			api, url, ca := tlsTargetVersion(t, cert, v.max)

			code, out, errOut := cli(t, tlsSoakArgs(url, "--cacert", ca, "--cert", certFile, "--key", keyFile)...)
			require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			hits, _ := api.counts()
			assert.EqualValues(t, 41, hits, "the pre-flight and 40 intents")

			code, out, errOut = cli(t, tlsSoakArgs(url, "--cacert", ca)...)
			require.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, "client certificate")
			assert.Contains(t, errOut, "--cert FILE and --key FILE")
			assert.Equal(t, 1, countLines(errOut), "one line: %q", errOut)
			after, _ := api.counts()
			assert.Equal(t, hits, after, "no request without a client certificate reached the handler")
		})
	}
}

// What a soak cannot do over TLS, and TLS flags without an https:// URL,
// are usage errors before anything is sent.
func TestSoakTLSBadInput(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)
	var plain atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plain.Add(1) }))
	t.Cleanup(srv.Close)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{tlsSoakArgs(url, "--cacert", ca, "--cut-share", "0.05"), "--cut-share 0.05: cut-reply acts on the connection's bytes at a point of the HTTP exchange, which over https:// falls in the TLS handshake"},
		{tlsSoakArgs(url, "--cacert", ca, "--fault", "reset@0.1"), "--fault reset@0.1: reset acts on the connection's bytes"},
		{tlsSoakArgs(url, "--cacert", ca, "--fault", "slow-reply@0.1"), "--fault slow-reply@0.1: slow-reply acts on the connection's bytes"},
		{tlsSoakArgs(url, "--cacert", missing), "--cacert " + missing + " cannot be read"},
		{tlsSoakArgs(url, "--cacert", ca, "--cert", ca), "--cert " + ca + " needs --key FILE"},
		{tlsSoakArgs(srv.URL, "--insecure"), "--insecure goes with an https:// --url"},
		{tlsSoakArgs(srv.URL, "--cacert", ca), "--cacert goes with an https:// --url"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := cli(t, append(tc.args, "--json", filepath.Join(dir, "soak.json"))...)
			require.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Equal(t, 1, countLines(errOut), "one line: %q", errOut)
			_, err := os.Stat(filepath.Join(dir, "soak.json"))
			assert.True(t, errors.Is(err, os.ErrNotExist), "no report written")
		})
	}
	hits, _ := api.counts()
	assert.Zero(t, hits, "nothing was sent")
	assert.Zero(t, plain.Load(), "nothing was sent")
}
