// Package history holds the on-disk format of idemcheck's histories: JSON
// lines, one record a line, written as a run happens by an Encoder and read
// back one record (or one history) at a time by a Decoder. A file or a pipe
// may hold several histories one after another: each run record starts a
// new one (a suite writes one per endpoint).
//
// The format is what an Encoder writes (the command's --history) and
// `idemcheck check` reads, and what recorded bug histories are kept in as
// test fixtures, so it only ever grows: every history written before still
// reads.
//
// It speaks the root package's types and imports nothing else of
// idemcheck: never assert, scenarios or a renderer.
package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/idemcheck/idemcheck"
)

// Record is one line of a history: exactly one member is set. The run
// header comes first; intents, attempts, bursts, observations and events
// follow in any order (a run that streams writes them as they happen; a
// whole history is written kind by kind).
type Record struct {
	Run         *idemcheck.Run         `json:"run,omitempty"`
	Intent      *idemcheck.Intent      `json:"intent,omitempty"`
	Attempt     *idemcheck.Attempt     `json:"attempt,omitempty"`
	Burst       *idemcheck.Burst       `json:"burst,omitempty"`
	Observation *idemcheck.Observation `json:"observation,omitempty"`
	Event       *idemcheck.Event       `json:"event,omitempty"`
}

// set counts the members of r that are set.
func (r Record) set() int {
	n := 0
	for _, p := range []bool{r.Run != nil, r.Intent != nil, r.Attempt != nil, r.Burst != nil, r.Observation != nil, r.Event != nil} {
		if p {
			n++
		}
	}
	return n
}

// Encoder writes history records as JSON lines. It is safe for use by
// several goroutines: one record is written at a time, whole. Records are
// buffered; Flush writes them out, and History flushes after each whole
// history, so a reader at the other end of a pipe gets each history as
// soon as it is complete. After the first error every call returns it.
type Encoder struct {
	mu  sync.Mutex
	buf *bufio.Writer
	enc *json.Encoder // writes to buf
	err error
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	// 32 KiB: a soak's records (about 1 KB an attempt) leave in a few
	// dozen per write, and a small history does not pay for zeroing a
	// large buffer (256 KiB made writing and reading back a 2 KB history
	// four times slower, which the fuzzer felt).
	bw := bufio.NewWriterSize(w, 32<<10)
	return &Encoder{buf: bw, enc: json.NewEncoder(bw)}
}

// Encode writes one record.
func (e *Encoder) Encode(r Record) error {
	if n := r.set(); n != 1 {
		return fmt.Errorf("history: a record holds exactly one member, not %d", n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = e.enc.Encode(r)
	}
	return e.err
}

// Run starts a history: its header.
func (e *Encoder) Run(r idemcheck.Run) error { return e.Encode(Record{Run: &r}) }

// Intent writes an intent record.
func (e *Encoder) Intent(in idemcheck.Intent) error { return e.Encode(Record{Intent: &in}) }

// Attempt writes an attempt record.
func (e *Encoder) Attempt(a idemcheck.Attempt) error { return e.Encode(Record{Attempt: &a}) }

// Burst writes a burst record.
func (e *Encoder) Burst(b idemcheck.Burst) error { return e.Encode(Record{Burst: &b}) }

// Observation writes an observation record.
func (e *Encoder) Observation(o idemcheck.Observation) error {
	return e.Encode(Record{Observation: &o})
}

// Event writes an event record.
func (e *Encoder) Event(ev idemcheck.Event) error { return e.Encode(Record{Event: &ev}) }

// History writes a whole history, kind by kind (run, intents, attempts,
// bursts, observations, events), and flushes.
func (e *Encoder) History(h *idemcheck.History) error {
	if err := e.Run(h.Run); err != nil {
		return err
	}
	for i := range h.Intents {
		if err := e.Encode(Record{Intent: &h.Intents[i]}); err != nil {
			return err
		}
	}
	for i := range h.Attempts {
		if err := e.Encode(Record{Attempt: &h.Attempts[i]}); err != nil {
			return err
		}
	}
	for i := range h.Bursts {
		if err := e.Encode(Record{Burst: &h.Bursts[i]}); err != nil {
			return err
		}
	}
	for _, obs := range [][]idemcheck.Observation{h.Observations, h.Recounts} {
		for i := range obs {
			if err := e.Encode(Record{Observation: &obs[i]}); err != nil {
				return err
			}
		}
	}
	for i := range h.Events {
		if err := e.Encode(Record{Event: &h.Events[i]}); err != nil {
			return err
		}
	}
	return e.Flush()
}

// Flush writes out what is buffered and returns the first error of the
// encoder.
func (e *Encoder) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = e.buf.Flush()
	}
	return e.err
}

