package faults

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testTimeout bounds every database step: generous, so only a hang fails.
const testTimeout = 20 * time.Second

// shop is a fresh database with an orders table, a direct connection to it
// (the harness's view, never through a fault), and a database Link in front
// of its server.
type shop struct {
	dsn    string
	direct *pgx.Conn
	link   *Link
	ids    atomic.Int64
}

func newShop(t *testing.T) *shop {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := &shop{dsn: testDSN(t)}
	var err error
	s.direct, err = pgx.Connect(ctx, s.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.direct.Close(context.Background()) })
	_, err = s.direct.Exec(ctx, "CREATE TABLE orders (id int PRIMARY KEY)")
	require.NoError(t, err)

	cfg, err := pgconn.ParseConfig(s.dsn)
	require.NoError(t, err)
	s.link, err = NewDBLink(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	require.NoError(t, err)
	t.Cleanup(func() { s.link.Close() })
	return s
}

// connect opens a target connection through f's proxy, pgx configured with
// mode.
func (s *shop) connect(t *testing.T, f Fault, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg := s.config(t, f)
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (s *shop) config(t *testing.T, f Fault) *pgx.ConnConfig {
	t.Helper()
	addr, err := s.link.Addr(f)
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	require.Equal(t, addr, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	return cfg
}

// rows counts the orders with id, over the direct connection.
func (s *shop) rows(t *testing.T, id int64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var n int
	require.NoError(t, s.direct.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = $1", id).Scan(&n))
	return n
}

// rolledBack proves the faulted transaction is gone, not merely invisible:
// inserting its id directly would wait on its row lock while it lived.
func (s *shop) rolledBack(t *testing.T, id int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tx, err := s.direct.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "SET LOCAL lock_timeout = '15s'")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
	require.NoError(t, err, "the faulted transaction still holds id %d", id)
}

// commitWays are the ways a target commits: pgx's tx.Commit (a simple
// query "commit" in every exec mode: pgx sends statements without arguments
// with the simple protocol), the extended protocol (Parse, Bind, Execute),
// and END.
var commitWays = []struct {
	name   string
	mode   pgx.QueryExecMode
	commit func(ctx context.Context, conn *pgx.Conn, tx pgx.Tx) error
}{
	{"tx.Commit, default exec mode", pgx.QueryExecModeCacheStatement, func(ctx context.Context, _ *pgx.Conn, tx pgx.Tx) error {
		return tx.Commit(ctx)
	}},
	{"tx.Commit, simple protocol", pgx.QueryExecModeSimpleProtocol, func(ctx context.Context, _ *pgx.Conn, tx pgx.Tx) error {
		return tx.Commit(ctx)
	}},
	{"Parse/Bind/Execute COMMIT", pgx.QueryExecModeCacheStatement, func(ctx context.Context, conn *pgx.Conn, _ pgx.Tx) error {
		return conn.PgConn().ExecParams(ctx, "COMMIT", nil, nil, nil, nil).Read().Err
	}},
	{"END", pgx.QueryExecModeSimpleProtocol, func(ctx context.Context, conn *pgx.Conn, _ pgx.Tx) error {
		_, err := conn.Exec(ctx, "END")
		return err
	}},
}

// insert begins a transaction through conn and inserts a fresh id in it.
func (s *shop) insert(t *testing.T, conn *pgx.Conn) (pgx.Tx, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	id := s.ids.Add(1)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
	require.NoError(t, err)
	return tx, id
}

// TestDBCut proves db-cut for each way of committing: through a clean link
// the row is committed; through db-cut the client gets a connection error,
// the row is absent and its transaction rolled back.
func TestDBCut(t *testing.T) {
	for _, way := range commitWays {
		t.Run(way.name, func(t *testing.T) {
			s := newShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()

			clean := s.connect(t, None, way.mode)
			tx, id := s.insert(t, clean)
			require.NoError(t, way.commit(ctx, clean, tx), "commit through the clean link")
			assert.Equal(t, 1, s.rows(t, id), "row committed through the clean link")

			cut := DBCut("", 0)
			conn := s.connect(t, cut, way.mode)
			tx, id = s.insert(t, conn)
			err := way.commit(ctx, conn, tx)
			require.Error(t, err, "commit through db-cut")
			assert.Equal(t, 0, s.rows(t, id), "row committed through db-cut")
			assert.Equal(t, 1, s.link.Matches(cut))
			s.rolledBack(t, id)
			t.Logf("%s: clean link committed; db-cut: client error %q, row absent, transaction rolled back", way.name, err)
		})
	}
}

// A target that prepared its COMMIT once re-runs it with Bind and Execute
// alone, which carry no SQL. db-cut still finds it, and nth counts matches
// over the link: the first COMMIT passes, the second is cut.
func TestDBCutPreparedCommitNth(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cut := DBCut("", 2)
	conn := s.connect(t, cut, pgx.QueryExecModeCacheStatement)
	// With a statement prepared under the name "commit", pgx's tx.Commit
	// runs it by name.
	_, err := conn.Prepare(ctx, "commit", "commit")
	require.NoError(t, err)

	tx, first := s.insert(t, conn)
	require.NoError(t, tx.Commit(ctx), "first commit (match 1 of nth=2)")
	assert.Equal(t, 1, s.link.Matches(cut))
	tx, second := s.insert(t, conn)
	require.Error(t, tx.Commit(ctx), "second commit (match 2 of nth=2)")
	assert.Equal(t, 2, s.link.Matches(cut))
	assert.Equal(t, 1, s.rows(t, first))
	assert.Equal(t, 0, s.rows(t, second))
	s.rolledBack(t, second)
}

// A libpq client with sslmode=prefer asks for TLS on the connection it then
// uses: SSLRequest, the server's one-byte answer, then the StartupMessage.
// db-cut follows that too. (pgx instead opens a second connection after a
// refusal.) If the server accepts TLS, db-cut must close the connection
// rather than let encrypted traffic through unwatched.
func TestDBCutAfterSSLRequest(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cut := DBCut("", 0)
	cfg := s.config(t, cut)
	var answer atomic.Value
	errTLSRefused := errors.New("db-cut closed the TLS handshake")
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		req, _ := (&pgproto3.SSLRequest{}).Encode(nil)
		b := make([]byte, 1)
		if _, err := conn.Write(req); err == nil {
			_, err = io.ReadFull(conn, b)
		}
		if err != nil {
			conn.Close()
			return nil, err
		}
		answer.Store(b[0])
		if b[0] == 'S' {
			// This server speaks TLS: db-cut must not let it through.
			defer conn.Close()
			if err := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}).HandshakeContext(ctx); err != nil {
				return nil, errTLSRefused
			}
			return nil, errors.New("TLS passed through db-cut unwatched")
		}
		return conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if answer.Load() == byte('S') {
		require.ErrorIs(t, err, errTLSRefused)
		t.Log("the server accepted TLS; db-cut closed the handshake")
		return
	}
	require.NoError(t, err)
	defer conn.Close(ctx)
	assert.Equal(t, byte('N'), answer.Load())
	tx, id := s.insert(t, conn)
	require.Error(t, tx.Commit(ctx))
	assert.Equal(t, 0, s.rows(t, id))
	s.rolledBack(t, id)
}

