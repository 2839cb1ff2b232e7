package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/termtest"
)

// soakCounts are three successive counts of a soak, as its progress sees
// them.
func soakCounts() []idemcheck.SoakProgress {
	return []idemcheck.SoakProgress{
		{Elapsed: time.Second, Sent: 950, Rate: 950, Succeeded: 940, Cut: 10, Errors: 0},
		{Elapsed: 2 * time.Second, Sent: 1950, Rate: 1000, Succeeded: 1928, Cut: 21, Errors: 1},
		{Elapsed: 2500 * time.Millisecond, Sent: 2400, Rate: 900, Succeeded: 2372, Cut: 26, Errors: 2},
	}
}

// On a terminal the count is one line redrawn in place: each update goes
// back to the start of the line and erases it, so the screen shows only the
// last count (rate, success share, cuts, errors, elapsed), and Done ends
// that line with a newline so that what follows starts below it.
func TestSoakProgressRedrawsOneLineOnATerminal(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("soak: 1000 intents/s for 2.5s, cut-reply@0.01 …\n")
	p := &SoakProgressWriter{W: &b, Terminal: true}
	for _, c := range soakCounts() {
		p.Update(c)
		assert.False(t, strings.HasSuffix(b.String(), "\n"), "a line being redrawn has no newline yet")
	}
	p.Done()
	out := b.String()
	assert.Equal(t, 3, strings.Count(out, "\r\033[K"), "each update returns to the start of the line and erases it: %q", out)
	assert.Equal(t, 2, strings.Count(out, "\n"), "no newline but the start line's and Done's: %q", out)
	require.True(t, strings.HasSuffix(out, "\n"), "Done ends the line: %q", out)
	b.WriteString("soak of POST …\n")
	assert.Equal(t, []string{
		"soak: 1000 intents/s for 2.5s, cut-reply@0.01 …",
		"soak 2.5s: 2400 sent, 900/s, 98.8% success, 26 cut and retried, 2 errors",
		"soak of POST …",
	}, termtest.Screen(b.String()))

	// A second Done, or a Done with nothing drawn, writes nothing.
	n := b.Len()
	p.Done()
	(&SoakProgressWriter{W: &b, Terminal: true}).Done()
	assert.Equal(t, n, b.Len())
}

// Anywhere else each count is a line of its own, never redrawn.
func TestSoakProgressWritesLinesOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p := &SoakProgressWriter{W: &b}
	for _, c := range soakCounts() {
		p.Update(c)
	}
	p.Done()
	out := b.String()
	assert.NotContains(t, out, "\r")
	assert.NotContains(t, out, "\033")
	assert.Equal(t, []string{
		"soak 1s: 950 sent, 950/s, 98.9% success, 10 cut and retried, 0 errors",
		"soak 2s: 1950 sent, 1000/s, 98.9% success, 21 cut and retried, 1 errors",
		"soak 2.5s: 2400 sent, 900/s, 98.8% success, 26 cut and retried, 2 errors",
	}, strings.Split(strings.TrimSuffix(out, "\n"), "\n"))
}

// For a log collector each count is a JSON line that stands alone.
func TestSoakProgressJSONLinesDecode(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	shard := idemcheck.Shard{Index: 2, Count: 4}
	for i, c := range soakCounts() {
		if i == 2 {
			c.Shard = &shard
		}
		require.NoError(t, WriteSoakProgressJSON(&b, c, now.Add(c.Elapsed)))
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	var last soakProgressJSON
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		for _, k := range []string{"time", "event", "elapsed_s", "sent", "rate", "success", "cut", "errors", "retried"} {
			assert.Contains(t, m, k, l)
		}
		require.NoError(t, json.Unmarshal([]byte(l), &last))
	}
	assert.Equal(t, soakProgressJSON{Time: now.Add(2500 * time.Millisecond), Event: "soak-progress", Shard: "2/4", ElapsedS: 2.5,
		Sent: 2400, Rate: 900, Success: 2372.0 / 2400, Cut: 26, Errors: 2}, last)
}
