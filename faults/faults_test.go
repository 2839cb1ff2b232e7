package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allNames = []string{
	"bandwidth", "cut-reply", "cut-request", "db-cut", "db-cut-after", "db-hold", "db-latency",
	"latency", "none", "reset", "slow-reply", "timeout",
}

func TestParse(t *testing.T) {
	f, err := Parse("cut-reply")
	require.NoError(t, err)
	assert.Equal(t, CutReply, f)
	assert.Equal(t, LinkClient, f.Link)

	f, err = Parse("none")
	require.NoError(t, err)
	assert.True(t, f.IsNone())

	assert.Equal(t, allNames, Names())

	for _, tc := range []struct {
		in, want string
		link     string
	}{
		{"cut-request", "cut-request", LinkClient},
		{"timeout", "timeout", LinkClient},
		{"reset", "reset", LinkClient},
		{"slow-reply", "slow-reply:delay=2s", LinkClient},
		{"slow-reply:delay=1s", "slow-reply:delay=1s", LinkClient},
		{"slow-reply:delay=1500ms", "slow-reply:delay=1.5s", LinkClient},
		{"latency", "latency:jitter=0,ms=100", LinkClient},
		{"latency:ms=200,jitter=20", "latency:jitter=20,ms=200", LinkClient},
		{"latency:jitter=20,ms=0200", "latency:jitter=20,ms=200", LinkClient},
		{"bandwidth", "bandwidth:kbps=64", LinkClient},
		{"bandwidth:kbps=8", "bandwidth:kbps=8", LinkClient},
		{"db-latency:ms=5", "db-latency:ms=5", LinkDB},
		// Without match=, the effect write: no match parameter at all.
		{"db-cut", `db-cut:nth=1`, LinkDB},
		{"db-hold:nth=3", `db-hold:nth=3`, LinkDB},
		{`db-cut:match=(?i)^\s*(COMMIT|END)\b`, `db-cut:match=(?i)^\s*(COMMIT|END)\b,nth=1`, LinkDB},
		// A comma inside a value stays there unless "key=" follows it.
		{`db-cut:match=^x{1,3}$,nth=2`, `db-cut:match=^x{1,3}$,nth=2`, LinkDB},
		{`db-cut:nth=2,match=(?i)^insert`, `db-cut:match=(?i)^insert,nth=2`, LinkDB},
	} {
		f, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, f.String(), tc.in)
		assert.Equal(t, tc.link, f.Link, tc.in)
		again, err := Parse(f.String())
		require.NoError(t, err, "Parse(%q.String())", tc.in)
		assert.Equal(t, f, again, "%s round-trips", tc.in)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"cut-replay":               `faults: unknown fault "cut-replay" (known: bandwidth, cut-reply, cut-request, db-cut, db-cut-after, db-hold, db-latency, latency, none, reset, slow-reply, timeout)`,
		"":                         `faults: unknown fault "" (known: bandwidth, cut-reply, cut-request, db-cut, db-cut-after, db-hold, db-latency, latency, none, reset, slow-reply, timeout)`,
		"latency:":                 `faults: latency: nothing after ':' (want latency:key=value,...)`,
		"latency:ms":               `faults: latency: "ms" is not key=value`,
		"latency:=3":               `faults: latency: "=3" is not key=value`,
		"latency:ms=1,ms=2":        `faults: latency: parameter "ms" given twice`,
		"latency:delay=1s":         `faults: latency: unknown parameter "delay" (accepted: jitter, ms)`,
		"latency:ms=fast":          `faults: latency: ms="fast": want whole milliseconds from 0 to 3600000`,
		"latency:ms=-1":            `faults: latency: ms="-1": want whole milliseconds from 0 to 3600000`,
		"latency:ms=10,jitter=20":  `faults: latency: jitter=20 is larger than ms=10 (a delay cannot be negative)`,
		"cut-reply:bytes=3":        `faults: cut-reply: unknown parameter "bytes" (cut-reply takes no parameters)`,
		"slow-reply:delay=2":       `faults: slow-reply: delay="2": want a duration in whole milliseconds from 1ms to 1h, such as 500ms or 2s`,
		"slow-reply:delay=1500us":  `faults: slow-reply: delay="1500us": want a duration in whole milliseconds from 1ms to 1h, such as 500ms or 2s`,
		"slow-reply:ms=100":        `faults: slow-reply: unknown parameter "ms" (accepted: delay)`,
		"bandwidth:kbps=0":         `faults: bandwidth: kbps="0": want a whole number of kilobytes per second, at least 1`,
		"db-cut:nth=0":             `faults: db-cut: nth="0": want a whole number, at least 1`,
		"db-cut:match=(":           "faults: db-cut: match=\"(\": want a regular expression (Go syntax): error parsing regexp: missing closing ): `(`",
		"db-hold:match=":           `faults: db-hold: match="": want a regular expression (Go syntax), not empty`,
		"db-latency:ms=1,jitter=1": `faults: db-latency: unknown parameter "jitter" (accepted: ms)`,
	} {
		_, err := Parse(in)
		assert.EqualError(t, err, want, "Parse(%q)", in)
	}
}

