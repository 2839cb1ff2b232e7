package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// A soak with a settle bound (Soak.Settle) counts effects that land after
// the reply (a 202 Accepted, a background worker, a queue) as a
// certification does (settle.go), at the scale of a soak:
//
//   - Counted after the load, every spooled intent is counted in passes,
//     a batch at a time, each pass at least the quiet period (SettleQuiet)
//     after the one before it ended, until a pass gives every batch the
//     same digest as the pass before it (the sum of its counts and a hash
//     of its (intent, count) pairs), no intent answered with an accepted
//     status is still at zero (its effect is awaited) unless its status
//     monitor said its operation is over, and no monitor followed is still
//     pending (soakops.go), or the bound, from the load's end, leaves no
//     room for another pass. Each
//     pass's counts go to a file of their own, batch by batch, with what
//     the passes before saw of each intent (its first count, how often it
//     changed); the last pass's are recorded, with Observation.Settle
//     filled. Memory holds a digest and a file span per batch, not the
//     intents.
//   - Counted during the load, each intent is spooled with its count and
//     the time it was taken, and once the bound has passed since the
//     load's end every one is counted again and recorded as a recount
//     carrying the count it was judged by (Observation.Judged): an effect
//     more, and more than one, is a late duplicate.

// batchDigest is what one pass counted for one batch of intents, in a few
// bytes: the sum of its counts, a hash of its (intent, count) pairs in the
// batch's order, how many of its intents answered with an accepted status
// were still at zero with their operation not said to be over, and how
// many of its status monitors were still pending.
type batchDigest struct {
	sum      int64
	hash     uint64
	awaiting int
	monitors int
}

// digestOf is the digest of one batch's counts, ops[j] the status
// monitor of obs[j]'s intent (nil, or ops empty, for none).
func digestOf(obs []idemcheck.Observation, ops []*soakOp) batchDigest {
	var d batchDigest
	h := fnv.New64a()
	var buf []byte
	for j, o := range obs {
		var op *soakOp
		if j < len(ops) {
			op = ops[j]
		}
		d.sum += o.Effects
		buf = append(append(buf[:0], o.Intent...), 0)
		buf = append(strconv.AppendInt(buf, o.Effects, 10), 0)
		_, _ = h.Write(buf)
		if o.Accepted && o.Effects == 0 && !opDecided(op) {
			d.awaiting++
		}
		if !opOver(op) {
			d.monitors++
		}
	}
	d.hash = h.Sum64()
	return d
}

// moving is how many batches counted otherwise in cur than in prev: a
// different sum or hash, or a batch one of the passes lacks.
func moving(prev, cur []batchDigest) int {
	n := max(len(prev)-len(cur), 0)
	for i, d := range cur {
		if i >= len(prev) || d.sum != prev[i].sum || d.hash != prev[i].hash {
			n++
		}
	}
	return n
}

// awaiting is how many intents answered with an accepted status the
// digests found still at zero, and how many status monitors still
// pending.
func awaiting(ds []batchDigest) (effects, monitors int) {
	for _, d := range ds {
		effects += d.awaiting
		monitors += d.monitors
	}
	return effects, monitors
}

// passSettled reports whether a pass settles the counts: there was a pass
// before it, every batch counted the same in both, no accepted intent
// whose operation is not known to be over is still at zero, and no
// status monitor is still pending.
func passSettled(prev, cur []batchDigest) bool {
	effects, monitors := awaiting(cur)
	return prev != nil && moving(prev, cur) == 0 && effects == 0 && monitors == 0
}

// passRecord is one intent's count in a settle pass, as the pass's file
// holds it: the count, the intent's count in the first pass, how many
// passes changed it, whether this one did, and its status monitor as
// this pass left it.
type passRecord struct {
	O       idemcheck.Observation `json:"o"`
	First   int64                 `json:"first"`
	Changes int                   `json:"changes,omitempty"`
	Moved   bool                  `json:"moved,omitempty"`
	Op      *soakOp               `json:"op,omitempty"`
}

