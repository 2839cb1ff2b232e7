package faults

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// cutPoint is where cut-request closes a request: the head plus half the
// body when the head gives the body's length, else half the head.
func TestCutPoint(t *testing.T) {
	head := func(lines ...string) string {
		return "POST /orders HTTP/1.1\r\nHost: x\r\n" + strings.Join(lines, "") + "\r\n"
	}
	for _, tc := range []struct {
		name string
		req  string
		want int // -1: half the head
	}{
		{"content-length", head("Content-Length: 10\r\n") + "0123456789", len(head("Content-Length: 10\r\n")) + 5},
		{"any case, spaces", head("content-LENGTH:  3 \r\n") + "abc", len(head("content-LENGTH:  3 \r\n")) + 1},
		{"one byte", head("Content-Length: 1\r\n") + "a", len(head("Content-Length: 1\r\n"))},
		{"empty body", head("Content-Length: 0\r\n"), -1},
		{"no length", head(), -1},
		{"chunked", head("Transfer-Encoding: chunked\r\n") + "3\r\nabc\r\n0\r\n\r\n", -1},
		{"two lengths", head("Content-Length: 3\r\n", "Content-Length: 3\r\n") + "abc", -1},
		{"bad length", head("Content-Length: -3\r\n") + "abc", -1},
	} {
		got, ok := cutPoint([]byte(tc.req))
		assert.True(t, ok, tc.name)
		want := tc.want
		if want < 0 {
			want = (strings.Index(tc.req, "\r\n\r\n") + 4) / 2
		}
		assert.Equal(t, want, got, tc.name)
		assert.Less(t, got, len(tc.req), "%s: something is always withheld", tc.name)
	}

	_, ok := cutPoint([]byte("POST / HTTP/1.1\r\nHost: x\r\n"))
	assert.False(t, ok, "the head is not complete yet")
	got, ok := cutPoint([]byte("POST / HTTP/1.1\r\nX: " + strings.Repeat("x", maxHead)))
	assert.True(t, ok, "a head that never ends is cut anyway")
	assert.Equal(t, maxHead/2, got)
}
