package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// A write barrier schedules a race instead of hoping for one. While a burst
// of attempts runs, the database link holds each target connection's first
// write (an INSERT, UPDATE, DELETE or MERGE, in a transaction block or
// not, or a COMMIT, whichever comes first) until every attempt has reached
// its first write, then releases them all together. A handler that reads
// and then writes (check-then-insert) has then done every read of every
// attempt before any write reaches the database, whatever the width of its
// race window and whatever the load on the machine: the race is no longer
// a matter of timing.
//
// Not every attempt can reach a write while others are held, and the
// barrier must never stand in the way for long:
//
//   - a handler that locks before it writes (SELECT ... FOR UPDATE, an
//     advisory lock, a claim INSERT that waits on another's row) makes the
//     other attempts wait inside the database; the barrier counts the
//     database's sessions waiting on a lock (BarrierOptions.Sessions) and
//     releases at once when the held writes and those waiters account for
//     every attempt, or for every connection the target has open;
//   - a burst larger than the target's connection pool leaves attempts
//     waiting for a pooled connection, which never reach the link: when
//     every connection the target has open to the database is held (or
//     waits on a lock) and that stays so for a short settle time (twice
//     what the first held attempt took from its first statement to its
//     write, from 2 to 50 ms), nothing more can reach a write;
//   - when every session of the database is idle (waiting for its
//     client's next statement, as a held write's session is) or waits on a
//     lock, as read by a look that started an idle settle (five settle
//     times, from 10 ms to half the quiet time) after the last activity on
//     the link, no attempt that is not held is at the database: the others
//     wait elsewhere (a lock in the target's memory), or have not reached
//     the database yet and would take an idle pooled connection if they
//     had. A connection being opened (a cold pool filling) is a session
//     starting, not idle, and is waited for. This ends the hold of a burst
//     whose attempts cannot all reach a write long before the quiet time
//     or the bound would;
//   - anything else (no look at the sessions, a background job that keeps
//     a session working) shows as a quiet link: when no statement arrives
//     for BarrierQuiet (or ten settle times, if longer, up to 500 ms) the
//     held writes are released, and in every case they are released
//     within MaxWait of the first hold.
//
// A release never changes what the target does, only when its writes run;
// a barrier released early schedules fewer writes together, and the
// Schedule says how many.
//
// In turn (BarrierOptions.InTurn) the barrier holds the same writes by the
// same rules, and then releases them one at a time, in the reverse of the
// order they were held: the attempt whose write came first writes last,
// the interleaving a timed race almost never gives. Each goes once the
// database has answered the one before (its connection's answer, a
// PostgreSQL ReadyForQuery or a MySQL OK, ERR or result set, followed on
// the database side of the link) and the target has gone quiet
// after it: every session of the database idle or waiting on a lock, as
// read by a look that started an idle settle after the last activity on
// the link (the previous attempt has done what it does after its write),
// or no activity for the quiet time. A write that waits on a lock held by
// a write still held goes on as soon as the look shows it waiting; and
// each turn ends within MaxWait. Every attempt then writes over what the
// ones before it wrote and finished: a handler that overwrites (an upsert
// of its saved reply, a claim taken by last writer wins, a read-modify-
// write of a balance) shows it in every round.

// Release reasons of a Schedule: the root vocabulary's, as recorded in a
// burst's history.
const (
	ReleaseAllWrites  = idemcheck.ReleaseAllWrites
	ReleaseBlocked    = idemcheck.ReleaseBlocked
	ReleaseIdle       = idemcheck.ReleaseIdle
	ReleaseQuiet      = idemcheck.ReleaseQuiet
	ReleaseBound      = idemcheck.ReleaseBound
	ReleaseBurstEnded = idemcheck.ReleaseBurstEnded
)

// Defaults of a barrier's bounds.
const (
	// DefaultBarrierWait bounds a hold: the held writes are released at
	// most this long after the first was held.
	DefaultBarrierWait = time.Second
	// BarrierQuiet is the shortest quiet time after which the held writes
	// are released.
	BarrierQuiet = 100 * time.Millisecond
	// barrierSettle and maxSettle bound the settle time, maxQuiet the
	// quiet time (which grows with the settle time on a slow machine),
	// minIdleSettle the idle settle from below.
	barrierSettle = 2 * time.Millisecond
	maxSettle     = 50 * time.Millisecond
	maxQuiet      = 500 * time.Millisecond
	minIdleSettle = 10 * time.Millisecond
	// probeGap spaces lock-waiter probes.
	probeGap = 2 * time.Millisecond
)