// settlePass is one pass over every spooled intent: its records in a
// file, batch after batch in the order they were counted, each batch's
// span of the file and its digest by the batch's number.
type settlePass struct {
	file    *os.File
	mu      sync.Mutex
	end     int64
	spans   [][2]int64 // offset and length
	digests []batchDigest
}

func newSettlePass() (*settlePass, error) {
	f, err := os.CreateTemp("", "idemcheck-soak-pass-")
	if err != nil {
		return nil, err
	}
	return &settlePass{file: f}, nil
}

// put writes batch i's records and keeps its digest.
func (p *settlePass) put(i int, d batchDigest, recs []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.file.WriteAt(recs, p.end); err != nil {
		return err
	}
	for len(p.spans) <= i {
		p.spans = append(p.spans, [2]int64{})
		p.digests = append(p.digests, batchDigest{})
	}
	p.spans[i], p.digests[i] = [2]int64{p.end, int64(len(recs))}, d
	p.end += int64(len(recs))
	return nil
}

// batch reads batch i's records back.
func (p *settlePass) batch(i int) ([]passRecord, error) {
	p.mu.Lock()
	if i >= len(p.spans) {
		p.mu.Unlock()
		return nil, fmt.Errorf("the pass before counted no batch %d", i)
	}
	span := p.spans[i]
	p.mu.Unlock()
	dec := json.NewDecoder(io.NewSectionReader(p.file, span[0], span[1]))
	var out []passRecord
	for dec.More() {
		var r passRecord
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("read the pass before: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// record records every count of the pass, with st (the pass's bound,
// quiet period, number and wait) and what the passes saw of each intent:
// settled when this pass did not change its count (the two counts at
// least the quiet period apart), its status monitor, if any, is not
// pending, and, answered with an accepted status, it has an effect or its
// monitor said the operation is over (done and short is a lost effect).
func (p *settlePass) record(rec recorder, st idemcheck.Settle) error {
	dec := json.NewDecoder(bufio.NewReader(io.NewSectionReader(p.file, 0, p.end)))
	for {
		var r passRecord
		if err := dec.Decode(&r); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the last pass: %w", err)
		}
		s := st
		s.First, s.Changes, s.Awaited = r.First, r.Changes, r.O.Accepted
		s.Settled = s.Polls >= 2 && !r.Moved && (!r.O.Accepted || r.O.Effects > 0 || opDecided(r.Op)) && opOver(r.Op)
		if r.Op != nil {
			s.Operations = []idemcheck.Operation{r.Op.Rec}
		}
		o := r.O
		o.Settle = &s
		rec.observation(o)
	}
}

func (p *settlePass) remove() {
	_ = p.file.Close()
	_ = os.Remove(p.file.Name())
}

// settleSpool counts every spooled intent after the load in passes until
// the counts settle or the bound, from loadEnd, leaves no room for one
// more pass a quiet period after the last, and records the last pass.
func (sk *Soak) settleSpool(ctx context.Context, s *session, rec recorder, spool *os.File, loadEnd time.Time) error {
	bound, quiet := sk.Settle, SettleQuiet(sk.Settle)
	var prev *settlePass
	defer func() {
		if prev != nil {
			prev.remove()
		}
	}()
	for passes := 1; ; passes++ {
		cur, err := sk.settlePass(ctx, s, spool, prev)
		if cur != nil && err != nil {
			cur.remove()
		}
		if err != nil {
			return err
		}
		var before []batchDigest
		if prev != nil {
			before = prev.digests
			prev.remove()
		}
		prev = cur
		if passSettled(before, cur.digests) || time.Since(loadEnd)+quiet > bound {
			return cur.record(rec, idemcheck.Settle{Bound: bound, Quiet: quiet, Polls: passes, Waited: time.Since(loadEnd)})
		}
		if err := sleep(ctx, quiet); err != nil {
			return err
		}
	}
}

// settlePass counts every spooled intent once, each batch beside what the
// pass before (prev, nil for the first) counted of it, after reading the
// status monitors not over yet (at most SettleParallel at once in the
// pass): a monitor that said done before the count is one whose effect
// the count must hold.
func (sk *Soak) settlePass(ctx context.Context, s *session, spool *os.File, prev *settlePass) (*settlePass, error) {
	cur, err := newSettlePass()
	if err != nil {
		return nil, err
	}
	sem := make(chan struct{}, SettleParallel)
	err = fromSpool(ctx, spool, func(i int, b []spoolEntry) error {
		var before []passRecord
		if prev != nil {
			var err error
			if before, err = prev.batch(i); err != nil {
				return err
			}
		}
		ops := batchOps(b, before)
		if err := s.readSoakOps(ctx, b, ops, sem); err != nil {
			return err
		}
		obs, err := countBatch(ctx, sk.Effects, b)
		if err != nil {
			return err
		}
		recs, err := carry(before, obs)
		if err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		for j := range recs {
			recs[j].Op = ops[j]
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return cur.put(i, digestOf(obs, ops), buf.Bytes())
	})
	if err == nil {
		err = ctx.Err()
	}
	return cur, err
}

// batchOps are the status monitors of batch b's intents, as the pass
// before left them (before, nil in the first pass), else as spooled: a
// copy, for this pass to update.
func batchOps(b []spoolEntry, before []passRecord) []*soakOp {
	ops := make([]*soakOp, len(b))
	for j, e := range b {
		src := e.op
		if j < len(before) && before[j].O.Intent == e.in.ID {
			src = before[j].Op
		}
		if src != nil {
			op := *src
			ops[j] = &op
		}
	}
	return ops
}

// carry makes a pass's records of one batch's counts, carrying what the
// pass before saw of each intent (before, nil in the first pass): its
// first count, and how many passes changed it, this one included.
func carry(before []passRecord, obs []idemcheck.Observation) ([]passRecord, error) {
	out := make([]passRecord, len(obs))
	for j, o := range obs {
		r := passRecord{O: o, First: o.Effects}
		if before != nil {
			if j >= len(before) || before[j].O.Intent != o.Intent {
				return nil, fmt.Errorf("the pass before counted the batch otherwise: intent %s is not where it was", o.Intent)
			}
			r.First, r.Changes = before[j].First, before[j].Changes
			if r.Moved = before[j].O.Effects != o.Effects; r.Moved {
				r.Changes++
			}
		}
		out[j] = r
	}
	return out, nil
}

// recountSpool counts every intent counted during the load again, once
// the settle bound has passed since loadEnd, and records each count as a
// recount with the count its intent was judged by. An intent's status
// monitor, if any, is read once, just before the count, and what it said
// goes with the recount (Settle.Operations, one read): an intent pending
// when judged is then told apart, its operation done, failed or not over
// yet.
func (sk *Soak) recountSpool(ctx context.Context, s *session, rec recorder, spool *os.File, loadEnd time.Time) error {
	if err := sleep(ctx, time.Until(loadEnd.Add(sk.Settle))); err != nil {
		return err
	}
	sem := make(chan struct{}, SettleParallel)
	return fromSpool(ctx, spool, func(_ int, b []spoolEntry) error {
		ops := batchOps(b, nil)
		if err := s.readSoakOps(ctx, b, ops, sem); err != nil {
			return err
		}
		obs, err := countBatch(ctx, sk.Effects, b)
		for j := range obs {
			judged := b[j].judged
			obs[j].Recount, obs[j].Judged, obs[j].JudgedAt = true, &judged, b[j].judgedAt
			if op := ops[j]; op != nil {
				obs[j].Settle = &idemcheck.Settle{Bound: sk.Settle, Polls: 1, Waited: time.Since(loadEnd), Settled: opOver(op),
					Operations: []idemcheck.Operation{op.Rec}}
			}
			rec.observation(obs[j])
		}
		return err
	})
}
