package faults

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// autocommitModes are the two ways pgx sends a statement with arguments
// outside a transaction: one simple Query with the arguments spliced in
// (the write commits as the Query ends), and the extended protocol (Parse,
// Bind, Execute, then the Sync that commits it).
var autocommitModes = []struct {
	name string
	mode pgx.QueryExecMode
}{
	{"simple protocol", pgx.QueryExecModeSimpleProtocol},
	{"extended protocol", pgx.QueryExecModeCacheStatement},
}

// autocommit inserts a fresh id with one statement outside any transaction,
// as node-pg's pool.query or Django's autocommit do.
func (s *shop) autocommit(ctx context.Context, conn *pgx.Conn) (int64, error) {
	id := s.ids.Add(1)
	_, err := conn.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
	return id, err
}

// db-cut with its default match lands on an autocommitted INSERT: the
// client gets a connection error, the row is absent, and the landing says
// it was an autocommitted write. Through a clean link the same statement
// commits.
func TestDBCutLandsOnAutocommitWrite(t *testing.T) {
	for _, m := range autocommitModes {
		t.Run(m.name, func(t *testing.T) {
			s := newShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			id, err := s.autocommit(ctx, s.connect(t, None, m.mode))
			require.NoError(t, err, "through the clean link")
			assert.Equal(t, 1, s.rows(t, id))

			cut := DBCut("", 0)
			_, acted := s.link.Landing(cut)
			assert.False(t, acted, "nothing went through yet")
			conn := s.connect(t, cut, m.mode)
			_, acted = s.link.Landing(cut)
			assert.False(t, acted, "connecting is not a write")
			id, err = s.autocommit(ctx, conn)
			require.Error(t, err, "through db-cut")
			assert.Equal(t, 0, s.rows(t, id), "row committed through db-cut")
			s.rolledBack(t, id)
			l, acted := s.link.Landing(cut)
			require.True(t, acted)
			assert.Equal(t, idemcheck.LandedAutocommitWrite, l.Kind)
			assert.Contains(t, l.SQL, "INSERT INTO orders VALUES")
			assert.Equal(t, 1, l.Match)
			assert.Equal(t, cut, l.Fault)
			assert.False(t, l.Time.IsZero())
			assert.Equal(t, 1, s.link.Matches(cut))
		})
	}
}

// db-hold with its default match holds an autocommitted INSERT before it
// commits: the client waits and the row is invisible; Release commits it,
// Cut drops it.
func TestDBHoldLandsOnAutocommitWrite(t *testing.T) {
	for _, m := range autocommitModes {
		for _, release := range []bool{true, false} {
			name := m.name + ", cut"
			if release {
				name = m.name + ", release"
			}
			t.Run(name, func(t *testing.T) {
				s := newShop(t)
				conn := s.connect(t, DBHold("", 0), m.mode)
				type result struct {
					id  int64
					err error
				}
				done := make(chan result, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
					defer cancel()
					id, err := s.autocommit(ctx, conn)
					done <- result{id, err}
				}()
				ev := held(t, s.link)
				assert.Equal(t, idemcheck.LandedAutocommitWrite, ev.Landing)
				assert.Contains(t, ev.SQL, "INSERT INTO orders VALUES")
				assert.Equal(t, 1, ev.Match)
				select {
				case r := <-done:
					t.Fatalf("the INSERT returned (%v) while it was held", r.err)
				default:
				}
				assert.Equal(t, 0, s.count(t), "row visible while held")
				var r result
				if release {
					require.NoError(t, ev.Release())
					r = <-done
					require.NoError(t, r.err)
					assert.Equal(t, 1, s.rows(t, r.id), "row after Release")
					return
				}
				require.NoError(t, ev.Cut())
				r = <-done
				require.Error(t, r.err)
				assert.Equal(t, 0, s.rows(t, r.id), "row after Cut")
				s.rolledBack(t, r.id)
			})
		}
	}
}

// Inside a transaction the INSERT is not the effect write: it passes, in
// either protocol, and the COMMIT is held, with the landing kind commit.
func TestDBHoldPassesWritesInsideATransaction(t *testing.T) {
	for _, m := range autocommitModes {
		t.Run(m.name, func(t *testing.T) {
			s := newShop(t)
			f := DBHold("", 0)
			conn := s.connect(t, f, m.mode)
			// s.insert returns only once the INSERT inside the transaction
			// has been answered: it was not held.
			tx, id := s.insert(t, conn)
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				errc <- tx.Commit(ctx)
			}()
			ev := held(t, s.link)
			assert.Equal(t, idemcheck.LandedCommit, ev.Landing)
			assert.Equal(t, "commit", ev.SQL)
			assert.Equal(t, 0, s.rows(t, id))
			require.NoError(t, ev.Release())
			require.NoError(t, waitErr(t, errc))
			assert.Equal(t, 1, s.rows(t, id))
		})
	}
}

// db-cut on a transaction lands on its COMMIT and says so.
func TestDBCutReportsCommitLanding(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cut := DBCut("", 0)
	tx, id := s.insert(t, s.connect(t, cut, pgx.QueryExecModeCacheStatement))
	require.Error(t, tx.Commit(ctx))
	assert.Equal(t, 0, s.rows(t, id))
	l, acted := s.link.Landing(cut)
	require.True(t, acted)
	assert.Equal(t, idemcheck.LandedCommit, l.Kind)
	assert.Equal(t, "commit", l.SQL)
}

