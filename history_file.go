package idemcheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// historyLine is one line of a JSONL history: exactly one member is set.
// The run header comes first, then intents, attempts, bursts and
// observations in the order they happened.
type historyLine struct {
	Run         *Run         `json:"run,omitempty"`
	Intent      *Intent      `json:"intent,omitempty"`
	Attempt     *Attempt     `json:"attempt,omitempty"`
	Burst       *Burst       `json:"burst,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Event       *Event       `json:"event,omitempty"`
}

// WriteJSONL writes h as JSON lines, one record a line, so a history can be
// streamed, grepped and checked again with `idemcheck check`.
func (h *History) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(historyLine{Run: &h.Run}); err != nil {
		return err
	}
	for i := range h.Intents {
		if err := enc.Encode(historyLine{Intent: &h.Intents[i]}); err != nil {
			return err
		}
	}
	for i := range h.Attempts {
		if err := enc.Encode(historyLine{Attempt: &h.Attempts[i]}); err != nil {
			return err
		}
	}
	for i := range h.Bursts {
		if err := enc.Encode(historyLine{Burst: &h.Bursts[i]}); err != nil {
			return err
		}
	}
	for i := range h.Observations {
		if err := enc.Encode(historyLine{Observation: &h.Observations[i]}); err != nil {
			return err
		}
	}
	for i := range h.Events {
		if err := enc.Encode(historyLine{Event: &h.Events[i]}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadHistories reads a JSONL file of one or more histories: each run
// record starts a new one (a suite writes one per endpoint). name is used
// in errors, which give the line number of the first bad record.
func ReadHistories(r io.Reader, name string) ([]*History, error) {
	var hs []*History
	var h *History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l historyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: not a history record: %v", name, n, err)
		}
		if l.Run != nil {
			h = &History{Run: *l.Run}
			hs = append(hs, h)
			continue
		}
		if h == nil {
			return nil, fmt.Errorf("%s:%d: a record before the first run record: is this a history written by --history?", name, n)
		}
		switch {
		case l.Intent != nil:
			h.Intents = append(h.Intents, *l.Intent)
		case l.Attempt != nil:
			h.Attempts = append(h.Attempts, *l.Attempt)
		case l.Burst != nil:
			h.Bursts = append(h.Bursts, *l.Burst)
		case l.Observation != nil:
			h.Observations = append(h.Observations, *l.Observation)
		case l.Event != nil:
			h.Events = append(h.Events, *l.Event)
		default:
			return nil, fmt.Errorf("%s:%d: a record needs one of run, intent, attempt, burst, observation, event", name, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, n+1, err)
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%s: no run record: is this a history written by --history?", name)
	}
	return hs, nil
}
