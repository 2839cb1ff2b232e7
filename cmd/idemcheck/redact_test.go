package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// leakyTargetCommand starts this test binary as the leaky target
// (leakyTarget): TestMain serves it.
const leakyTargetCommand = "leaky-target"

// The secrets TestEverySecretRouteIsRedacted plants, each by its own
// route. None is a prefix of another, and none starts like ordinary text.
const (
	plantToken  = "tok&SECRET-7f3a9c2e5b81" // ${TOKEN} in Authorization; & makes its JSON form \u0026
	plantAPIKey = "AKEY-5d1e8b0c47aa"       // a query value named by --redact-query
	plantXKey   = "XKEY-c0ffee9912ab"       // X-Api-Key, expanded by the shell
	plantCookie = "CSUB-88e1f00d2a77"       // one value of a Cookie header
	plantSetCk  = "SETC-19ab77e0c3d4"       // the target's own Set-Cookie session
	plantURLTok = "UTOK-3b9d6e21f0aa"       // ${URLTOKEN} in a --url that is refused
	plantErrKey = "EKEY-70c2a4e9d1bb"       // a --redact-query value in a refused --url
	plantSoak   = "SOAKKEY-2e8f61c0b7d9"    // a soak's api_key in its path
	plantBearer = "Bearer " + plantToken    // the whole Authorization value
)

// leakyBody is what the leaky target answers: the credentials it was sent
// and its session echoed, the token JSON-escaped, then the Authorization
// value raw, last, so that --max-body can cut through it.
func leakyBody(r *http.Request) string {
	cookie, _ := r.Cookie("session")
	tok, _ := json.Marshal(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	return fmt.Sprintf(`{"xkey":"%s","cookie":"%s","sid":"%s","json":%s,"raw":"%s"}`,
		r.Header.Get("X-Api-Key"), cookieValue(cookie), plantSetCk, tok, r.Header.Get("Authorization"))
}

func cookieValue(c *http.Cookie) string {
	if c == nil {
		return ""
	}
	return c.Value
}

// leakyHandler echoes, sets a session cookie and logs what it was sent to
// log; exit, when set, is called at the second POST, after the log line.
func leakyHandler(log io.Writer, exit func()) http.Handler {
	var posts atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			return
		}
		fmt.Fprintf(log, "leaky: %s %s Authorization=%s\n", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
		if posts.Add(1) == 2 && exit != nil {
			exit()
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: plantSetCk, Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, leakyBody(r))
	})
}

// leakyTarget serves leakyHandler on $PORT; the first time it runs (args[0]
// names a marker file that does not exist yet) it exits at its second POST,
// after logging it, so that its last output lines reach the report.
func leakyTarget(args []string) int {
	marker := args[0]
	first := false
	if _, err := os.Stat(marker); os.IsNotExist(err) {
		first = os.WriteFile(marker, nil, 0o600) == nil
	}
	exit := func() {}
	if first {
		exit = func() { os.Exit(3) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Fprintln(os.Stderr, "leaky: serving")
	_ = http.Serve(ln, leakyHandler(os.Stderr, exit))
	return 3
}

// leaked returns what of secret, in any form idemcheck.Redactor knows and
// in any leading part long enough to identify it, text holds.
func leaked(text, secret string) []string {
	goJSON, _ := json.Marshal(secret)
	forms := []string{secret, strings.Trim(string(goJSON), `"`), url.QueryEscape(secret), url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret))}
	var found []string
	for _, f := range forms {
		// The shortest leading part the redactor promises to hide: when
		// it is absent, so are the longer ones and the whole.
		least := f[:min(len(f), max(idemcheck.MinSecretPrefix, (len(f)+1)/2))]
		if strings.Contains(text, least) {
			found = append(found, least)
		}
	}
	return found
}

