package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// keyedAPI is an in-memory endpoint that keeps its promise: a key's first
// request creates an order, every later one replays it. It counts the
// requests it was sent and the HTTP/2 ones among them.
type keyedAPI struct {
	mu        sync.Mutex
	seen      map[string]string
	created   map[string]int // by customerId
	hits, h2s int
	readBacks int
}

func (k *keyedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.Method == http.MethodGet {
		// The effect read-back: the customer's orders.
		k.readBacks++
		w.Header().Set("Content-Type", "application/json")
		n := k.created[r.URL.Query().Get("customerId")]
		w.Write([]byte("[" + strings.TrimSuffix(strings.Repeat(`{"id":"o"},`, n), ",") + "]"))
		return
	}
	k.hits++
	if r.ProtoMajor == 2 {
		k.h2s++
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, `{"error":"Idempotency-Key is required"}`, 400)
		return
	}
	body, ok := k.seen[key]
	if !ok {
		body = fmt.Sprintf(`{"id":"o-%d"}`, len(k.seen)+1)
		k.seen[key] = body
		var in struct{ CustomerID string }
		if json.NewDecoder(r.Body).Decode(&in) == nil {
			k.created[in.CustomerID]++
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(201)
	w.Write([]byte(body))
}

func (k *keyedAPI) counts() (hits, h2s int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hits, k.h2s
}

// tlsTarget serves a keyedAPI over TLS on loopback with httptest's
// self-signed certificate, offering h2 by ALPN. With clientCA it requires
// a client certificate that CA signed. It returns the URL and the PEM file
// of the server's certificate (its own CA).
func tlsTarget(t *testing.T, clientCA *x509.Certificate) (*keyedAPI, string, string) {
	return tlsTargetVersion(t, clientCA, 0)
}

// tlsTargetVersion is tlsTarget with the server's highest TLS version
// (0: Go's default, TLS 1.3).
func tlsTargetVersion(t *testing.T, clientCA *x509.Certificate, maxVersion uint16) (*keyedAPI, string, string) {
	t.Helper()
	api := &keyedAPI{seen: map[string]string{}, created: map[string]int{}}
	srv := httptest.NewUnstartedServer(api)
	srv.EnableHTTP2 = true
	// The refused handshakes are what some tests are after.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA)
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	}
	if maxVersion != 0 {
		if srv.TLS == nil {
			srv.TLS = &tls.Config{}
		}
		srv.TLS.MaxVersion = maxVersion
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return api, srv.URL, ca
}

// clientCert makes a self-signed client certificate and writes it and its
// key as PEM files.
func clientCert(t *testing.T) (*x509.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "idemcheck test client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600))
	return cert, certFile, keyFile
}

func tlsArgs(url string, extra ...string) []string {
	return append([]string{"certify", "--url", url, "--path", "/orders", "--body", `{"customerId":"{{intent}}"}`,
		"--checks", "sequential-replay", "--rounds", "1", "--no-color"}, extra...)
}

func readReport(t *testing.T, path string) idemcheck.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep idemcheck.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

func TestCertifyTLSTrust(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)

	t.Run("cacert", func(t *testing.T) {
		jsonPath := filepath.Join(t.TempDir(), "r.json")
		code, out, errOut := cli(t, tlsArgs(url, "--cacert", ca, "--json", jsonPath)...)
		require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
		assert.NotContains(t, out, "insecure")
		assert.False(t, readReport(t, jsonPath).Target.Insecure)
	})

	t.Run("untrusted", func(t *testing.T) {
		jsonPath := filepath.Join(t.TempDir(), "r.json")
		before, _ := api.counts()
		code, out, errOut := cli(t, tlsArgs(url, "--json", jsonPath)...)
		require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
		assert.Contains(t, errOut, "certificate is not trusted")
		assert.Contains(t, errOut, "--cacert")
		assert.NotContains(t, out, "PASS")
		_, err := os.Stat(jsonPath)
		assert.True(t, errors.Is(err, os.ErrNotExist), "no report written")
		after, _ := api.counts()
		assert.Equal(t, before, after, "no request reached the handler")
	})

	t.Run("insecure", func(t *testing.T) {
		jsonPath := filepath.Join(t.TempDir(), "r.json")
		code, out, errOut := cli(t, tlsArgs(url, "--insecure", "--json", jsonPath)...)
		require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
		assert.Contains(t, out, "insecure: the target's TLS certificate was not verified")
		assert.True(t, readReport(t, jsonPath).Target.Insecure)
		b, err := os.ReadFile(jsonPath)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"insecure": true`)
	})
}

// The effect read-back (--effect-http) goes over the same TLS
// configuration as the attempts.
func TestCertifyEffectHTTPOverTLS(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, tlsArgs(url, "--cacert", ca, "--effect-http", "GET /orders?customerId={{intent}}", "--effect-count", "", "--json", jsonPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "effects read back through the API")
	api.mu.Lock()
	defer api.mu.Unlock()
	assert.Greater(t, api.readBacks, 1, "the read-back was sent, before the run and after its round")
}

func TestCertifyMutualTLS(t *testing.T) {
	cert, certFile, keyFile := clientCert(t)
	// TLS 1.3 refuses a missing client certificate after the client's
	// handshake is done, TLS 1.2 within it: both are caught.
	for _, v := range []struct {
		name string
		max  uint16
	}{{"TLS 1.3", 0}, {"TLS 1.2", tls.VersionTLS12}} {
		t.Run(v.name, func(t *testing.T) {
			api, url, ca := tlsTargetVersion(t, cert, v.max)

			code, out, errOut := cli(t, tlsArgs(url, "--cacert", ca, "--cert", certFile, "--key", keyFile)...)
			require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
			hits, _ := api.counts()
			assert.Positive(t, hits)

			code, out, errOut = cli(t, tlsArgs(url, "--cacert", ca)...)
			require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, "client certificate")
			assert.Contains(t, errOut, "--cert FILE and --key FILE")
			after, _ := api.counts()
			assert.Equal(t, hits, after, "no request without a client certificate reached the handler")
		})
	}
}

// Over TLS, a target that offers h2 by ALPN gets its bursts as HTTP/2.
func TestCertifyBurstH2OverTLS(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, "certify", "--url", url, "--path", "/orders", "--body", `{"customerId":"{{intent}}"}`,
		"--checks", "concurrent-burst", "--burst-rounds", "1", "--burst", "4", "--cacert", ca, "--no-color", "--json", jsonPath)
	require.NotEqual(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
	require.NotEqual(t, idemcheck.ExitUnavailable, code, "%s\n%s", out, errOut)
	assert.Equal(t, "h2", readReport(t, jsonPath).Stats.BurstProtocol)
	_, h2s := api.counts()
	assert.GreaterOrEqual(t, h2s, 4, "the burst's attempts arrived as HTTP/2")
}

func TestTLSFlagErrors(t *testing.T) {
	api, url, ca := tlsTarget(t, nil)
	_, certFile, keyFile := clientCert(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate\n"), 0o600))
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cacert", missing}, "--cacert " + missing + " cannot be read"},
		{[]string{"--cacert", garbage}, "--cacert " + garbage + " holds no PEM certificate"},
		{[]string{"--cacert", ca, "--cert", certFile}, "--cert " + certFile + " needs --key FILE"},
		{[]string{"--cacert", ca, "--key", keyFile}, "--key " + keyFile + " needs --cert FILE"},
		{[]string{"--cacert", ca, "--cert", missing, "--key", keyFile}, "--cert " + missing + " cannot be read"},
		{[]string{"--cacert", ca, "--cert", certFile, "--key", garbage}, "--cert " + certFile + " / --key " + garbage + ": not a PEM certificate"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			code, out, errOut := cli(t, tlsArgs(url, tc.args...)...)
			require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Equal(t, 1, countLines(errOut), "one line: %q", errOut)
		})
	}
	hits, _ := api.counts()
	assert.Zero(t, hits, "nothing was sent")

	var plain atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plain.Add(1) }))
	t.Cleanup(srv.Close)
	code, out, errOut := cli(t, tlsArgs(srv.URL, "--insecure")...)
	require.Equal(t, idemcheck.ExitUsage, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "--insecure goes with an https:// --url")
	assert.Zero(t, plain.Load(), "nothing was sent")
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