func TestFaultString(t *testing.T) {
	assert.Equal(t, "none", None.String())
	assert.True(t, None.IsNone())
	assert.False(t, CutReply.IsNone())
	assert.Equal(t, "cut-reply", CutReply.String())
	f := Fault{Name: "x", Params: map[string]string{"b": "2", "a": "1"}}
	assert.Equal(t, "x:a=1,b=2", f.String())
}

// The constructors give the same values Parse does.
func TestConstructors(t *testing.T) {
	for s, f := range map[string]Fault{
		"slow-reply:delay=300ms":   SlowReply(300 * time.Millisecond),
		"latency:ms=200,jitter=20": Latency(200*time.Millisecond, 20*time.Millisecond),
		"bandwidth:kbps=16":        Bandwidth(16),
		"db-latency:ms=50":         DBLatency(50 * time.Millisecond),
		"db-cut":                   DBCut("", 0),
		"db-cut:nth=2,match=^x":    DBCut("^x", 2),
		"db-hold":                  DBHold("", 0),
		"cut-request":              CutRequest,
		"timeout":                  Timeout,
		"reset":                    Reset,
	} {
		want, err := Parse(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, f, s)
	}
	// A bad value is kept as given, for Addr to report.
	_, _, err := toxicsFor(SlowReply(time.Microsecond))
	assert.EqualError(t, err, `faults: slow-reply: delay="1µs": want a duration in whole milliseconds from 1ms to 1h, such as 500ms or 2s`)
	_, _, err = toxicsFor(Latency(1500*time.Microsecond, 0))
	assert.ErrorContains(t, err, `ms="1.5ms"`)
}

func TestToxicsForValidates(t *testing.T) {
	_, _, err := toxicsFor(Fault{Name: "cut-reply", Link: LinkDB})
	assert.ErrorContains(t, err, "acts on the client link")
	_, _, err = toxicsFor(Fault{Name: "cut-reply", Params: map[string]string{"bytes": "3"}})
	assert.ErrorContains(t, err, `unknown parameter "bytes" (cut-reply takes no parameters)`)
	_, _, err = toxicsFor(Fault{Name: "nope"})
	assert.ErrorContains(t, err, "known: bandwidth, cut-reply")
	f, ts, err := toxicsFor(Fault{Name: "cut-reply"}) // Link may be left empty
	require.NoError(t, err)
	assert.Equal(t, CutReply, f)
	require.Len(t, ts, 1)
	assert.Equal(t, "limit_data", ts[0].Type)
	assert.Equal(t, "downstream", ts[0].Stream)
	assert.Equal(t, 1, ts[0].Attributes["bytes"])

	// Parameters are filled in and turned into toxic attributes.
	f, ts, err = toxicsFor(Fault{Name: "latency", Params: map[string]string{"ms": "200"}})
	require.NoError(t, err)
	assert.Equal(t, "latency:jitter=0,ms=200", f.String())
	require.Len(t, ts, 2)
	for i, dir := range []string{"upstream", "downstream"} {
		assert.Equal(t, "latency", ts[i].Type)
		assert.Equal(t, dir, ts[i].Stream)
		assert.Equal(t, int64(200), ts[i].Attributes["latency"])
		assert.Equal(t, int64(0), ts[i].Attributes["jitter"])
	}
	_, ts, err = toxicsFor(SlowReply(1500 * time.Millisecond))
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, "downstream", ts[0].Stream)
	assert.Equal(t, int64(1500), ts[0].Attributes["latency"])
}

func TestParseNoneTakesNoParameters(t *testing.T) {
	_, err := Parse("none:x=1")
	assert.EqualError(t, err, `faults: none: unknown parameter list "x=1" (none takes no parameters)`)
}
