package runner

import (
	"context"
	"time"
)

// pacer caps the request rate with a token bucket. A burst takes all its
// tokens at once, so the cap never splits a burst (which would defeat it);
// the bucket holds at least one burst.
type pacer struct {
	rate   float64 // tokens per second; 0 means no cap
	size   float64
	tokens float64
	last   time.Time
}

func newPacer(rate float64, largestStep int) *pacer {
	size := max(rate, float64(largestStep))
	return &pacer{rate: rate, size: size, tokens: size, last: time.Now()}
}

// wait blocks until n tokens are available, or ctx ends.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.rate <= 0 {
		return nil
	}
	now := time.Now()
	p.tokens = min(p.size, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	need := float64(n) - p.tokens
	if need > 0 {
		d := time.Duration(need / p.rate * float64(time.Second))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		p.tokens += need
		p.last = time.Now()
	}
	p.tokens -= float64(n)
	return nil
}