// nth counts effect writes, autocommitted and committed alike, the way a
// handler that claims a key with one INSERT and then commits its work
// sends them: the 2nd is the work's COMMIT.
func TestDBCutNthCountsEffectWrites(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cut := DBCut("", 2)
	conn := s.connect(t, cut, pgx.QueryExecModeCacheStatement)
	claim, err := s.autocommit(ctx, conn)
	require.NoError(t, err, "the 1st effect write passes")
	tx, work := s.insert(t, conn)
	require.Error(t, tx.Commit(ctx), "the 2nd is cut")
	assert.Equal(t, 1, s.rows(t, claim))
	assert.Equal(t, 0, s.rows(t, work))
	l, acted := s.link.Landing(cut)
	require.True(t, acted)
	assert.Equal(t, idemcheck.LandedCommit, l.Kind)
	assert.Equal(t, 2, l.Match)
}

// An explicit match acts exactly as before the effect write existed:
// match=CommitPattern lets an autocommitted INSERT through and cuts the
// COMMIT; a match on INSERT cuts the INSERT itself, at its Execute, inside
// a transaction too.
func TestDBCutExplicitMatch(t *testing.T) {
	t.Run("COMMIT only", func(t *testing.T) {
		s := newShop(t)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		cut := DBCut(CommitPattern, 1)
		conn := s.connect(t, cut, pgx.QueryExecModeCacheStatement)
		id, err := s.autocommit(ctx, conn)
		require.NoError(t, err, "an autocommitted INSERT is not a COMMIT")
		assert.Equal(t, 1, s.rows(t, id))
		assert.Equal(t, 0, s.link.Matches(cut))
		tx, id := s.insert(t, conn)
		require.Error(t, tx.Commit(ctx))
		assert.Equal(t, 0, s.rows(t, id))
		l, acted := s.link.Landing(cut)
		require.True(t, acted)
		assert.Equal(t, idemcheck.LandedCommit, l.Kind)
	})
	t.Run("INSERT inside a transaction", func(t *testing.T) {
		s := newShop(t)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		cut := DBCut(`(?i)^\s*insert`, 1)
		conn := s.connect(t, cut, pgx.QueryExecModeCacheStatement)
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "INSERT INTO orders VALUES (1)")
		require.Error(t, err, "the INSERT itself is cut")
		assert.Equal(t, 0, s.count(t))
		l, acted := s.link.Landing(cut)
		require.True(t, acted)
		assert.Equal(t, LandedStatement, l.Kind, "a write inside a block is not an effect write")
		assert.Equal(t, "INSERT INTO orders VALUES (1)", l.SQL)
	})
}

// On the watched proxy, disarm reports where the armed fault landed, and
// that it did not land when the target sent no effect write; a SELECT is
// not one.
func TestArmReportsLanding(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := s.watchedConn(t)

	disarm, err := s.link.Arm(DBCut("", 1))
	require.NoError(t, err)
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(new(int)))
	assert.False(t, disarm().Acted(), "a SELECT is no effect write")
	assert.False(t, disarm().Acted(), "disarm again")

	disarm, err = s.link.Arm(DBCut("", 1))
	require.NoError(t, err)
	_, err = c.Exec(ctx, "INSERT INTO orders VALUES (1)")
	require.Error(t, err)
	l := disarm()
	require.True(t, l.Acted())
	assert.Equal(t, idemcheck.LandedAutocommitWrite, l.Kind)
	assert.Equal(t, "INSERT INTO orders VALUES (1)", l.SQL)
	assert.Equal(t, DBCut("", 1), l.Fault)
	assert.Equal(t, 0, s.count(t))

	// Disarmed, it never acts again: the next write commits.
	c2 := s.watchedConn(t)
	_, err = c2.Exec(ctx, "INSERT INTO orders VALUES (2)")
	require.NoError(t, err)
	assert.Equal(t, 1, s.count(t))

	// An nth never reached only counts: the claim and the work's COMMIT
	// are two effect writes, the INSERT inside the transaction is none.
	disarm, err = s.link.Arm(DBCut("", 1000))
	require.NoError(t, err)
	_, err = c2.Exec(ctx, "INSERT INTO orders VALUES (3)")
	require.NoError(t, err)
	require.NoError(t, insertTx(ctx, c2, 4))
	l = disarm()
	assert.False(t, l.Acted())
	assert.Equal(t, 2, l.Seen)
	assert.Equal(t, idemcheck.LandedCommit, l.LastKind, "the last of them is the COMMIT")

	// A handler that never opens a transaction ends with a write that
	// commits on its own.
	disarm, err = s.link.Arm(DBCut("", 1000))
	require.NoError(t, err)
	require.NoError(t, insertTx(ctx, c2, 5))
	_, err = c2.Exec(ctx, "INSERT INTO orders VALUES (6)")
	require.NoError(t, err)
	l = disarm()
	assert.Equal(t, 2, l.Seen)
	assert.Equal(t, idemcheck.LandedAutocommitWrite, l.LastKind)

	disarm, err = s.link.Arm(DBLatency(0))
	require.NoError(t, err)
	assert.False(t, disarm().Acted(), "db-latency has no landing")
}
