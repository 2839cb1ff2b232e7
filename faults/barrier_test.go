package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// watchedPool is a target's connection pool of size conns through the
// watched proxy, warmed: every connection is open before the test starts,
// as a pool is after its first burst.
func (s *shop) watchedPool(t *testing.T, conns int32) *pgxpool.Pool {
	t.Helper()
	_, err := s.direct.Exec(context.Background(), "CREATE TABLE IF NOT EXISTS seen (k int)")
	require.NoError(t, err)
	addr, err := s.link.WatchedAddr()
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns, cfg.MinConns = conns, 0
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var held []*pgxpool.Conn
	for range conns {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Ping(ctx))
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	return pool
}

// sessions reads the database's sessions, as the harness does, on a pool
// of its own (never through the link).
func (s *shop) sessions(t *testing.T) func(ctx context.Context) (Sessions, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, s.dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return func(ctx context.Context) (Sessions, error) {
		var ss Sessions
		err := pool.QueryRow(ctx, SessionsQuery).Scan(&ss.Waiting, &ss.Working)
		return ss, err
	}
}

// checkThenInsert is the race: read whether key was seen, then record it.
// No sleep widens the window.
func checkThenInsert(ctx context.Context, pool *pgxpool.Pool, key int) error {
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM seen WHERE k = $1", key).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := pool.Exec(ctx, "INSERT INTO seen VALUES ($1)", key)
	return err
}

// seen counts the rows key left.
func (s *shop) seen(t *testing.T, key int) int {
	t.Helper()
	var n int
	require.NoError(t, s.direct.QueryRow(context.Background(), "SELECT count(*) FROM seen WHERE k = $1", key).Scan(&n))
	return n
}

// lockFirst is a correct handler: it locks the intent's row before it
// reads, then writes in the same transaction.
func lockFirst(ctx context.Context, pool *pgxpool.Pool, id int) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", id); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = $1", id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := tx.Exec(ctx, "INSERT INTO orders VALUES ($1)", id); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// burst runs handler n times at once and returns the first error.
func burst(n int, handler func() error) error {
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			errs <- handler()
		}()
	}
	close(start)
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// With the barrier every attempt of a check-then-insert burst reads before
// any writes: each inserts, in every round, at any load.
func TestBarrierForcesTheCheckThenInsertRace(t *testing.T) {
	s := newShop(t)
	const n = 6
	pool := s.watchedPool(t, n)
	for round := 1; round <= 3; round++ {
		release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, IdleSettle: testTimeout})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		err = burst(n, func() error { return checkThenInsert(ctx, pool, round) })
		cancel()
		sched := release()
		require.NoError(t, err)
		t.Logf("round %d: %s, held %v, released %v after arming", round, sched.Detail(), sched.Held[0].Held.Sub(sched.Armed), sched.Released.Sub(sched.Armed))
		assert.Equal(t, n, s.seen(t, round), "round %d: every attempt inserted", round)
		assert.Equal(t, idemcheck.ReleaseAllWrites, sched.Reason, "round %d: %s", round, sched.Detail())
		assert.Equal(t, n, sched.ReleasedTogether(), "round %d", round)
		for i, h := range sched.Held {
			assert.Equal(t, i+1, h.Order)
			assert.Equal(t, idemcheck.LandedAutocommitWrite, h.Kind)
			assert.Contains(t, h.SQL, "INSERT")
		}
	}
	// Disarmed, nothing is held: the same burst races by timing alone.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, burst(n, func() error { return checkThenInsert(ctx, pool, 9) }))
}

// A handler that locks before it writes makes the other attempts wait in
// the database, not at the link: the barrier sees them waiting on the lock
// and releases at once, with one write held.
func TestBarrierReleasesALockFirstHandler(t *testing.T) {
	s := newShop(t)
	const n = 6
	pool := s.watchedPool(t, n)
	for round := 1; round <= 3; round++ {
		// Quiet and idle settle as long as the bound: only the lock
		// waiters can end the hold, however slowly the probe answers on a
		// loaded machine.
		release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, IdleSettle: testTimeout})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		err = burst(n, func() error { return lockFirst(ctx, pool, 100+round) })
		cancel()
		sched := release()
		require.NoError(t, err)
		assert.Equal(t, 1, s.rows(t, int64(100+round)), "round %d", round)
		assert.Equal(t, idemcheck.ReleaseBlocked, sched.Reason, "round %d: %s (open %d, waiting %d)", round, sched.Detail(), sched.Open, sched.Waiting)
		assert.Equal(t, 1, sched.ReleasedTogether(), "round %d: %s", round, sched.Detail())
		assert.Equal(t, n-1, sched.Waiting, "round %d", round)
	}
}