// held waits for the next hold event of link.
func held(t *testing.T, link *Link) HoldEvent {
	t.Helper()
	select {
	case ev := <-link.Held():
		return ev
	case <-time.After(testTimeout):
		t.Fatal("no hold event")
		return HoldEvent{}
	}
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(testTimeout):
		t.Fatal("the commit did not return")
		return nil
	}
}

// holdCommit starts a transaction through db-hold, inserts a row, sends
// COMMIT in the background and waits until it is held. The commit has not
// returned, and the row is not visible: the hold is before the commit.
func holdCommit(t *testing.T, s *shop) (HoldEvent, <-chan error, *pgx.Conn, int64) {
	t.Helper()
	f := DBHold("", 0)
	conn := s.connect(t, f, pgx.QueryExecModeCacheStatement)
	tx, id := s.insert(t, conn)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		errc <- tx.Commit(ctx)
	}()
	ev := held(t, s.link)
	assert.Equal(t, "commit", ev.SQL)
	assert.Equal(t, 1, ev.Match)
	assert.Equal(t, f, ev.Fault)
	select {
	case err := <-errc:
		t.Fatalf("the commit returned (%v) while its COMMIT was held", err)
	default:
	}
	assert.Equal(t, 0, s.rows(t, id), "row visible while its COMMIT is held")
	return ev, errc, conn, id
}

