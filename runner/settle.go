package runner

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Effects that land after the reply (a 202 Accepted answered before a
// background worker or a queue wrote anything) are counted once they
// settle: with Runner.Settle set, each intent's count is polled until it
// has stayed the same for a quiet period (SettleQuiet), or the bound runs
// out, and the observation records what the polls did (idemcheck.Settle),
// so that `idemcheck check` reaches the same verdict offline. The intents
// of a check are settled together once its rounds are sent, each waiting
// on its own, at most SettleParallel effect queries in flight at once, so
// a check waits about as long as its slowest worker plus the quiet period,
// not once per intent.
//
// After the last check every counted intent is counted again (where
// Settle is set, until its count stays the same for twice the quiet
// period) and recorded as a recount: an effect that appeared after its
// intent was judged is a late duplicate.

// SettleParallel is how many effect queries run at once while effects
// settle (each intent waits on its own between its polls): few enough to
// keep the effect query's load on the target's database small.
const SettleParallel = 8

// SettleQuiet is how long an intent's count must stay the same to count as
// settled within bound: one second, or half the bound when that is
// shorter. An intent answered with an accepted status is not settled at
// zero (its first effect is awaited); a second effect written more than
// the quiet period after the first is left to the recount after the last
// check.
func SettleQuiet(bound time.Duration) time.Duration {
	return min(time.Second, bound/2)
}

// settlePoll is the interval between two counts of one intent while it
// settles: a fifth of the quiet period, at least 20 ms.
func settlePoll(quiet time.Duration) time.Duration { return max(quiet/5, 20*time.Millisecond) }

// toCount is an intent whose effects are still to be counted, with the keys
// its round sent; accepted says one of its attempts was answered with an
// accepted status, so its first effect is awaited (settle).
type toCount struct {
	in       idemcheck.Intent
	keys     []string
	accepted bool
	// ended is when the intent's round ended: an effect may land up to
	// Settle after it, so the recount is not taken before.
	ended time.Time
	// ops are the status monitors of its accepted attempts
	// (operations.go), read while it settles.
	ops []*operation
	// await is how many effects its settle waits for at least: one for
	// each key it was answered accepted under.
	await int
}

// count counts one intent's effects once, its queries scrubbed of the
// run's secrets, stamped with the time it was taken. With sem, the query
// holds one of its places while it runs.
func (s *session) count(ctx context.Context, c toCount, sem chan struct{}) (idemcheck.Observation, error) {
	if sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			return idemcheck.Observation{}, ctx.Err()
		}
	}
	o, err := s.Effects.CountKeys(ctx, c.in, c.keys)
	if err != nil {
		return o, err
	}
	o.At = time.Now().UTC()
	// A read-back's path may carry a secret of the suite.
	o.Query = s.scrub(o.Query)
	for i := range o.Keys {
		o.Keys[i].Query = s.scrub(o.Keys[i].Query)
	}
	return o, nil
}

// settle polls one intent's count until it stays the same for quiet or
// the run's Settle bound runs out. With await, a count under one effect
// for each key the intent was answered accepted under is never settled:
// an accepted operation has its effect still to come, a worker that
// failed once and is retried later than the quiet period (a queue's
// backoff) must not look like a lost effect, and neither must a second
// key's job that the queue runs more than the quiet period after the
// first's.
//
// notBefore, when set, holds the count open until then however quiet it
// is: the recount is taken only once every intent's Settle bound has
// passed since its round ended, the latest an effect was said to land.
func (s *session) settle(ctx context.Context, c toCount, quiet time.Duration, await bool, notBefore time.Time, sem chan struct{}) (idemcheck.Observation, error) {
	bound := s.Settle
	start := time.Now()
	ops := c.ops
	if !notBefore.IsZero() {
		ops = nil // a recount reads no monitor: they were read when the intent settled
	}
	// Every poll reads the monitors before it counts: a monitor that says
	// done was read before the count, so the count (a later read of the
	// same database) holds what the monitor saw. Counted first, a worker
	// that committed between the two reads would leave a count of none
	// beside a monitor that says done: a lost effect that is not.
	if err := s.readOperations(ctx, ops, sem); err != nil {
		return idemcheck.Observation{}, err
	}
	o, err := s.count(ctx, c, sem)
	if err != nil {
		return o, err
	}
	st := idemcheck.Settle{Bound: bound, Quiet: quiet, Polls: 1, First: o.Effects, Awaited: await}
	owed := int64(1)
	if await {
		owed, st.Await = int64(max(c.await, 1)), max(c.await, 1)
	}
	changed := start
	for {
		now := time.Now()
		if now.Sub(changed) >= quiet && (!await || o.Effects >= owed || operationsDecided(ops)) && operationsOver(ops) && !now.Before(notBefore) {
			st.Settled = true
			break
		}
		if now.Sub(start) >= bound {
			break
		}
		wait := min(settlePoll(quiet), bound-now.Sub(start))
		if left := quiet - now.Sub(changed); left > 0 {
			wait = min(wait, left)
		}
		if err := sleep(ctx, wait); err != nil {
			return o, err
		}
		if err := s.readOperations(ctx, ops, sem); err != nil {
			return o, err
		}
		next, err := s.count(ctx, c, sem)
		if err != nil {
			return o, err
		}
		st.Polls++
		if next.Effects != o.Effects {
			st.Changes++
			changed = time.Now()
		}
		o = next
	}
	st.Waited = time.Since(start)
	for _, op := range ops {
		st.Operations = append(st.Operations, op.rec)
	}
	o.Settle = &st
	return o, nil
}

