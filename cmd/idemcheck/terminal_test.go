package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
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

// A target that accepts connections and never answers ends the run at its
// pre-flight, within one attempt's time limit, exit 3 with the reason,
// instead of every check's attempts waiting as long for nothing.
func TestSilentTargetEndsAtThePreflight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	url := "http://" + ln.Addr().String()
	for _, args := range [][]string{
		{"certify", "--url", url, "--path", "/orders", "--body", `{"a":"{{intent}}"}`, "--timeout", "1s"},
		{"soak", "--url", url, "--path", "/orders", "--body", `{"a":"{{intent}}"}`, "--timeout", "1s", "--duration", "30s"},
	} {
		code, out, errOut := cli(t, args...)
		assert.Equal(t, idemcheck.ExitUnavailable, code, "%q\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		assert.Contains(t, errOut, "the target gave no answer to the pre-flight request in 1s", "%q", args)
		assert.Contains(t, errOut, "(a slow one needs a longer --timeout)", "the setting said as its flag: %q", args)
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		held = nil
		mu.Unlock()
	}
}