// Sessions is what a look at the database's sessions (pg_stat_activity)
// saw, for a write barrier.
type Sessions struct {
	// Waiting counts the sessions that wait on a lock.
	Waiting int
	// Working counts the sessions that are neither waiting for their
	// client (idle, idle in a transaction, or between two messages of an
	// exchange: what the session of a held write looks like) nor waiting on
	// a lock: running a statement, or starting.
	Working int
}

// SessionsQuery reads Sessions from pg_stat_activity: the client
// sessions of the current database but the one running it. It reads
// nothing else and writes nothing. Sessions of other clients of the same
// database count too: a waiting one can only make a barrier release early,
// a working one only later.
const SessionsQuery = `SELECT
	count(*) FILTER (WHERE wait_event_type = 'Lock'),
	count(*) FILTER (WHERE wait_event_type IS DISTINCT FROM 'Lock' AND wait_event IS DISTINCT FROM 'ClientRead'
		AND state IS DISTINCT FROM 'idle' AND state IS DISTINCT FROM 'idle in transaction'
		AND state IS DISTINCT FROM 'idle in transaction (aborted)')
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`

// BarrierOptions configure a write barrier (Link.Barrier).
type BarrierOptions struct {
	// Attempts is how many attempts the burst sends.
	Attempts int
	// Sessions, when set, reads the database's sessions (SessionsQuery),
	// on a connection of its own, never through the link. Without it a
	// handler that locks before it writes, or attempts that wait in the
	// target's memory, are released by the quiet time.
	Sessions func(ctx context.Context) (Sessions, error)
	// MaxWait bounds the hold; 0 means DefaultBarrierWait.
	MaxWait time.Duration
	// Quiet, when positive, is the quiet time in place of the one the
	// barrier derives from the link's pace (BarrierQuiet to 500 ms): a
	// test of the other rules sets it long, so that a slow lock-waiter
	// probe on a loaded machine cannot end the hold by quiet first.
	Quiet time.Duration
	// IdleSettle, when positive, is the idle settle in place of the one
	// the barrier derives (10 ms to half the quiet time): a test of the
	// other rules sets it long, so that an attempt its goroutine has not
	// yet started on a loaded machine cannot end the hold as idle first.
	IdleSettle time.Duration
	// InTurn releases the held writes one at a time, in the reverse of the
	// order they were held, each once the one before has finished and the
	// target has gone quiet (see the package's comment on write barriers).
	InTurn bool
}

// HeldWrite is one statement the barrier held.
type HeldWrite struct {
	// Conn numbers the target's connection on the link, from 1.
	Conn int
	// SQL is the statement's text.
	SQL string
	// Kind is idemcheck.LandedCommit, idemcheck.LandedAutocommitWrite or
	// idemcheck.LandedWrite (a write inside a transaction block).
	Kind string
	// Held is when it was held.
	Held time.Time
	// Order is its place in the release, from 1 (0: its connection ended
	// while it was held, and it never reached the database).
	Order int
	// Released is when it was let go; Finished, in turn, when the database
	// had answered it (zero: not seen before the next write went, or the
	// last write, which nothing waits for).
	Released, Finished time.Time
	// Next says, in turn, why the next write went after this one: a Turn*
	// value ("" for the last).
	Next string
}

// Why, in turn, the next held write was released.
const (
	// TurnIdle: the write had finished, and then every session of the
	// database was idle or waited on a lock.
	TurnIdle = "idle"
	// TurnWaiting: the write waited on a lock (one a held write's
	// transaction holds, perhaps) and nothing else worked.
	TurnWaiting = "waiting"
	// TurnQuiet: the write had finished and nothing reached the link for
	// the quiet time.
	TurnQuiet = "quiet"
	// TurnBound: the bounded wait of a turn passed.
	TurnBound = "bound"
	// TurnBurstEnded: the burst ended; the rest went together.
	TurnBurstEnded = "burst-ended"
)