// A burst larger than the pool: the attempts waiting for a pooled
// connection never reach the link. Once every connection the target has
// open is held, nothing else can reach a write, and the barrier releases
// the held ones together. Each statement takes a pooled connection of its
// own, so every attempt that read before the connections were held (all
// of them on a quiet machine, the held ones at least) inserts.
func TestBarrierWithABurstLargerThanThePool(t *testing.T) {
	s := newShop(t)
	const n, conns = 8, 2
	pool := s.watchedPool(t, conns)
	for round := 1; round <= 3; round++ {
		release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, IdleSettle: testTimeout})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		err = burst(n, func() error { return checkThenInsert(ctx, pool, 200+round) })
		cancel()
		sched := release()
		require.NoError(t, err)
		// The held attempts read before any write landed; the others
		// read too when their goroutines got there before the pool's
		// connections were held, which a busy machine may delay.
		assert.GreaterOrEqual(t, s.seen(t, 200+round), conns, "round %d: the held attempts read before any wrote", round)
		assert.Equal(t, idemcheck.ReleaseBlocked, sched.Reason, "round %d: %s (open %d, waiting %d)", round, sched.Detail(), sched.Open, sched.Waiting)
		assert.Equal(t, conns, sched.ReleasedTogether(), "round %d", round)
	}
}

// Without a lock-waiter probe, and with the other attempts blocked where
// the link cannot see (a lock in the target's memory), the quiet time
// releases the held write: no deadlock.
func TestBarrierReleasesWhenQuiet(t *testing.T) {
	s := newShop(t)
	const n = 4
	pool := s.watchedPool(t, n)
	var mu sync.Mutex
	release, err := s.link.Barrier(BarrierOptions{Attempts: n})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err = burst(n, func() error {
		mu.Lock()
		defer mu.Unlock()
		return checkThenInsert(ctx, pool, 300)
	})
	sched := release()
	require.NoError(t, err)
	assert.Equal(t, idemcheck.ReleaseQuiet, sched.Reason, sched.Detail())
	assert.Equal(t, 1, sched.ReleasedTogether())
	assert.Equal(t, 1, s.seen(t, 300))
}

// The other attempts wait in the target's memory (a mutex), where neither
// the link nor the database sees them: every session but the held one's is
// idle, and the barrier releases the held write at once, without waiting
// for the link to be quiet (as long as the bound here) or for the bound.
func TestBarrierReleasesWhenEverySessionIsIdle(t *testing.T) {
	s := newShop(t)
	const n = 4
	pool := s.watchedPool(t, n)
	for round := 1; round <= 3; round++ {
		var mu sync.Mutex
		release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		err = burst(n, func() error {
			mu.Lock()
			defer mu.Unlock()
			return checkThenInsert(ctx, pool, 400+round)
		})
		cancel()
		sched := release()
		require.NoError(t, err)
		assert.Equal(t, idemcheck.ReleaseIdle, sched.Reason, "round %d: %s", round, sched.Detail())
		assert.Equal(t, 1, sched.ReleasedTogether(), "round %d", round)
		assert.Equal(t, 1, s.seen(t, 400+round), "round %d", round)
	}
}

// A connection that has not sent a statement yet may be a session still
// starting, which pg_stat_activity does not show: while one is open the
// idle rule waits. Once it sends a statement, the held write goes, as idle.
func TestBarrierIdleWaitsForAStartingConnection(t *testing.T) {
	s := newShop(t)
	pool := s.watchedPool(t, 2)
	release, err := s.link.Barrier(BarrierOptions{Attempts: 2, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout})
	require.NoError(t, err)
	fresh := s.watchedConn(t) // connected, no statement sent
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- burst(2, func() error {
			mu.Lock()
			defer mu.Unlock()
			return checkThenInsert(ctx, pool, 500)
		})
	}()
	// Many idle settles: a barrier that ignored the starting connection
	// would have released by now and the burst would be over.
	select {
	case err := <-done:
		t.Fatalf("the burst ended (%v) while a connection had sent no statement: %s", err, release().Detail())
	case <-time.After(300 * time.Millisecond):
	}
	_, err = fresh.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	require.NoError(t, <-done)
	sched := release()
	assert.Equal(t, idemcheck.ReleaseIdle, sched.Reason, sched.Detail())
	assert.Equal(t, 1, sched.ReleasedTogether())
}

// A second barrier cannot be armed over the first; once released, the
// next one holds the connections' first writes again.
func TestBarrierOneAtATime(t *testing.T) {
	s := newShop(t)
	release, err := s.link.Barrier(BarrierOptions{Attempts: 1})
	require.NoError(t, err)
	_, err = s.link.Barrier(BarrierOptions{Attempts: 1})
	require.Error(t, err)
	conn := s.watchedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, insertTx(ctx, conn, 1))
	sched := release()
	// A transaction's first write is its INSERT; the COMMIT after it is
	// not held again.
	require.Len(t, sched.Held, 1, fmt.Sprint(sched.Held))
	assert.Equal(t, idemcheck.LandedWrite, sched.Held[0].Kind)
	assert.Equal(t, idemcheck.ReleaseAllWrites, sched.Reason)
	release, err = s.link.Barrier(BarrierOptions{Attempts: 1})
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "BEGIN; SELECT 1; COMMIT")
	require.NoError(t, err)
	sched = release()
	require.Len(t, sched.Held, 1)
	assert.Equal(t, idemcheck.LandedCommit, sched.Held[0].Kind)
	assert.Equal(t, 1, s.count(t))
}