func TestDBHoldRelease(t *testing.T) {
	s := newShop(t)
	ev, errc, _, id := holdCommit(t, s)
	require.NoError(t, ev.Release())
	require.NoError(t, waitErr(t, errc), "commit after Release")
	assert.Equal(t, 1, s.rows(t, id), "row after Release")
	assert.ErrorIs(t, ev.Cut(), ErrHoldReleased)
	assert.NoError(t, ev.Release(), "Release again is a no-op")
}

func TestDBHoldCut(t *testing.T) {
	s := newShop(t)
	ev, errc, _, id := holdCommit(t, s)
	require.NoError(t, ev.Cut())
	require.Error(t, waitErr(t, errc), "commit after Cut")
	assert.Equal(t, 0, s.rows(t, id), "row after Cut")
	s.rolledBack(t, id)
	assert.ErrorIs(t, ev.Release(), ErrHoldEnded)
}

// The crash path: the target goes away (its process killed, here its socket
// closed) while its COMMIT is held. The COMMIT is dropped, never forwarded;
// the harness's Cut afterwards is a no-op that reports no error.
func TestDBHoldTargetGone(t *testing.T) {
	s := newShop(t)
	ev, errc, conn, id := holdCommit(t, s)
	require.NoError(t, conn.PgConn().Conn().Close())
	require.Error(t, waitErr(t, errc))
	select {
	case <-ev.h.done:
	case <-time.After(testTimeout):
		t.Fatal("the hold did not end when its target went away")
	}
	assert.Equal(t, outcomeEnded, ev.h.taken)
	assert.NoError(t, ev.Cut())
	assert.ErrorIs(t, ev.Release(), ErrHoldEnded)
	assert.Equal(t, 0, s.rows(t, id))
	s.rolledBack(t, id)
}

// Close ends held connections too, so a harness that stops never leaves a
// transaction hanging in the database.
func TestDBHoldLinkClose(t *testing.T) {
	s := newShop(t)
	ev, errc, _, id := holdCommit(t, s)
	require.NoError(t, s.link.Close())
	require.Error(t, waitErr(t, errc))
	assert.ErrorIs(t, ev.Release(), ErrHoldEnded)
	assert.Equal(t, 0, s.rows(t, id))
	s.rolledBack(t, id)
}

// TestDBLatency proves db-latency: a query through it takes at least the
// latency (both ways, it is twice that; the bound is generous).
func TestDBLatency(t *testing.T) {
	const ms = 100 * time.Millisecond
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn := s.connect(t, DBLatency(ms), pgx.QueryExecModeSimpleProtocol)
	start := time.Now()
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, ms)
	t.Logf("db-latency(%v): SELECT 1 took %v", ms, took.Round(time.Millisecond))
}

// holdCommitWatched is holdCommit on the watched proxy, the one a started
// target is handed, with db-hold armed on it.
func holdCommitWatched(t *testing.T, s *shop) (HoldEvent, <-chan error, *pgx.Conn, int64) {
	t.Helper()
	addr, err := s.link.WatchedAddr()
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	disarm, err := s.link.Arm(DBHold("", 1))
	require.NoError(t, err)
	t.Cleanup(func() { disarm() })
	tx, id := s.insert(t, conn)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		errc <- tx.Commit(ctx)
	}()
	ev := held(t, s.link)
	assert.Equal(t, "commit", ev.SQL)
	return ev, errc, conn, id
}

// awaitAnswer waits until the answer to a released statement is held.
func awaitAnswer(t *testing.T, a *AnswerHold) {
	t.Helper()
	select {
	case <-a.Held():
	case <-time.After(testTimeout):
		t.Fatal("the database's answer was never held")
	}
}