// Schedule is what a barrier did.
type Schedule struct {
	Attempts int
	// Held are the statements held, in the order they were held.
	Held []HeldWrite
	// Armed and Released are when the barrier was armed and when it
	// released the held statements.
	Armed, Released time.Time
	// Reason is why they were released: ReleaseAllWrites, ...
	Reason string
	// Waiting is how many sessions waited on a lock at the release (-1:
	// not known), Open how many connections the target had open through
	// the link.
	Waiting, Open int
	// InTurn: the held writes were released one at a time, in the order
	// of their Order (see BarrierOptions.InTurn).
	InTurn bool
}

// ReleasedTogether reports how many held writes were released together
// (one at a time, when InTurn).
func (s Schedule) ReleasedTogether() int {
	n := 0
	for _, h := range s.Held {
		if h.Order > 0 {
			n++
		}
	}
	return n
}

// Detail says in a sentence why the writes were released.
func (s Schedule) Detail() string {
	d := s.detail()
	if s.InTurn {
		d = strings.Replace(d, "released together", "released one at a time, the last held first", 1)
		if s.ReleasedTogether() > 1 {
			d += ", each once the database had answered the one before and the target had gone quiet"
		}
	}
	return d
}

func (s Schedule) detail() string {
	n := s.ReleasedTogether()
	w := ""
	if s.Waiting > 0 {
		w = fmt.Sprintf(", %d waiting on a lock in the database", s.Waiting)
	}
	switch s.Reason {
	case ReleaseAllWrites:
		return fmt.Sprintf("every one of the %d attempts had reached its first write; the %d held writes were released together", s.Attempts, n)
	case ReleaseBlocked:
		return fmt.Sprintf("%d writes held%s, with %d connections to the database open: no other attempt could reach a write, so they were released together", n, w, s.Open)
	case ReleaseIdle:
		return fmt.Sprintf("%d writes held%s; every other session of the database was idle, waiting for its client, so no other attempt was at the database (they waited elsewhere, or had not reached it yet), and the held writes were released together", n, w)
	case ReleaseQuiet:
		return fmt.Sprintf("%d writes held%s; no other statement reached the database link for a while (the other attempts waited elsewhere, a lock in the target's memory perhaps), so they were released together", n, w)
	case ReleaseBound:
		return fmt.Sprintf("%d writes held%s; released together when the bounded wait passed", n, w)
	}
	return fmt.Sprintf("%d writes held; the burst ended", n)
}

// barrier is one armed write barrier on a watched proxy.
type barrier struct {
	opts    BarrierOptions
	toxic   *watchToxic
	maxWait time.Duration

	mu        sync.Mutex
	armed     time.Time
	first     time.Time // first statement after arming
	firstHold time.Time
	last      time.Time // last activity: a statement, a connection opened or closed, a hold
	holds     []*barrierHold
	released  bool
	sched     Schedule

	wake     chan struct{}
	stop     chan struct{}
	finished chan struct{}
}

// barrierHold is a write the barrier holds: a held statement, which
// places it on its connection (conn and prior tell when the database has
// answered it: dbConn.finished), and what the schedule says of it.
type barrierHold struct {
	h *heldStatement
	w HeldWrite
}

// Barrier arms a write barrier on the watched proxy (see the package's
// comment on write barriers) until the returned release is called, which
// releases whatever is still held and returns the Schedule. Only one
// barrier is armed at a time.
func (l *Link) Barrier(o BarrierOptions) (release func() Schedule, err error) {
	if _, err := l.WatchedAddr(); err != nil {
		return nil, err
	}
	if o.Attempts < 1 {
		return nil, fmt.Errorf("faults: a barrier needs the number of attempts")
	}
	b := &barrier{opts: o, toxic: l.watch, maxWait: o.MaxWait,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), finished: make(chan struct{})}
	if b.maxWait <= 0 {
		b.maxWait = DefaultBarrierWait
	}
	b.armed = time.Now()
	b.last = b.armed
	if !l.watch.barrier.CompareAndSwap(nil, b) {
		return nil, fmt.Errorf("faults: a barrier is already armed")
	}
	go b.run()
	var once sync.Once
	return func() Schedule {
		once.Do(func() {
			close(b.stop)
			<-b.finished
			l.watch.barrier.CompareAndSwap(b, nil)
		})
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sched
	}, nil
}

