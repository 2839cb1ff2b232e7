package runner

import (
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck"
)

// progress gives the soak's running count to Progress every
// ProgressEvery (default one second) from start, in a goroutine of its
// own; the function it returns stops it and gives the last count. With no
// Progress it does nothing.
func (sk *Soak) progress(live *soakLive, start time.Time) (stop func()) {
	if sk.Progress == nil {
		return func() {}
	}
	every := sk.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				sk.Progress(live.take(start, false))
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-reported
		sk.Progress(live.take(start, true))
	}
}

// soakLive are the soak's running counts, for its progress.
type soakLive struct {
	sent, succeeded, cut, errors, retried atomic.Int64
	shard                                 idemcheck.Shard
	// last is the time and sent count of the previous take, for the rate.
	lastAt   time.Time
	lastSent int64
}

// take returns the counts now, the rate over the interval since the
// previous take, or over the whole soak for the last one (final), whose
// interval since the last tick is too short to mean anything. It is called
// from one goroutine at a time.
func (l *soakLive) take(start time.Time, final bool) idemcheck.SoakProgress {
	now := time.Now()
	p := idemcheck.SoakProgress{Elapsed: now.Sub(start), Sent: l.sent.Load(), Succeeded: l.succeeded.Load(),
		Cut: l.cut.Load(), Errors: l.errors.Load(), Retried: l.retried.Load()}
	if l.lastAt.IsZero() || final {
		l.lastAt, l.lastSent = start, 0
	}
	if d := now.Sub(l.lastAt).Seconds(); d > 0 {
		p.Rate = float64(p.Sent-l.lastSent) / d
	}
	l.lastAt, l.lastSent = now, p.Sent
	if l.shard.Count > 1 {
		shard := l.shard
		p.Shard = &shard
	}
	return p
}
