package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/internal/termtest"
)

// With standard error on a terminal (a pseudo-terminal here) the soak shows
// its progress without being asked: one line redrawn in place while it
// runs, which the screen shows once, with the final count (rate, success
// share, cuts, errors, elapsed), ended by a newline, with the rate over
// the whole soak.
func TestSoakProgressOnATerminal(t *testing.T) {
	url, dsn := ordersAPI(t, orders.Reference)
	tty, read := termtest.PTY(t)
	var out bytes.Buffer
	code := run(context.Background(), soakArgs(url, dsn, "--intents", "60", "--rate", "20", "--duration", "1m", "--progress-every", "50ms"), &out, tty)
	written := read()
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nterminal:\n%q", out.String(), written)
	assert.GreaterOrEqual(t, strings.Count(written, "\r\033[K"), 2, "the line is redrawn while the soak runs: %q", written)
	assert.True(t, strings.HasSuffix(written, "\r\n"), "the last line ends with a newline: %q", written)
	screen := termtest.Screen(written)
	require.Len(t, screen, 2, "the start line and one progress line: %q", written)
	assert.Regexp(t, `^soak: 20 intents/s for 1m0s, `, screen[0])
	m := regexp.MustCompile(`^soak ([0-9.]+m?s): 60 sent, ([0-9]+)/s, [0-9.]+% success, [0-9]+ cut and retried, 0 errors$`).FindStringSubmatch(screen[1])
	require.NotNil(t, m, "the progress line: %q", screen[1])
	// The last count's rate is over the whole soak (its elapsed time is
	// shown cut to a tenth of a second), not over the instant since the
	// last redraw.
	elapsed, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	rate, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, float64(rate), 60/(elapsed.Seconds()+0.1)-0.5, screen[1])
	assert.LessOrEqual(t, float64(rate), 60/elapsed.Seconds()+0.5, screen[1])
	assert.Contains(t, out.String(), "verdict PASS")
}