// touch records activity on the link.
func (b *barrier) touch() {
	now := time.Now()
	b.mu.Lock()
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	b.mu.Unlock()
	b.poke()
}

func (b *barrier) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// hold takes conn's write ev, unless the barrier has released already.
func (b *barrier) hold(conn int, pc *dbConn, ev wireEvent) *heldStatement {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released {
		return nil
	}
	h := holdStatement(Landing{Kind: ev.writeKind, SQL: ev.sql, Time: now}, pc, ev.prior, b.toxic.hub.done)
	h.delivered = true // decided by the barrier, never reported on Held
	// The barrier waits for its holder to act (turnWait), whatever ends
	// meanwhile: a write forwarded as its connection ends was released.
	h.ends = [2]<-chan struct{}{}
	b.holds = append(b.holds, &barrierHold{h: h, w: HeldWrite{Conn: conn, SQL: ev.sql, Kind: ev.writeKind, Held: now}})
	if b.firstHold.IsZero() {
		b.firstHold = now
	}
	b.last = now
	b.poke()
	return h
}

// liveHolds counts the holds whose connection has not ended.
func (b *barrier) liveHolds() int {
	n := 0
	for _, bh := range b.holds {
		if bh.h.state() == outcomeHeld {
			n++
		}
	}
	return n
}

type probeResult struct {
	start time.Time
	s     Sessions
	err   error
}

// run decides when to release.
func (b *barrier) run() {
	defer close(b.finished)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	probes := make(chan probeResult, 1)
	probing := false
	var lastProbe time.Time
	var valid *probeResult // the latest probe, if it started after the last activity
	for {
		now := time.Now()
		s := b.look()
		if valid != nil && !valid.start.After(s.last) {
			valid = nil
		}
		s.read(b.opts.Sessions == nil, valid)
		next := time.Hour
		if s.held > 0 {
			w := b.waits(s)
			reason, wake := b.decide(now, s, w, valid)
			if reason != "" {
				if b.opts.InTurn {
					if probing {
						<-probes
					}
					b.releaseInTurn(reason, s.waiting, s.open, w.quiet, w.idleSettle)
					return
				}
				b.release(reason, s.waiting, s.open)
				if probing {
					<-probes
				}
				return
			}
			next = wake
			// A probe is stale once something happened after it started, and
			// a session that has just sent the statement that will wait on a
			// lock may not wait yet when a probe reads: so probes go on,
			// probeGap apart, until a release.
			if b.opts.Sessions != nil && !probing {
				if wait := lastProbe.Add(probeGap).Sub(now); wait > 0 {
					next = min(next, wait)
				} else {
					probing, lastProbe = true, now
					go b.probe(probes, now)
				}
			}
		}
		timer.Reset(max(next, 50*time.Microsecond))
		select {
		case <-b.stop:
			b.release(ReleaseBurstEnded, s.waiting, int(b.toxic.live.Load()))
			if probing {
				<-probes
			}
			return
		case <-b.wake:
		case <-timer.C:
		case p := <-probes:
			probing = false
			valid = &p
		}
	}
}

// barrierState is what one turn of the barrier's loop sees: the holds and
// connections now, the times of the last activity, and what the latest
// valid probe read of the sessions (-1 when unknown).
type barrierState struct {
	held, open             int
	starting               int64
	last, first, firstHold time.Time
	waiting, working       int
}

// look reads the barrier's state under its lock.
func (b *barrier) look() barrierState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return barrierState{
		held: b.liveHolds(), open: int(b.toxic.live.Load()), starting: b.toxic.starting.Load(),
		last: b.last, first: b.first, firstHold: b.firstHold,
	}
}

// read fills in the sessions waiting and working: none when the barrier
// reads no sessions, else those of a valid probe that succeeded, else
// unknown.
func (s *barrierState) read(noSessions bool, valid *probeResult) {
	s.waiting, s.working = -1, -1
	switch {
	case noSessions:
		s.waiting = 0
	case valid != nil && valid.err == nil:
		s.waiting, s.working = valid.s.Waiting, valid.s.Working
	}
}

// barrierWaits are how long the rules wait after the last activity.
type barrierWaits struct {
	settle, quiet, idleSettle time.Duration
}

