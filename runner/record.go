package runner

import (
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/wire"
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

// record records one of a certification's sends (put) and keeps what the
// run looks back at: the count sent, the step's attempts, the last one.
// It returns the attempt as recorded, numbered.
func (s *session) record(a idemcheck.Attempt, res wire.Result) idemcheck.Attempt {
	s.sent++
	a = s.put(a, res)
	s.step = append(s.step, a)
	s.last = a
	return a
}

// describe records on a the request it sends, as a history keeps it, in
// both modes: the headers redacted, the path and body with every secret
// hidden (those the request itself carries learnt first), and fp, its
// fingerprint.
func (s *session) describe(a *idemcheck.Attempt, req wire.Request, fp string) {
	// Computed headers are described as computed now, the signatures
	// among them hidden; each sent attempt then records its own (fill).
	req = req.Finished()
	a.Method, a.Header, a.Path, a.Body = req.Method, s.redact(req.Header), s.scrubRequest(req), s.scrub(string(req.Body))
	a.Fingerprint = fp
}

// put fills a from res (fill) and hands it to the recorder, which numbers
// it: the one way a send becomes a recorded attempt, in a certification
// and in a soak. A soak's many goroutines call it at once: fill and a
// soak's recorder are safe for that.
func (s *session) put(a idemcheck.Attempt, res wire.Result) idemcheck.Attempt {
	s.fill(&a, res)
	accepted := a.Outcome == idemcheck.Replied && s.Policy.Accepted(a.Status)
	if accepted {
		s.accepted.Store(true)
	}
	a = s.rec.attempt(a)
	if accepted && !s.soak && len(s.intents) > 0 {
		s.opsMu.Lock()
		// Another client's attempt under the same key is another
		// operation (cross-tenant): its own effect is owed.
		k := a.Key
		if a.Variant == idemcheck.OtherTenant {
			k += "\x00" + string(a.Variant)
		}
		if !slices.Contains(s.acceptedKeys, k) {
			s.acceptedKeys = append(s.acceptedKeys, k)
		}
		s.opsMu.Unlock()
		s.noteOperation(a, res, s.intents[len(s.intents)-1])
	}
	return a
}

// fill records a send on a: its times, its outcome and, when it was
// answered, the reply (headers redacted, secrets hidden). It is the one
// way a result becomes an attempt, in a certification and in a soak
// (whose vegeta sends come as wire.Results too: vegetaResult).
func (s *session) fill(a *idemcheck.Attempt, res wire.Result) {
	// Wall-clock times only, as the history file keeps them: a time with
	// its monotonic reading orders by that reading, and two attempts a
	// few tens of nanoseconds apart can order the other way by the wall
	// clock, so the checker would judge the run one way in memory and
	// another from its file (`idemcheck check`).
	a.Start, a.FirstByte, a.End = res.Start.Round(0), res.FirstByte.Round(0), res.End.Round(0)
	if res.SentHeader != nil {
		// This attempt's own computed headers (its timestamp, its
		// signature hidden), not those described for its step.
		a.Header = s.redact(res.SentHeader)
	}
	switch {
	case res.Err == nil:
		a.Outcome = idemcheck.Replied
	case !res.Written || res.ErrKind == wire.KindRefused:
		a.Outcome = idemcheck.NotSent
	default:
		a.Outcome = idemcheck.Unknown
	}
	if res.Err != nil {
		a.Error = s.scrub(res.Err.Error())
	}
	if a.Outcome == idemcheck.Replied {
		a.Status = res.Status
		s.secret().LearnBody(res.Body)
		a.RespHeader = s.redact(res.Header)
		a.RespBody = s.scrub(string(res.Body))
	}
}

// scrubRequest learns the secrets a request carries in its body and query
// and returns its path with every known secret hidden; its body is then
// scrubbed with them too.
func (s *session) scrubRequest(req wire.Request) string {
	s.secret().LearnBody(req.Body)
	s.secret().LearnQuery(req.Path)
	return s.scrub(req.Path)
}
