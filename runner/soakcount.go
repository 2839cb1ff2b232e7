package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// A soak counts its intents' effects in batches (Effects.CountBatch),
// four batches at a time: after the load, from the intents it spooled to
// a file as they completed, so that memory stays flat however many there
// are; or while the load runs (CountDuring), a batch as intents complete.
// With a settle bound (Soak.Settle), the counting after the load is done
// in passes until the counts settle (soaksettle.go), and a soak that
// counts during the load spools each intent with its count, to count it
// again once the bound has passed.

// spoolEntry is one intent as the soak spools it: the intent, whether one
// of its attempts was answered with an accepted status, and, once counted
// during the load, the count it was judged by and when it was taken; op
// is its accepted attempt's status monitor, when the soak follows them
// (soakops.go).
type spoolEntry struct {
	in       idemcheck.Intent
	accepted bool
	judged   int64
	judgedAt time.Time
	op       *soakOp
}

// write writes the entry as one line of tab-separated fields: the
// intent's ID, key and number, 1 or 0 for accepted, the count and the
// time it was taken (Unix nanoseconds, 0 before it was counted), and,
// with a status monitor, a seventh: the monitor in JSON (which escapes
// every tab and newline).
func (e spoolEntry) write(w *bufio.Writer) {
	accepted, at := 0, int64(0)
	if e.accepted {
		accepted = 1
	}
	if !e.judgedAt.IsZero() {
		at = e.judgedAt.UnixNano()
	}
	fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d", e.in.ID, e.in.Key, e.in.Seq, accepted, e.judged, at)
	if e.op != nil {
		op, _ := json.Marshal(e.op)
		w.WriteByte('\t')
		w.Write(op)
	}
	w.WriteByte('\n')
}

// parseSpoolEntry reads a line write wrote.
func parseSpoolEntry(line string) (spoolEntry, bool) {
	f := strings.Split(line, "\t")
	var op *soakOp
	if len(f) == 7 {
		op = new(soakOp)
		if json.Unmarshal([]byte(f[6]), op) != nil {
			return spoolEntry{}, false
		}
		f = f[:6]
	}
	if len(f) != 6 {
		return spoolEntry{}, false
	}
	seq, err1 := strconv.Atoi(f[2])
	judged, err2 := strconv.ParseInt(f[4], 10, 64)
	at, err3 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return spoolEntry{}, false
	}
	e := spoolEntry{in: idemcheck.Intent{ID: f[0], Key: f[1], Seq: seq, Check: idemcheck.CheckSoak, Round: 1}, accepted: f[3] == "1", judged: judged, op: op}
	if at != 0 {
		e.judgedAt = time.Unix(0, at).UTC()
	}
	return e, true
}

// countBatch counts one batch of intents' effects, each count stamped
// with the time it was taken and whether its intent was accepted. On an
// error, the counts taken before it are returned with it.
func countBatch(ctx context.Context, e *Effects, b []spoolEntry) ([]idemcheck.Observation, error) {
	ins := make([]idemcheck.Intent, len(b))
	for i, d := range b {
		ins[i] = d.in
	}
	obs, err := e.CountBatch(ctx, ins)
	at := time.Now().UTC()
	for i := range obs {
		obs[i].At, obs[i].Accepted = at, b[i].accepted
	}
	return obs, err
}

// batchPool runs count on batches of intents, four at a time, each batch
// numbered in the order it was sent. It keeps the first error of a run
// not cancelled; the batches after it are counted still, as their
// intents' records are worth keeping.
type batchPool struct {
	ctx     context.Context
	count   func(i int, b []spoolEntry) error
	batches chan numberedBatch
	sent    int
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
}

type numberedBatch struct {
	i int
	b []spoolEntry
}

func newBatchPool(ctx context.Context, count func(i int, b []spoolEntry) error) *batchPool {
	p := &batchPool{ctx: ctx, count: count, batches: make(chan numberedBatch, 4)}
	for range 4 {
		p.wg.Go(func() {
			for nb := range p.batches {
				if err := p.count(nb.i, nb.b); err != nil && p.ctx.Err() == nil {
					p.errOnce.Do(func() { p.err = fmt.Errorf("count effects: %w", err) })
				}
			}
		})
	}
	return p
}

// send hands one batch to the pool. It is called from one goroutine.
func (p *batchPool) send(b []spoolEntry) {
	p.batches <- numberedBatch{p.sent, b}
	p.sent++
}

// close waits for the batches sent and returns the first error.
func (p *batchPool) close() error {
	close(p.batches)
	p.wg.Wait()
	return p.err
}

// during sends the intents to the pool as they come, a batch when
// EffectBatch have come or a tenth of a second has passed, until in is
// closed, then closes the pool.
func during(in <-chan spoolEntry, p *batchPool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var b []spoolEntry
	for {
		select {
		case d, ok := <-in:
			if !ok {
				if len(b) > 0 {
					p.send(b)
				}
				return p.close()
			}
			if b = append(b, d); len(b) == EffectBatch {
				p.send(b)
				b = nil
			}
		case <-tick.C:
			if len(b) > 0 {
				p.send(b)
				b = nil
			}
		}
	}
}

