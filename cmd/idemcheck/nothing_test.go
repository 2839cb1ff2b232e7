package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// hostile serves loopback connections with serve and returns the URL.
func hostile(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Four hostile targets each got PASS, exit 0, with every attempt
// unanswered. Now a run in which the target answered nothing exits 3 with
// the no-answers verdict, and its JSON report says so; one that answers
// not a byte ends sooner, at its pre-flight, exit 3 with the reason and no
// report (as a target that cannot be reached).
func TestHostileTargetsAnswerNothing(t *testing.T) {
	targets := map[string]func(net.Conn){
		"closes at once": func(net.Conn) {},
		"random bytes": func(c net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = c.Read(make([]byte, 4096))
			_, _ = c.Write([]byte("\x16\x03\x01garbage\r\n\x00\xff not http at all"))
		},
		"accepts and holds": func(c net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Read(make([]byte, 1<<16))
			_, _ = c.Read(make([]byte, 1<<16))
		},
		"trickles": func(c net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = c.Read(make([]byte, 4096))
			for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		},
	}
	for name, serve := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := hostile(t, serve)
			js := filepath.Join(t.TempDir(), "report.json")
			code, out, errOut := cli(t, "certify", "--url", url, "--path", "/orders",
				"--body", `{"customerId":"{{intent}}"}`, "--checks", "sequential-replay,missing-key",
				"--rounds", "2", "--timeout", "1s", "--no-color", "--json", js)
			require.Equal(t, idemcheck.ExitUnavailable, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			if name == "accepts and holds" {
				assert.Contains(t, errOut, "the target gave no answer to the pre-flight request in 1s")
				assert.NoFileExists(t, js)
				return
			}
			assert.Contains(t, out, "NO ANSWERS")
			b, err := os.ReadFile(js)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"verdict": "no-answers"`)
		})
	}
}

// A run whose every check was skipped reports all-skipped and exits 4,
// with nothing sent.
func TestEveryCheckSkippedIsNotAPass(t *testing.T) {
	url, _ := ordersAPI(t, "")
	code, out, errOut := cli(t, "certify", "--url", url, "--path", "/orders",
		"--body", `{"customerId":"{{intent}}"}`, "--checks", "failed-attempt,crash-lease,webhook-redelivery", "--no-color")
	require.Equal(t, idemcheck.ExitInconclusive, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ALL SKIPPED")
	// The reasons name the flags that would make the checks apply, not the
	// library's Go fields.
	assert.Contains(t, out, "let idemcheck start it (--cmd or --image)")
	assert.Contains(t, out, "the event id in the body; --key-pointer, or key_pointer: in the policy")
	assert.NotContains(t, out, "set Powers")
}

// `idemcheck check` says the settings the checker's hints name with the
// command's flags: a rule not asked for names --checks, a count without a
// database the flags that give one.
func TestCheckSaysHintsInFlags(t *testing.T) {
	dir := t.TempDir()
	f, js := filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(f, []byte(`{"run":{"target":{"url":"http://127.0.0.1:1","method":"POST","path":"/"},`+
		`"policy":{"key_header":"Idempotency-Key","created_statuses":[201],"in_progress_status":409,"mismatch_status":422,"replay_errors":true},`+
		`"checks":[{"name":"concurrent-burst","rule":"A rule."}],"not_asked":[{"name":"lost-reply","rule":"Another rule."}]}}`+"\n"), 0o644))
	_, out, errOut := cli(t, "check", "--no-color", "--json", js, f)
	b, err := os.ReadFile(js)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, string(b), `not asked for (--checks)`)
	assert.NotContains(t, string(b), `(Checks)`)
}

// `idemcheck check` on a history holding only its run record reports an
// empty run and exits 4.
func TestCheckOfAnEmptyHistory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "h.jsonl")
	require.NoError(t, os.WriteFile(f, []byte(`{"run":{"seed":1,"target":{"url":"http://127.0.0.1:1","method":"POST","path":"/"},`+
		`"policy":{"key_header":"Idempotency-Key","created_statuses":[201],"in_progress_status":409,"mismatch_status":422,"replay_errors":true},`+
		`"checks":[{"name":"concurrent-burst"}]}}`+"\n"), 0o644))
	code, out, errOut := cli(t, "check", "--no-color", f)
	require.Equal(t, idemcheck.ExitInconclusive, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "EMPTY")
}