// waits scales the barrier's waits to the burst: a burst whose first write
// came late after its first statement gets a longer settle, and the quiet
// and idle times grow with it, within their bounds.
func (b *barrier) waits(s barrierState) barrierWaits {
	settle := barrierSettle
	if !s.first.IsZero() {
		settle = min(max(settle, 2*s.firstHold.Sub(s.first)), maxSettle)
	}
	quiet := min(max(BarrierQuiet, 10*settle), maxQuiet, b.maxWait)
	if b.opts.Quiet > 0 {
		quiet = min(b.opts.Quiet, b.maxWait)
	}
	idleSettle := min(max(minIdleSettle, 5*settle), max(quiet/2, minIdleSettle))
	if b.opts.IdleSettle > 0 {
		idleSettle = b.opts.IdleSettle
	}
	return barrierWaits{settle: settle, quiet: quiet, idleSettle: idleSettle}
}

// decide returns why the held writes go now, or "" and how long until a
// rule may next hold (a probe's result wakes the loop by itself).
func (b *barrier) decide(now time.Time, s barrierState, w barrierWaits, valid *probeResult) (reason string, next time.Duration) {
	// Idle: no session works, as read by a probe that started
	// the idle settle after the last activity, so that a statement
	// forwarded just before has had time to reach its session.
	// A connection that has not sent a statement yet may be a
	// session still starting, which pg_stat_activity may not show.
	idle := s.working == 0 && s.starting == 0 && !valid.start.Before(s.last.Add(w.idleSettle))
	// Blocked: every attempt, or every connection the target has
	// open, is held or waits on a lock, as read by a probe that
	// started after the last activity. Then only a connection
	// being opened could still come: the settle time is for it.
	blocked := s.waiting >= 0 && (s.held+s.waiting >= b.opts.Attempts || s.held+s.waiting >= s.open)
	// Under heavy load a probe can take longer than the quiet time:
	// the quiet rule waits for one that started after the last
	// activity, so a blocked burst is told apart from a quiet one,
	// but not past twice the quiet time.
	probed := b.opts.Sessions == nil || valid != nil || now.Sub(s.last) >= 2*w.quiet
	switch {
	case s.held >= b.opts.Attempts:
		return ReleaseAllWrites, 0
	case s.waiting >= 0 && s.held+s.waiting >= b.opts.Attempts:
		return ReleaseBlocked, 0
	case blocked && now.Sub(s.last) >= w.settle:
		return ReleaseBlocked, 0
	case idle:
		return ReleaseIdle, 0
	case probed && now.Sub(s.last) >= w.quiet:
		return ReleaseQuiet, 0
	case now.Sub(s.firstHold) >= b.maxWait:
		return ReleaseBound, 0
	}
	next = s.firstHold.Add(b.maxWait).Sub(now)
	for _, at := range []time.Time{s.last.Add(w.quiet), s.last.Add(2 * w.quiet)} {
		if at.After(now) {
			next = min(next, at.Sub(now))
		}
	}
	if blocked && s.last.Add(w.settle).After(now) {
		next = min(next, s.last.Add(w.settle).Sub(now))
	}
	return "", next
}

func (b *barrier) probe(out chan<- probeResult, start time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := b.opts.Sessions(ctx)
	out <- probeResult{start: start, s: s, err: err}
}

// release lets every held write go, in the order they were held, and
// records the schedule. The decisions go out first and are waited for
// after, so the writes leave together.
func (b *barrier) release(reason string, waiting, open int) {
	b.mu.Lock()
	b.released = true
	holds := b.holds
	b.mu.Unlock()
	for _, bh := range holds {
		bh.h.offer(outcomeReleased)
	}
	order := 0
	sched := Schedule{Attempts: b.opts.Attempts, Armed: b.armed, Released: time.Now(), Reason: reason, Waiting: waiting, Open: open}
	for _, bh := range holds {
		w := bh.w
		// Held still after turnWait: the toxic was interrupted and not run
		// again (its proxy is closing), and the statement goes nowhere.
		if bh.h.wait(turnWait) == outcomeReleased {
			order++
			w.Order, w.Released = order, sched.Released
		}
		sched.Held = append(sched.Held, w)
	}
	b.mu.Lock()
	b.sched = sched
	b.mu.Unlock()
}

