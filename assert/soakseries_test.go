package assert

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// A soak's series counts its first attempts, successes, cuts, latencies,
// duplicates and losses by stretch of time, and a soak longer than
// MaxSoakBuckets stretches gets wider ones: the series keeps its size and
// its totals.
func TestSoakSeries(t *testing.T) {
	p := idemcheck.IETF()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tally := &SoakTally{Policy: p}
	const seconds = 600 // far more than MaxSoakBuckets stretches of the first width
	var intents, cut, dup int64
	for s := range seconds {
		for k := range 4 {
			id := fmt.Sprintf("i%d-%d", s, k)
			start := t0.Add(time.Duration(s)*time.Second + time.Duration(k)*100*time.Millisecond)
			a := soakAttempt(id, 1, 201, false)
			a.Start, a.End = start, start.Add(2*time.Millisecond)
			effects := int64(1)
			if k == 3 {
				a = soakAttempt(id, 1, 0, false)
				a.Start, a.End = start, start.Add(time.Second)
				cut++
			}
			if s == 300 && k == 0 {
				effects = 2
				dup++
			}
			intents++
			tally.Attempt(a)
			tally.Observation(idemcheck.Observation{Intent: id, Check: idemcheck.CheckSoak, Effects: effects})
		}
	}
	r := tally.Result(idemcheck.SoakResult{})
	require.NotEmpty(t, r.Series)
	assert.LessOrEqual(t, len(r.Series), idemcheck.MaxSoakBuckets)
	var sumIntents, sumCut, sumDup, sumOK int64
	for _, b := range r.Series {
		sumIntents += b.Intents
		sumCut += b.Cut
		sumDup += b.Duplicates
		sumOK += b.Succeeded
		if b.Intents > b.Cut {
			// Latencies are 2 ms, to within a bin.
			assert.InDelta(t, float64(2*time.Millisecond), float64(b.P50), float64(time.Millisecond)/2)
		}
	}
	assert.Equal(t, intents, sumIntents)
	assert.Equal(t, cut, sumCut)
	assert.Equal(t, dup, sumDup)
	assert.Equal(t, intents-cut, sumOK)
	w := r.Series[0].Width
	assert.GreaterOrEqual(t, time.Duration(len(r.Series))*w, seconds*time.Second)
	// The duplicate is counted in the stretch its intent was sent in.
	at := 300 * time.Second
	for _, b := range r.Series {
		if b.Duplicates > 0 {
			assert.True(t, b.At <= at && at < b.At+b.Width, "duplicate counted at %v, sent at %v", b.At, at)
		}
	}
}