// fromSpool sends every intent of the spool to a new pool running count,
// in batches of EffectBatch, in the spool's order (so that the nth batch
// holds the same intents each time the spool is read), and waits for them.
// A cancelled run stops sending: its counts would fail anyway.
func fromSpool(ctx context.Context, spool *os.File, count func(i int, b []spoolEntry) error) error {
	p := newBatchPool(ctx, count)
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		_ = p.close()
		return err
	}
	sc := bufio.NewScanner(spool)
	var b []spoolEntry
	for sc.Scan() && ctx.Err() == nil {
		e, ok := parseSpoolEntry(sc.Text())
		if !ok {
			continue
		}
		if b = append(b, e); len(b) == EffectBatch {
			p.send(b)
			b = nil
		}
	}
	if len(b) > 0 && ctx.Err() == nil {
		p.send(b)
	}
	if err := p.close(); err != nil {
		return err
	}
	return sc.Err()
}

// spoolWriter writes entries to a spool from several goroutines.
type spoolWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (s *spoolWriter) write(es ...spoolEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range es {
		e.write(s.w)
	}
}

func (s *spoolWriter) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Flush()
}

// soakCounting is a soak's counting of its completed intents while the
// load runs: spooled to a file, or counted in batches (CountDuring).
type soakCounting struct {
	counts  chan spoolEntry // the completed intents, closed by wait
	spooled chan error      // the spooling's or counting's end
	spool   *os.File        // nil when nothing is spooled
	pool    *batchPool      // with CountDuring
}

// startCounting starts the counting of the intents sent to its counts.
// Completed intents are spooled to a file and counted once the load is
// over: counting during the load would take the database and the cores
// from the target being measured, and the file keeps memory flat. With
// CountDuring they are counted in batches as they complete, and, with
// Settle, spooled with their counts to be counted again. Without Effects
// they are only drained.
func (sk *Soak) startCounting(ctx context.Context, rec recorder) (*soakCounting, error) {
	c := &soakCounting{counts: make(chan spoolEntry, 1024), spooled: make(chan error, 1)}
	var judged *spoolWriter // the intents counted during the load, with their counts
	if sk.Effects != nil {
		if !sk.CountDuring || sk.Settle > 0 {
			spool, err := os.CreateTemp("", "idemcheck-soak-intents-")
			if err != nil {
				return nil, err
			}
			c.spool = spool
		}
		if sk.CountDuring {
			if c.spool != nil {
				judged = &spoolWriter{w: bufio.NewWriter(c.spool)}
			}
			c.pool = newBatchPool(ctx, func(_ int, b []spoolEntry) error {
				obs, err := countBatch(ctx, sk.Effects, b)
				for j, o := range obs {
					rec.observation(o)
					b[j].judged, b[j].judgedAt = o.Effects, o.At
				}
				if judged != nil {
					judged.write(b[:len(obs)]...)
				}
				return err
			})
		}
	}
	go func() {
		switch {
		case sk.Effects == nil:
			for range c.counts {
			}
			c.spooled <- nil
		case c.pool != nil:
			err := during(c.counts, c.pool)
			if err == nil && judged != nil {
				if err = judged.flush(); err != nil {
					err = fmt.Errorf("spool intents: %w", err)
				}
			}
			c.spooled <- err
		default:
			w := bufio.NewWriter(c.spool)
			for d := range c.counts {
				d.write(w)
			}
			c.spooled <- w.Flush()
		}
	}()
	return c, nil
}

// wait closes counts, once every intent is sent to it, and waits for the
// spooling, or the counting during the load, to end.
func (c *soakCounting) wait() error {
	close(c.counts)
	if err := <-c.spooled; err != nil {
		if c.pool != nil {
			return err
		}
		return fmt.Errorf("spool intents: %w", err)
	}
	return nil
}

// remove removes the spool, if any.
func (c *soakCounting) remove() {
	if c.spool != nil {
		c.spool.Close()
		os.Remove(c.spool.Name())
	}
}

// countAfterLoad counts what is left to count once the load has ended at
// loadEnd: the spooled intents, or, with Settle, their counts until they
// settle (settleSpool) or again once Settle has passed (recountSpool).
func (sk *Soak) countAfterLoad(ctx context.Context, s *session, rec recorder, spool *os.File, loadEnd time.Time) error {
	if sk.Effects == nil {
		return nil
	}
	switch {
	case sk.CountDuring && sk.Settle > 0:
		return sk.recountSpool(ctx, s, rec, spool, loadEnd)
	case sk.Settle > 0:
		return sk.settleSpool(ctx, s, rec, spool, loadEnd)
	case !sk.CountDuring:
		return fromSpool(ctx, spool, func(_ int, b []spoolEntry) error {
			obs, err := countBatch(ctx, sk.Effects, b)
			for _, o := range obs {
				rec.observation(o)
			}
			return err
		})
	}
	return nil
}