// overwritingClaim is the last-writer-wins class: read whether key was
// seen; if not, claim it with an upsert that overwrites whoever claimed it
// before, read the claim back, and act (record key) only when the claim is
// still ours. Writes that land together leave one claim standing, the last
// one, so one attempt acts; writes that land one after another each find
// their own claim, and each acts.
func overwritingClaim(ctx context.Context, pool *pgxpool.Pool, key int, token string) error {
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM claims WHERE k = $1", key).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := pool.Exec(ctx, "INSERT INTO claims VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET token = excluded.token", key, token); err != nil {
		return err
	}
	var owner string
	if err := pool.QueryRow(ctx, "SELECT token FROM claims WHERE k = $1", key).Scan(&owner); err != nil {
		return err
	}
	if owner != token {
		return nil
	}
	_, err := pool.Exec(ctx, "INSERT INTO seen VALUES ($1)", key)
	return err
}

// In turn, the held writes go one at a time, the last held first, each
// once the database has answered the one before and the target has gone
// quiet: every attempt of an overwriting claim finds its own claim and
// acts, in every round.
func TestBarrierInTurn(t *testing.T) {
	s := newShop(t)
	const n = 4
	pool := s.watchedPool(t, n)
	_, err := s.direct.Exec(context.Background(), "CREATE TABLE claims (k int PRIMARY KEY, token text)")
	require.NoError(t, err)
	judged := 0
	for round := 1; judged < 3; round++ {
		require.LessOrEqual(t, round, 9, "three rounds in nine had every attempt at the database")
		release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, InTurn: true})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		var next sync.Mutex
		tokens := 0
		err = burst(n, func() error {
			next.Lock()
			tokens++
			token := fmt.Sprint(tokens)
			next.Unlock()
			return overwritingClaim(ctx, pool, 600+round, token)
		})
		cancel()
		sched := release()
		require.NoError(t, err)
		t.Logf("round %d: %s; released over %v", round, sched.Detail(), sched.Held[0].Released.Sub(sched.Released))
		assert.True(t, sched.InTurn)
		if sched.Reason == idemcheck.ReleaseIdle && len(sched.Held) < n {
			// An attempt a busy machine had not started yet left every
			// session that had idle: the barrier rightly went with what it
			// held, and, as the runner does, the round is sent again.
			continue
		}
		judged++
		assert.Equal(t, idemcheck.ReleaseAllWrites, sched.Reason, "round %d: %s", round, sched.Detail())
		assert.Equal(t, n, s.seen(t, 600+round), "round %d: every attempt found its own claim", round)
		require.Len(t, sched.Held, n)
		for i, h := range sched.Held {
			// The last held goes first.
			assert.Equal(t, n-i, h.Order, "round %d: write %d", round, i)
			if i > 0 {
				assert.False(t, h.Finished.IsZero(), "round %d: write %d finished before the next went", round, i)
				assert.Equal(t, TurnIdle, h.Next, "round %d: write %d", round, i)
				assert.True(t, sched.Held[i-1].Released.After(h.Finished), "round %d: write %d went after write %d finished", round, i-1, i)
			} else {
				assert.Empty(t, h.Next)
			}
		}
	}
}

// In turn, a handler that locks before it writes still has one write held
// (the others wait on the lock in the database) and is released at once.
func TestBarrierInTurnLockFirst(t *testing.T) {
	s := newShop(t)
	const n = 4
	pool := s.watchedPool(t, n)
	release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, IdleSettle: testTimeout, InTurn: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err = burst(n, func() error { return lockFirst(ctx, pool, 700) })
	sched := release()
	require.NoError(t, err)
	assert.Equal(t, 1, s.rows(t, 700))
	assert.Equal(t, idemcheck.ReleaseBlocked, sched.Reason, sched.Detail())
	assert.Equal(t, 1, sched.ReleasedTogether(), sched.Detail())
}

// In turn, the next write waits until the database has answered the one
// before: a write that takes the database 200 ms is answered at least
// that long after it was released, and the next goes after that.
func TestBarrierInTurnWaitsForTheAnswer(t *testing.T) {
	s := newShop(t)
	const n = 2
	pool := s.watchedPool(t, n)
	release, err := s.link.Barrier(BarrierOptions{Attempts: n, Sessions: s.sessions(t), MaxWait: testTimeout, Quiet: testTimeout, InTurn: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err = burst(n, func() error {
		_, err := pool.Exec(ctx, "INSERT INTO seen SELECT 800 FROM pg_sleep(0.2)")
		return err
	})
	sched := release()
	require.NoError(t, err)
	require.Len(t, sched.Held, n, sched.Detail())
	first := sched.Held[1] // the last held goes first
	require.Equal(t, 1, first.Order)
	require.False(t, first.Finished.IsZero(), "the first write's answer was seen")
	assert.GreaterOrEqual(t, first.Finished.Sub(first.Released), 200*time.Millisecond, "answered after the database's 200 ms")
	assert.False(t, sched.Held[0].Released.Before(first.Finished), "the second write went after the first was answered")
	assert.Equal(t, 2, s.seen(t, 800))
}