// kindOfWrite is a held write's kind, for the history.
func kindOfWrite(c sqlClass, inBlock bool) string {
	switch {
	case c == sqlCommit || c == sqlChain:
		return idemcheck.LandedCommit
	case !inBlock:
		return idemcheck.LandedAutocommitWrite
	}
	return idemcheck.LandedWrite
}

// releaseInTurn lets the held writes go one at a time, the last held
// first, each once the one before has had its turn (turn), and records
// the schedule.
func (b *barrier) releaseInTurn(reason string, waiting, open int, quiet, idleSettle time.Duration) {
	b.mu.Lock()
	b.released = true
	holds := b.holds
	b.mu.Unlock()
	sched := Schedule{Attempts: b.opts.Attempts, Armed: b.armed, Released: time.Now(), Reason: reason, Waiting: waiting, Open: open, InTurn: true}
	ws := make([]HeldWrite, len(holds))
	order, stopped := 0, false
	var prev *HeldWrite
	for i := len(holds) - 1; i >= 0; i-- {
		bh := holds[i]
		w := bh.w
		if prev != nil && !stopped {
			prev.Finished, prev.Next = b.turn(holds[i+1], quiet, idleSettle)
			stopped = prev.Next == TurnBurstEnded
		}
		w.Released = time.Now()
		// Held still after turnWait: the toxic was interrupted and not run
		// again (its proxy is closing), and the statement goes nowhere.
		o := bh.h.decide(outcomeReleased, turnWait)
		ws[i] = w
		if o == outcomeReleased {
			order++
			ws[i].Order = order
			prev = &ws[i]
		} else {
			ws[i].Released = time.Time{}
		}
	}
	// The schedule lists the writes in the order they were held.
	sched.Held = ws
	b.mu.Lock()
	b.sched = sched
	b.mu.Unlock()
}

// turn waits until the write of bh, just released, has had its turn: the
// database has answered it and the target has gone quiet after it (the
// rules are in the package's comment on write barriers). It returns when
// the write finished (zero if that was not seen) and why the turn ended.
func (b *barrier) turn(bh *barrierHold, quiet, idleSettle time.Duration) (finished time.Time, why string) {
	start := time.Now()
	b.mu.Lock()
	b.last = start // the release is activity: the look must start after it
	b.mu.Unlock()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	probes := make(chan probeResult, 1)
	probing := false
	defer func() {
		if probing {
			<-probes
		}
	}()
	var lastProbe time.Time
	var valid *probeResult
	for {
		now := time.Now()
		if finished.IsZero() && bh.h.conn.finished(bh.h.prior) {
			finished = now
		}
		b.mu.Lock()
		last := b.last
		b.mu.Unlock()
		if valid != nil && !valid.start.After(last) {
			valid = nil
		}
		// A look that started an idle settle after the last activity and
		// saw no session working: the write's attempt is done with the
		// database, or waits on a lock.
		quietLook := valid != nil && valid.err == nil && valid.s.Working == 0 && b.toxic.starting.Load() == 0 &&
			!valid.start.Before(last.Add(idleSettle))
		switch {
		case quietLook && !finished.IsZero():
			return finished, TurnIdle
		case quietLook && valid.s.Waiting > 0:
			return finished, TurnWaiting
		case !finished.IsZero() && now.Sub(last) >= quiet:
			return finished, TurnQuiet
		case now.Sub(start) >= b.maxWait:
			return finished, TurnBound
		}
		next := start.Add(b.maxWait).Sub(now)
		if at := last.Add(quiet); at.After(now) {
			next = min(next, at.Sub(now))
		}
		if b.opts.Sessions != nil && !probing {
			from := last.Add(idleSettle)
			if at := lastProbe.Add(probeGap); at.After(from) {
				from = at
			}
			if wait := from.Sub(now); wait > 0 {
				next = min(next, wait)
			} else {
				probing, lastProbe = true, now
				go b.probe(probes, now)
			}
		}
		timer.Reset(max(next, 50*time.Microsecond))
		select {
		case <-b.stop:
			return finished, TurnBurstEnded
		case <-b.wake:
		case <-timer.C:
		case p := <-probes:
			probing = false
			valid = &p
		}
	}
}