// The answer to a released COMMIT is held on its way back: the row has
// committed in the database while the target's commit has not returned,
// so the target can have done nothing after it. Forward then lets the
// commit return.
func TestDBHoldAnswerForward(t *testing.T) {
	s := newShop(t)
	ev, errc, _, id := holdCommitWatched(t, s)
	ans, err := ev.ReleaseHoldingAnswer()
	require.NoError(t, err)
	awaitAnswer(t, ans)
	assert.Equal(t, 1, s.rows(t, id), "the COMMIT ran once its answer came back")
	select {
	case err := <-errc:
		t.Fatalf("the commit returned (%v) while its answer was held", err)
	default:
	}
	ans.Forward()
	require.NoError(t, waitErr(t, errc), "commit after Forward")
	ans.Drop()
	assert.Equal(t, 1, s.rows(t, id))
}

// An answer that spans many chunks is held from its first byte: when the
// hold reports it, the target has not received a row of it. Forward then
// lets all of it through, in order.
func TestDBHoldAnswerWithheldFromItsFirstByte(t *testing.T) {
	s := newShop(t)
	addr, err := s.link.WatchedAddr()
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	disarm, err := s.link.Arm(DBHold("generate_series", 1))
	require.NoError(t, err)
	defer disarm()
	type result struct {
		rows int
		err  error
	}
	first := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		rows, err := conn.Query(ctx, "SELECT repeat('x', 1000) FROM generate_series(1, 2000)")
		if err != nil {
			done <- result{err: err}
			return
		}
		n := 0
		for rows.Next() {
			if n == 0 {
				close(first)
			}
			n++
		}
		done <- result{rows: n, err: rows.Err()}
	}()
	ans, err := held(t, s.link).ReleaseHoldingAnswer()
	require.NoError(t, err)
	awaitAnswer(t, ans)
	select {
	case <-first:
		t.Fatal("a row of the held answer reached the target")
	default:
	}
	ans.Forward()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, 2000, r.rows)
	case <-time.After(testTimeout):
		t.Fatal("the query never returned after Forward")
	}
}

// The kill path: the target goes away while the answer to its COMMIT is
// held. The row stays committed; the target never learnt it.
func TestDBHoldAnswerDrop(t *testing.T) {
	s := newShop(t)
	ev, errc, conn, id := holdCommitWatched(t, s)
	ans, err := ev.ReleaseHoldingAnswer()
	require.NoError(t, err)
	awaitAnswer(t, ans)
	ans.Drop()
	require.NoError(t, conn.PgConn().Conn().Close())
	require.Error(t, waitErr(t, errc), "the commit never learnt its answer")
	assert.Equal(t, 1, s.rows(t, id))
}

// A fault's own proxy follows no answers: the hold says so and releases
// nothing.
func TestDBHoldAnswerNeedsTheWatchedProxy(t *testing.T) {
	s := newShop(t)
	ev, errc, _, id := holdCommit(t, s)
	_, err := ev.ReleaseHoldingAnswer()
	require.ErrorIs(t, err, ErrAnswerNotFollowed)
	require.NoError(t, ev.Cut())
	require.Error(t, waitErr(t, errc))
	assert.Equal(t, 0, s.rows(t, id))
}

// The kill came before the database answered (a statement still running
// when the target died): no answer will ever be held, and Drop, Forward,
// Release and Cut must return all the same, not wait for ever on a
// decision nobody will take.
func TestDBHoldAnswerDropAfterTheTargetDiedBeforeTheAnswer(t *testing.T) {
	s := newShop(t)
	addr, err := s.link.WatchedAddr()
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	disarm, err := s.link.Arm(DBHold("pg_sleep", 1))
	require.NoError(t, err)
	defer disarm()
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(60)")
		errc <- err
	}()
	ev := held(t, s.link)
	ans, err := ev.ReleaseHoldingAnswer()
	require.NoError(t, err)
	// The target dies while the database is still working on it.
	require.NoError(t, conn.PgConn().Conn().Close())
	require.Error(t, waitErr(t, errc))
	done := make(chan struct{})
	go func() {
		ans.Drop()
		ans.Forward()
		_ = ev.Release()
		_ = ev.Cut()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("deciding the answer of a connection that ended never returned")
	}
	select {
	case <-ans.Held():
		t.Fatal("an answer was held for a connection that had ended before it")
	default:
	}
}