// readOperations reads once every monitor of ops whose operation is not
// over yet.
func (s *session) readOperations(ctx context.Context, ops []*operation, sem chan struct{}) error {
	for _, op := range ops {
		if op.over() {
			continue
		}
		if err := s.readOperation(ctx, op, sem); err != nil {
			return err
		}
	}
	return nil
}

// operationsOver reports whether every operation of ops is over: it
// finished or failed, or has no monitor idemcheck could read.
func operationsOver(ops []*operation) bool {
	for _, op := range ops {
		if !op.over() {
			return false
		}
	}
	return true
}

// operationsDecided reports whether every operation of ops said it is
// over, done or failed: the API has said which effects are owed, so the
// count, once quiet, is settled however short (every one failed owes no
// effect; done and short is a lost effect), with no more waiting for an
// effect the API says is not coming.
func operationsDecided(ops []*operation) bool {
	if len(ops) == 0 {
		return false
	}
	for _, op := range ops {
		if op.rec.Over == "" {
			return false
		}
	}
	return true
}

// countAll counts every intent of cs, settled for quiet where Settle is
// set, all at once with at most SettleParallel queries in flight, and
// returns the observations in cs's order.
func (s *session) countAll(ctx context.Context, cs []toCount, quiet time.Duration, recount bool) ([]idemcheck.Observation, error) {
	out := make([]idemcheck.Observation, len(cs))
	errs := make([]error, len(cs))
	sem := make(chan struct{}, SettleParallel)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.Settle > 0 {
				var notBefore time.Time
				if recount {
					notBefore = c.ended.Add(s.Settle)
				}
				out[i], errs[i] = s.settle(ctx, c, quiet, c.accepted && !recount, notBefore, sem)
			} else {
				out[i], errs[i] = s.count(ctx, c, sem)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// observe counts the intent's effects at the end of its round; with
// Settle set, it only notes the intent, counted with its check's others
// once they settled (settlePending).
func (s *session) observe(ctx context.Context, in idemcheck.Intent) error {
	if s.Effects == nil {
		return nil
	}
	c := toCount{in: in, keys: slices.Clone(s.keys), accepted: s.accepted.Load(), ended: time.Now(), ops: s.takeOperations()}
	s.opsMu.Lock()
	c.await = max(len(s.acceptedKeys), 1)
	s.opsMu.Unlock()
	s.counted = append(s.counted, c)
	if s.Settle > 0 {
		s.pending = append(s.pending, c)
		return nil
	}
	o, err := s.count(ctx, c, nil)
	if err != nil {
		return err
	}
	s.rec.observation(o)
	return nil
}

// settlePending counts the intents noted since the last call once their
// effects settled, and records the observations.
func (s *session) settlePending(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	obs, err := s.countAll(ctx, s.pending, SettleQuiet(s.Settle), false)
	s.pending = nil
	if err != nil {
		return err
	}
	for _, o := range obs {
		s.rec.observation(o)
	}
	return nil
}

// recount counts every counted intent again after the last check, and
// records the counts as recounts. With Settle set, each is taken once the
// bound has passed since the intent's round ended (the latest its effects
// were said to land: a job retried with a backoff after its check's
// counts settled, on a busy machine or queue, lands inside it) and its
// count has stayed the same for twice the quiet period.
func (s *session) recount(ctx context.Context) error {
	if len(s.counted) == 0 {
		return nil
	}
	obs, err := s.countAll(ctx, s.counted, min(2*SettleQuiet(s.Settle), s.Settle), true)
	if err != nil {
		return err
	}
	for _, o := range obs {
		o.Recount = true
		s.rec.observation(o)
	}
	return nil
}
