package faults

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func insertPayment(ctx context.Context, c *pgx.Conn, customer string, commit bool) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO payments (customer) VALUES ($1)", customer); err != nil {
		return err
	}
	if !commit {
		return tx.Rollback(ctx)
	}
	return tx.Commit(ctx)
}

// A fault armed carrying an intent's marks meets that intent's effect
// write only, whichever connection makes it: a queue's autocommitted
// bookkeeping on another connection, another intent's transaction, and a
// transaction that carried the mark but rolled back all pass; the worker's
// commit of the intent's payment is cut, and the landing names its
// connection. Armed without marks, the same fault meets the queue's first
// write instead, which is what marks are for.
func TestArmCarryingMeetsTheIntentsWritesOnly(t *testing.T) {
	for _, m := range autocommitModes {
		t.Run(m.name, func(t *testing.T) {
			s := newShop(t)
			ctx := context.Background()
			_, err := s.direct.Exec(ctx, "CREATE TABLE payments (customer text NOT NULL); CREATE TABLE jobs (state text NOT NULL)")
			require.NoError(t, err)
			queue := s.watchedConnMode(t, m.mode)
			worker := s.watchedConnMode(t, m.mode)
			count := func(customer string) int {
				var n int
				require.NoError(t, s.direct.QueryRow(ctx, "SELECT count(*) FROM payments WHERE customer = $1", customer).Scan(&n))
				return n
			}

			disarm, err := s.link.Arm(DBCut("", 1), []byte("intent-42"))
			require.NoError(t, err)
			_, err = queue.Exec(ctx, "INSERT INTO jobs (state) VALUES ($1)", "running")
			require.NoError(t, err, "the queue's bookkeeping carries no mark")
			require.NoError(t, insertPayment(ctx, queue, "intent-41", true), "another intent's write")
			require.NoError(t, insertPayment(ctx, worker, "intent-42", false), "a rollback ends what the transaction carried")
			_, err = worker.Exec(ctx, "INSERT INTO jobs (state) VALUES ($1)", "completed")
			require.NoError(t, err, "the worker's next write carries nothing")
			assert.Error(t, insertPayment(ctx, worker, "intent-42", true), "the intent's payment is cut")
			l := disarm()
			require.True(t, l.Acted())
			assert.Equal(t, idemcheck.LandedCommit, l.Kind)
			assert.Equal(t, 1, l.Match, "nothing else was counted")
			assert.Equal(t, 2, l.Conn, "the worker's connection, the second through the proxy")
			assert.Equal(t, 0, count("intent-42"))
			assert.Equal(t, 1, count("intent-41"))

			disarm, err = s.link.Arm(DBCut("", 1))
			require.NoError(t, err)
			_, err = queue.Exec(ctx, "INSERT INTO jobs (state) VALUES ($1)", "running")
			assert.Error(t, err, "without marks the first effect write on the link is met, the queue's")
			l = disarm()
			require.True(t, l.Acted())
			assert.Equal(t, 1, l.Conn)
		})
	}
}

// On MySQL as on PostgreSQL: in the text protocol (the mark spliced into
// the statement) and as a prepared statement's parameter, a fault armed
// carrying an intent's mark passes another intent's write and a rolled-back
// one, and cuts the intent's own.
func TestMySQLArmCarryingMeetsTheIntentsWritesOnly(t *testing.T) {
	for _, text := range []bool{true, false} {
		name := map[bool]string{true: "text", false: "prepared"}[text]
		t.Run(name, func(t *testing.T) {
			s := newMyShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, err := s.direct.ExecContext(ctx, "CREATE TABLE payments (customer VARCHAR(64) NOT NULL) ENGINE=InnoDB")
			require.NoError(t, err)
			other, worker := s.through(t, None, text), s.through(t, None, text)
			pay := func(db *sql.DB, customer string, commit bool) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO payments (customer) VALUES (?)", customer); err != nil {
					_ = tx.Rollback()
					return err
				}
				if !commit {
					return tx.Rollback()
				}
				return tx.Commit()
			}
			disarm, err := s.link.Arm(DBCut("", 1), []byte("intent-42"))
			require.NoError(t, err)
			require.NoError(t, pay(other, "intent-41", true))
			require.NoError(t, pay(worker, "intent-42", false))
			_, err = s.write(worker, false)
			require.NoError(t, err, "the worker's next write carries nothing")
			assert.Error(t, pay(worker, "intent-42", true))
			l := disarm()
			require.True(t, l.Acted())
			assert.Equal(t, idemcheck.LandedCommit, l.Kind)
			assert.Equal(t, 1, l.Match)
			var n int
			require.NoError(t, s.direct.QueryRowContext(ctx, "SELECT count(*) FROM payments WHERE customer = 'intent-42'").Scan(&n))
			assert.Equal(t, 0, n)
		})
	}
}

// Released freezing, a held COMMIT's answer freezes the link once held:
// another connection's write, sent then, does not reach the database
// while the answer is held (as nothing does from a process killed at that
// instant). After Drop it never runs and its connection is closed; after
// Forward it runs.
func TestReleaseHoldingAnswerFreezingKeepsTheOtherConnections(t *testing.T) {
	for _, drop := range []bool{true, false} {
		t.Run(map[bool]string{true: "drop", false: "forward"}[drop], func(t *testing.T) {
			s := newShop(t)
			other := s.watchedConn(t)
			ev, errc, conn, id := holdCommitWatched(t, s)
			ans, err := ev.ReleaseHoldingAnswerFreezing()
			require.NoError(t, err)
			awaitAnswer(t, ans)
			assert.Equal(t, 1, s.rows(t, id), "the COMMIT ran")

			otherID, otherErr := s.writeFrozen(t, other)
			if drop {
				ans.Drop()
				require.NoError(t, conn.PgConn().Conn().Close()) // the killed target's end
				require.Error(t, waitErr(t, errc), "the commit never learnt its answer")
				assert.Error(t, waitErr(t, otherErr), "dropped: the other connection is closed")
				assert.Equal(t, 0, s.rows(t, otherID), "dropped: the other write never ran")
				return
			}
			ans.Forward()
			require.NoError(t, waitErr(t, errc))
			require.NoError(t, waitErr(t, otherErr), "forwarded: the other write goes on")
			assert.Equal(t, 1, s.rows(t, otherID))
		})
	}
}

