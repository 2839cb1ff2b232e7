package runner

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
)

// Where effects land after the reply (Settle set: a background worker, a
// job queue), the target's database link carries more than the attempt's
// own writes while a fault is armed: the queue's polls and bookkeeping,
// the jobs of earlier intents. A fault on "the next effect write" would
// meet those, break work that is not the round's (a job's state cut under
// its worker strands it until the queue's rescuer runs, an hour later in
// River's defaults), and miss the window it was meant for. So there the
// database faults are armed carrying the intent's marks and meet only the
// writes of transactions that sent one of them (faults.Link.Arm): the
// handler's and the worker's alike, on whichever connection. The writes a
// clean attempt makes are counted the same way.

// minMark is the shortest value that marks an intent's writes: a shorter
// one (an amount, a flag) could stand in any statement.
const minMark = 8

// carrying is what the session's database faults are armed with: the
// current intent's marks where Settle is set, else nothing (every effect
// write counts, as a synchronous handler's writes are the only ones).
func (s *session) carrying() [][]byte {
	if s.Settle <= 0 || len(s.intents) == 0 {
		return nil
	}
	return s.marks(s.intents[len(s.intents)-1])
}

// marks are the byte strings in.'s writes carry: every key its round sent
// (as text, and a key that is a UUID also as its 16 bytes, which a driver
// sends for a uuid column's parameter in binary) and the values its effect
// query is counted by (a worker's effect write holds them, or the query
// could not find it).
func (s *session) marks(in idemcheck.Intent) [][]byte {
	var out [][]byte
	add := func(b []byte) {
		if len(b) < minMark {
			return
		}
		for _, m := range out {
			if string(m) == string(b) {
				return
			}
		}
		out = append(out, b)
	}
	keys := append([]string{in.Key}, s.keys...)
	for _, k := range keys {
		add([]byte(k))
		if u, err := uuid.Parse(k); err == nil {
			add(u[:])
		}
	}
	if s.Effects != nil && s.Effects.HTTP == nil {
		for _, k := range keys {
			one := in
			one.Key = k
			for _, t := range s.Effects.Args {
				add([]byte(t.Fill(one)))
			}
		}
	}
	return out
}

// armCarrying puts f on the target's database link carrying the current
// intent's marks (see carrying).
func (s *session) armCarrying(f faults.Fault) (func() faults.Landing, error) {
	return s.Powers.ArmDB(f, s.carrying()...)
}

// awaitOwed waits, where effects land after the reply (Settle) and the
// running round's intent was answered accepted, until its count holds
// the effects it is owed (one for each key it was accepted under), or the
// Settle bound passes (awaitLanded).
func (s *session) awaitOwed(ctx context.Context) error {
	if s.Settle <= 0 || s.Effects == nil || !s.accepted.Load() || len(s.intents) == 0 {
		return nil
	}
	c := toCount{in: s.intents[len(s.intents)-1], keys: slices.Clone(s.keys), accepted: true}
	s.opsMu.Lock()
	c.await = max(len(s.acceptedKeys), 1)
	s.opsMu.Unlock()
	return s.awaitLanded(ctx, []toCount{c})
}

// awaitLanded waits until every accepted intent of cs has the effects it
// is owed, each at most the Settle bound from now: its background work
// has then made its effect, and a kill now cannot strand that work
// instead of breaking what the round breaks (a queue gives the job of a
// worker killed mid-job back only once its rescuer finds it, an hour
// later in River's defaults). It records nothing: the intents are
// counted when their check's intents settle. It does not wait for a
// quiet period: a later effect is the settle's and the recount's to see.
func (s *session) awaitLanded(ctx context.Context, cs []toCount) error {
	if s.Settle <= 0 || s.Effects == nil {
		return nil
	}
	quiet := SettleQuiet(s.Settle)
	deadline := time.Now().Add(s.Settle)
	for _, c := range cs {
		if !c.accepted {
			continue
		}
		for {
			o, err := s.Effects.CountKeys(ctx, c.in, c.keys)
			if err != nil {
				return err
			}
			if o.Effects >= int64(max(c.await, 1)) || !time.Now().Before(deadline) {
				break
			}
			if err := sleep(ctx, settlePoll(quiet)); err != nil {
				return err
			}
		}
	}
	return nil
}
