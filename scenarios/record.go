package scenarios

import (
	"sync"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

// recorder is where a run's records go as they are made, in a
// certification and in a soak alike: the run header first, then intents,
// attempts, bursts, observations and events, then flush. attempt and
// burst number their record (IDs from 1, in the order they are recorded)
// and return it numbered. A recorder is told records; it never answers
// what was recorded: what a run needs to look back at, it keeps itself.
type recorder interface {
	run(idemcheck.Run) error
	intent(idemcheck.Intent)
	attempt(idemcheck.Attempt) idemcheck.Attempt
	burst(idemcheck.Burst) idemcheck.Burst
	observation(idemcheck.Observation)
	event(idemcheck.Event)
	// flush writes out what is buffered and returns the recorder's first
	// error.
	flush() error
}

// historyRecorder records into an in-memory history: a certification's,
// which the checker then reads whole. It is used from one goroutine.
type historyRecorder struct{ h *idemcheck.History }

func (r historyRecorder) run(hdr idemcheck.Run) error {
	r.h.Run = hdr
	return nil
}

func (r historyRecorder) intent(in idemcheck.Intent) { r.h.Intents = append(r.h.Intents, in) }

func (r historyRecorder) attempt(a idemcheck.Attempt) idemcheck.Attempt {
	a.ID = len(r.h.Attempts) + 1
	r.h.Attempts = append(r.h.Attempts, a)
	return a
}

func (r historyRecorder) burst(b idemcheck.Burst) idemcheck.Burst {
	b.ID = len(r.h.Bursts) + 1
	r.h.Bursts = append(r.h.Bursts, b)
	return b
}

func (r historyRecorder) observation(o idemcheck.Observation) {
	r.h.AddObservation(o)
}

func (r historyRecorder) event(ev idemcheck.Event) { r.h.Events = append(r.h.Events, ev) }

func (historyRecorder) flush() error { return nil }

// streamRecorder records a history as it happens, from many goroutines: a
// soak's. It numbers attempts and hands each record to the counter and to
// the history encoder, under one lock, so that IDs appear in the file in
// order and the counter sees the records in the file's order. Nothing is
// kept in memory.
type streamRecorder struct {
	mu     sync.Mutex
	enc    *history.Encoder // nil without a history
	count  SoakCounter      // nil without a counter
	next   int              // the last attempt's ID
	bursts int              // the last burst's ID
	err    error            // the history's first error
}

// detailed reports whether records are written to a history, so must
// carry the requests and replies in full.
func (r *streamRecorder) detailed() bool { return r.enc != nil }

func (r *streamRecorder) run(h idemcheck.Run) error {
	if r.count != nil {
		r.count.Run(h)
	}
	if r.enc == nil {
		return nil
	}
	return r.enc.Run(h)
}

func (r *streamRecorder) intent(in idemcheck.Intent) {
	if r.enc == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(r.enc.Intent(in))
}

func (r *streamRecorder) attempt(a idemcheck.Attempt) idemcheck.Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	a.ID = r.next
	if r.count != nil {
		r.count.Attempt(a)
	}
	if r.enc != nil {
		r.keep(r.enc.Attempt(a))
	}
	return a
}

func (r *streamRecorder) burst(b idemcheck.Burst) idemcheck.Burst {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bursts++
	b.ID = r.bursts
	if r.enc != nil {
		r.keep(r.enc.Burst(b))
	}
	return b
}

func (r *streamRecorder) observation(o idemcheck.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count != nil {
		r.count.Observation(o)
	}
	if r.enc != nil {
		r.keep(r.enc.Observation(o))
	}
}

func (r *streamRecorder) event(ev idemcheck.Event) {
	if r.enc == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(r.enc.Event(ev))
}

// keep remembers the history's first error.
func (r *streamRecorder) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *streamRecorder) flush() error {
	if r.enc == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(r.enc.Flush())
	return r.err
}