// Write writes whole histories to w, one after another.
func Write(w io.Writer, hs ...*idemcheck.History) error {
	e := NewEncoder(w)
	for _, h := range hs {
		if err := e.History(h); err != nil {
			return err
		}
	}
	return e.Flush()
}

// Writer is what writes a history, as the errors of a Decoder name it for
// an input that is not one: an idemcheck.Field, so that each caller says
// it in its own words (a Go program's history.Encoder, the command's
// --history flag; see idemcheck.FieldError.Text).
const Writer idemcheck.Field = "history.Encoder"

// ErrNoRun is the error of an input that ends without a run record (an
// empty file, say): it holds no history. It is a usage *idemcheck.Error
// around a *idemcheck.FieldError about Writer.
var ErrNoRun = idemcheck.Fieldf(idemcheck.ExitUsage, Writer, "no run record: is this a history written by %s?", Writer)

// MaxLine is the longest record a Decoder reads: 64 MiB, far above any
// reply body the harness keeps.
const MaxLine = 64 << 20

// Decoder reads history records one at a time. Its errors name the input
// and the line of the record at fault ("history.jsonl:12: …").
type Decoder struct {
	sc   *bufio.Scanner
	name string
	line int
	// next is a run record read by Next that starts the following history.
	next *idemcheck.Run
	// started: a run record has been read, so other records belong to it.
	started bool
	err     error
}

// NewDecoder returns a Decoder reading r; name stands for r in errors (a
// file name, or "standard input").
func NewDecoder(r io.Reader, name string) *Decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return &Decoder{sc: sc, name: name}
}

// Record reads the next record; io.EOF at the end of the input. The first
// record must be a run record.
func (d *Decoder) Record() (Record, error) {
	if d.err != nil {
		return Record{}, d.err
	}
	r, err := d.record()
	if err != nil {
		d.err = err
	}
	return r, err
}

func (d *Decoder) record() (Record, error) {
	for d.sc.Scan() {
		d.line++
		if len(d.sc.Bytes()) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(d.sc.Bytes(), &r); err != nil {
			return Record{}, fmt.Errorf("%s:%d: not a history record: %v", d.name, d.line, err)
		}
		switch {
		case r.set() == 0:
			return Record{}, fmt.Errorf("%s:%d: a record needs one of run, intent, attempt, burst, observation, event", d.name, d.line)
		case r.Run != nil:
			d.started = true
		case !d.started:
			return Record{}, fmt.Errorf("%s:%d: %w", d.name, d.line,
				idemcheck.Fieldf(idemcheck.ExitUsage, Writer, "a record before the first run record: is this a history written by %s?", Writer))
		}
		return r, nil
	}
	if err := d.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Record{}, fmt.Errorf("%s:%d: %w", d.name, d.line+1, idemcheck.Fieldf(idemcheck.ExitUsage, Writer,
				"a line longer than %d MiB, which no record is: is this a history written by %s?", MaxLine>>20, Writer))
		}
		return Record{}, fmt.Errorf("%s:%d: %v", d.name, d.line+1, err)
	}
	if !d.started {
		return Record{}, fmt.Errorf("%s: %w", d.name, ErrNoRun)
	}
	return Record{}, io.EOF
}

// Next reads the next whole history: its run record and every record up
// to the next run record or the end. It returns io.EOF when no history is
// left, so a caller holds one history at a time however many the input
// has.
func (d *Decoder) Next() (*idemcheck.History, error) {
	var h *idemcheck.History
	if d.next != nil {
		h, d.next = &idemcheck.History{Run: *d.next}, nil
	}
	for {
		r, err := d.Record()
		if errors.Is(err, io.EOF) && h != nil {
			return h, nil
		}
		if err != nil {
			return nil, err
		}
		if r.Run != nil {
			if h != nil {
				d.next = r.Run
				return h, nil
			}
			h = &idemcheck.History{Run: *r.Run}
			continue
		}
		switch {
		case r.Intent != nil:
			h.Intents = append(h.Intents, *r.Intent)
		case r.Attempt != nil:
			h.Attempts = append(h.Attempts, *r.Attempt)
		case r.Burst != nil:
			h.Bursts = append(h.Bursts, *r.Burst)
		case r.Observation != nil:
			h.AddObservation(*r.Observation)
		case r.Event != nil:
			h.Events = append(h.Events, *r.Event)
		}
	}
}

// ReadAll reads every history of r; name stands for r in errors. An input
// with no run record is an error.
func ReadAll(r io.Reader, name string) ([]*idemcheck.History, error) {
	d := NewDecoder(r, name)
	var hs []*idemcheck.History
	for {
		h, err := d.Next()
		if errors.Is(err, io.EOF) {
			return hs, nil
		}
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
}