// Every route by which a secret reached an artefact is closed: a target
// that logs the Authorization header and an api_key and then exits (its
// last output lines), a reply cut by --max-body inside a secret, a secret
// echoed JSON-escaped, one value of a Cookie header, the target's own
// Set-Cookie echoed back, a header expanded by the shell and hidden by its
// name, ${NAME} and --redact-query values in a refused --url, and a
// soak's api_key in its path; in the terminal (both streams), --history,
// --json, --junit, --html, the Markdown step summary, and the soak's
// history, JSON, HTML and vegeta results.
func TestEverySecretRouteIsRedacted(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	var all strings.Builder
	collect := func(out, errOut string) {
		all.WriteString(out)
		all.WriteString(errOut)
	}

	t.Run("certify", func(t *testing.T) {
		t.Setenv("TOKEN", plantToken)
		t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(dir, "summary.md"))
		// The cut at --max-body leaves 13 bytes of the token (more than
		// half of it) at the end of every kept body.
		body := leakyBody(&http.Request{Header: http.Header{"Authorization": {plantBearer}, "X-Api-Key": {plantXKey}, "Cookie": {"session=" + plantCookie}}})
		cut := strings.LastIndex(body, plantToken) + 13
		args := []string{"certify", "--cmd", self + " " + leakyTargetCommand + " " + filepath.Join(t.TempDir(), "marker"),
			"--db", pgtest.DSN(t), "--ready", "/healthz", "--no-color",
			"--path", "/orders?api_key=" + plantAPIKey + "&x=1", "--redact-query", "api_key",
			"--body", `{"customerId":"{{intent}}"}`,
			"--header", "Authorization: Bearer ${TOKEN}",
			"--header", "X-Api-Key: " + plantXKey,
			"--header", "Cookie: theme=dark; session=" + plantCookie,
			"--max-body", fmt.Sprint(cut),
			"--checks", "sequential-replay,distinct-keys", "--rounds", "2",
			"--history", filepath.Join(dir, "h.jsonl"), "--json", filepath.Join(dir, "r.json"),
			"--junit", filepath.Join(dir, "r.xml"), "--html", filepath.Join(dir, "r.html")}
		code, out, errOut := cli(t, args...)
		require.NotContains(t, []int{idemcheck.ExitUsage, idemcheck.ExitUnavailable}, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		collect(out, errOut)
		hist, err := os.ReadFile(filepath.Join(dir, "h.jsonl"))
		require.NoError(t, err)
		// The routes were taken: the target exited with its log, the
		// replies were cut, the echoes were recorded.
		require.Contains(t, string(hist), `"target-exited"`)
		require.Contains(t, string(hist), "leaky: POST /orders?api_key=")
		require.Contains(t, string(hist), `[redacted]\"}`[:10])
		require.Contains(t, string(hist), "x=1", "the rest of the query is kept")
	})

	t.Run("refused url", func(t *testing.T) {
		t.Setenv("URLTOKEN", plantURLTok)
		code, out, errOut := cli(t, "certify", "--url", "http://127.0.0.1:19001/${URLTOKEN}?", "--path", "/orders")
		collect(out, errOut)
		require.Equal(t, idemcheck.ExitUsage, code, errOut)
		code, out, errOut = cli(t, "certify", "--url", "http://127.0.0.1:19001/orders?api_key="+plantErrKey, "--redact-query", "api_key")
		collect(out, errOut)
		require.Equal(t, idemcheck.ExitUsage, code, errOut)
		require.Contains(t, errOut, "[redacted]", "the message still says which URL")
	})

	t.Run("soak", func(t *testing.T) {
		srv := httptest.NewServer(leakyHandler(io.Discard, nil))
		t.Cleanup(srv.Close)
		sd := t.TempDir()
		code, out, errOut := cli(t, "soak", "--url", srv.URL, "--path", "/orders?api_key="+plantSoak, "--redact-query", "api_key",
			"--body", `{"customerId":"{{intent}}"}`, "--intents", "20", "--rate", "100", "--duration", "1m", "--no-color",
			"--history", filepath.Join(sd, "soak.jsonl"), "--json", filepath.Join(sd, "soak.json"),
			"--html", filepath.Join(sd, "soak.html"), "--vegeta-results", filepath.Join(sd, "soak.bin"))
		require.NotEqual(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		collect(out, errOut)
		entries, err := os.ReadDir(sd)
		require.NoError(t, err)
		require.Len(t, entries, 4, "every soak output was written")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(sd, e.Name()))
			require.NoError(t, err)
			all.Write(b)
		}
	})

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		all.Write(b)
	}
	for _, f := range []string{"h.jsonl", "r.json", "r.xml", "r.html", "summary.md"} {
		require.True(t, names[f], "%s was written", f)
	}
	text := all.String()
	require.Contains(t, text, idemcheck.Redacted)
	for _, s := range []string{plantToken, plantBearer, plantAPIKey, plantXKey, plantCookie, plantSetCk, plantURLTok, plantErrKey, plantSoak} {
		if found := leaked(text, s); len(found) > 0 {
			i := strings.Index(text, found[0])
			t.Errorf("secret %q leaked as %q: …%s…", s, found, text[max(0, i-80):min(len(text), i+80)])
		}
	}
}