// The held statement's connection ending does not thaw the link: a
// target of several processes, the one that sent the statement killed
// first, is not dead until its last process is, and what the others send
// meanwhile stays frozen until the harness drops the answer.
func TestReleaseHoldingAnswerFreezingOutlastsTheHeldConnection(t *testing.T) {
	s := newShop(t)
	other := s.watchedConn(t)
	ev, errc, conn, _ := holdCommitWatched(t, s)
	ans, err := ev.ReleaseHoldingAnswerFreezing()
	require.NoError(t, err)
	awaitAnswer(t, ans)
	require.NoError(t, conn.PgConn().Conn().Close()) // the first process's end
	require.Error(t, waitErr(t, errc), "the commit never learnt its answer")

	otherID, otherErr := s.writeFrozen(t, other)
	ans.Drop()
	assert.Error(t, waitErr(t, otherErr), "dropped: the other connection is closed")
	assert.Equal(t, 0, s.rows(t, otherID), "dropped: the other write never ran")
}

// A freezing release first lets the statements other connections had in
// flight finish: a statement that sleeps, then looks for the held
// transaction's row in a snapshot of its own, runs wholly before the
// COMMIT, and does not see it (as a queue's fetch in flight must not take
// the job the commit makes). A plain release lets the COMMIT run while it
// sleeps, and it sees the row.
func TestReleaseHoldingAnswerFreezingLetsInFlightStatementsFinishFirst(t *testing.T) {
	for _, freeze := range []bool{true, false} {
		t.Run(map[bool]string{true: "freezing", false: "plain"}[freeze], func(t *testing.T) {
			s := newShop(t)
			ctx := context.Background()
			_, err := s.direct.Exec(ctx, `CREATE FUNCTION later_sees(id int) RETURNS bool LANGUAGE plpgsql VOLATILE AS $$
				BEGIN PERFORM pg_sleep(0.3); RETURN EXISTS (SELECT 1 FROM orders WHERE orders.id = later_sees.id); END $$`)
			require.NoError(t, err)
			other := s.watchedConn(t)
			ev, errc, conn, id := holdCommitWatched(t, s)
			seen := make(chan bool, 1)
			go func() {
				var b bool
				// One message (the simple protocol): in flight once active,
				// never a prepared statement's parse seen before its run.
				if err := other.QueryRow(ctx, "SELECT later_sees($1)", pgx.QueryExecModeSimpleProtocol, id).Scan(&b); err != nil {
					t.Errorf("the look-up: %v", err)
				}
				seen <- b
			}()
			s.awaitActive(t, "SELECT later_sees") // the look-up is in flight
			var ans *AnswerHold
			if freeze {
				ans, err = ev.ReleaseHoldingAnswerFreezing()
			} else {
				ans, err = ev.ReleaseHoldingAnswer()
			}
			require.NoError(t, err)
			assert.Zero(t, ans.Unquiet(), "nothing was left in flight")
			awaitAnswer(t, ans)
			ans.Forward()
			require.NoError(t, waitErr(t, errc))
			select {
			case b := <-seen:
				assert.Equal(t, !freeze, b, "the in-flight look-up saw the committed row")
			case <-time.After(testTimeout):
				t.Fatal("the look-up never returned")
			}
			_ = conn
		})
	}
}

// A statement in flight longer than the bound is let run on, and the
// release says so: the kill's record can tell that a statement of another
// connection may have run after the commit.
func TestReleaseHoldingAnswerFreezingSaysWhatItDidNotWaitFor(t *testing.T) {
	s := newShop(t)
	ctx := context.Background()
	other := s.watchedConn(t)
	ev, errc, _, _ := holdCommitWatched(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := other.Exec(ctx, "SELECT pg_sleep($1)", pgx.QueryExecModeSimpleProtocol, (QuiesceBound + 500*time.Millisecond).Seconds())
		done <- err
	}()
	s.awaitActive(t, "SELECT pg_sleep") // the sleep is in flight
	began := time.Now()
	ans, err := ev.ReleaseHoldingAnswerFreezing()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(began), QuiesceBound, "the release waited for the statement in flight, up to the bound")
	assert.Equal(t, 1, ans.Unquiet())
	awaitAnswer(t, ans)
	ans.Forward()
	require.NoError(t, waitErr(t, errc))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("the sleep never returned")
	}
}

// awaitActive waits until a session of the shop's database is running a
// statement that starts with prefix.
func (s *shop) awaitActive(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		var n int
		require.NoError(t, s.direct.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND starts_with(query, $1)", prefix).Scan(&n))
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session ran %q within %v", prefix, testTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeFrozen sends a write of a new order on other, a connection through
// the frozen link, and checks for 300 ms that it neither returns nor
// reaches the database; it returns the order's id and where the write's
// error will come.
func (s *shop) writeFrozen(t *testing.T, other *pgx.Conn) (int64, <-chan error) {
	t.Helper()
	id := s.ids.Add(1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, err := other.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("the other connection's write returned (%v) while the link was frozen", err)
	case <-time.After(300 * time.Millisecond):
	}
	assert.Equal(t, 0, s.rows(t, id), "frozen: the other write has not reached the database")
	return id, errc
}
