package assert

import (
	"math"
	"time"

	"github.com/idemcheck/idemcheck"
)

// soakSeries counts a soak over time (SoakResult.Series) in stretches of
// equal width from its first attempt. When a soak outlasts
// MaxSoakBuckets stretches, neighbours are merged and the width doubles:
// memory stays the same however long the soak.
type soakSeries struct {
	origin  time.Time
	width   time.Duration
	buckets []soakBucket
	// last is the latest stretch an attempt fell in: an observation is
	// counted there, as intents are counted just after their attempts.
	last int
}

// latencyBins are logarithmic, four to a doubling, from 1 µs: bin i holds
// latencies under 2^((i+1)/4) µs.
const latencyBins = 112

type soakBucket struct {
	intents, succeeded, cut, duplicates, lost int64
	latency                                   [latencyBins]int64
}

// firstWidth is the width a series starts with: a soak of ten seconds
// gets 40 stretches.
const firstWidth = 250 * time.Millisecond

func (s *soakSeries) bucket(t time.Time) *soakBucket {
	// The wall clock alone, as a history read from a file has it.
	t = t.Round(0)
	if s.origin.IsZero() {
		s.origin, s.width = t, firstWidth
	}
	i := max(int(t.Sub(s.origin)/s.width), 0)
	for i >= idemcheck.MaxSoakBuckets {
		s.merge()
		i = max(int(t.Sub(s.origin)/s.width), 0)
	}
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, soakBucket{})
	}
	s.last = max(s.last, i)
	return &s.buckets[i]
}

// merge joins neighbouring stretches and doubles the width.
func (s *soakSeries) merge() {
	out := make([]soakBucket, (len(s.buckets)+1)/2)
	for i, b := range s.buckets {
		o := &out[i/2]
		o.intents += b.intents
		o.succeeded += b.succeeded
		o.cut += b.cut
		o.duplicates += b.duplicates
		o.lost += b.lost
		for j, n := range b.latency {
			o.latency[j] += n
		}
	}
	s.buckets, s.width, s.last = out, s.width*2, s.last/2
}

// attempt counts a first attempt.
func (s *soakSeries) attempt(a idemcheck.Attempt, promised bool) {
	if a.Start.IsZero() {
		return
	}
	b := s.bucket(a.Start)
	b.intents++
	if a.Outcome != idemcheck.Replied {
		b.cut++
		return
	}
	if promised {
		b.succeeded++
	}
	b.latency[latencyBin(a.End.Round(0).Sub(a.Start.Round(0)))]++
}

// observation counts a duplicate or a lost effect.
func (s *soakSeries) observation(duplicate, lost bool) {
	if len(s.buckets) == 0 || !duplicate && !lost {
		return
	}
	b := &s.buckets[s.last]
	if duplicate {
		b.duplicates++
	} else {
		b.lost++
	}
}

func latencyBin(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	return min(int(math.Log2(us)*4), latencyBins-1)
}

// binTop is the largest latency bin i holds.
func binTop(i int) time.Duration {
	return time.Duration(math.Exp2(float64(i+1)/4) * float64(time.Microsecond))
}

func percentile(h *[latencyBins]int64, n int64, p float64) time.Duration {
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(n)))
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank {
			return binTop(i)
		}
	}
	return binTop(latencyBins - 1)
}

func (s *soakSeries) result() []idemcheck.SoakBucket {
	if len(s.buckets) == 0 {
		return nil
	}
	out := make([]idemcheck.SoakBucket, len(s.buckets))
	for i, b := range s.buckets {
		var answered int64
		for _, c := range b.latency {
			answered += c
		}
		out[i] = idemcheck.SoakBucket{At: time.Duration(i) * s.width, Width: s.width,
			Intents: b.intents, Succeeded: b.succeeded, Cut: b.cut, Duplicates: b.duplicates, Lost: b.lost,
			P50: percentile(&b.latency, answered, 0.5), P90: percentile(&b.latency, answered, 0.9), P99: percentile(&b.latency, answered, 0.99)}
	}
	return out
}
