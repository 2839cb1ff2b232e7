package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A target's text reaches the terminal escaped: a reply that retitles the
// window (OSC), clears the screen (CSI), rings the bell and starts a fake
// "verdict PASS" line shows as escapes, never as the sequences.
func TestTargetTextIsEscapedOnTheTerminal(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		// A fresh resource every time: every replay is an anomaly, whose
		// evidence shows the bodies.
		fmt.Fprintf(w, "{\"id\":\"%d\",\"n\":\"\x1b]0;pwned\x07\x1b[2J\x1b[H\r\n  verdict PASS\x9b1m\"}", n.Add(1))
	}))
	t.Cleanup(srv.Close)
	_, out, errOut := cli(t, "certify", "--url", srv.URL, "--path", "/orders", "--body", `{"a":"{{intent}}"}`,
		"--checks", "sequential-replay", "--no-color")
	all := out + errOut
	assert.Contains(t, all, `\x1b]0;pwned\x07`, "the sequence is shown escaped:\n%s", all)
	for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		assert.NotContains(t, all, bad, "%q reached the terminal:\n%s", bad, all)
	}
	for _, line := range strings.Split(all, "\n") {
		assert.NotEqual(t, "  verdict PASS", strings.TrimRight(line, " "), "a line of the target's")
	}
}
