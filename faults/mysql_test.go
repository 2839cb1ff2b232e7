package faults

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/mysqlwire"
)

// myShop is shop on MariaDB: a fresh database with an orders table, a
// direct pool to it (never through a fault), and a database Link in front
// of its server that reads the MySQL protocol.
type myShop struct {
	addr, name string // the server's host:port, the database
	direct     *sql.DB
	link       *Link
	ids        atomic.Int64
}

func newMyShop(t *testing.T) *myShop {
	t.Helper()
	u, err := url.Parse(testMySQLDSN(t))
	require.NoError(t, err)
	s := &myShop{addr: u.Host, name: strings.TrimPrefix(u.Path, "/")}
	s.direct = s.open(t, s.addr, false)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = s.direct.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY) ENGINE=InnoDB")
	require.NoError(t, err)
	s.link, err = NewDBLink(s.addr, WithEngine(EngineMySQL))
	require.NoError(t, err)
	t.Cleanup(func() { s.link.Close() })
	return s
}

// open opens a pool of one connection to addr: statements with arguments
// go as prepared statements (COM_STMT_PREPARE, COM_STMT_EXECUTE), or, with
// text, in the text protocol (COM_QUERY, the driver interpolating them).
func (s *myShop) open(t *testing.T, addr string, text bool) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", addr, s.name
	cfg.InterpolateParams = text
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// through opens a pool through f's proxy (None: the watched one).
func (s *myShop) through(t *testing.T, f Fault, text bool) *sql.DB {
	t.Helper()
	var addr string
	var err error
	if f.IsNone() {
		addr, err = s.link.WatchedAddr()
	} else {
		addr, err = s.link.Addr(f)
	}
	require.NoError(t, err)
	return s.open(t, addr, text)
}

func (s *myShop) rows(t *testing.T, id int64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var n int
	require.NoError(t, s.direct.QueryRowContext(ctx, "SELECT count(*) FROM orders WHERE id = ?", id).Scan(&n))
	return n
}

// write inserts a new row, in a transaction or with autocommit, and
// returns its id and the error the target saw.
func (s *myShop) write(db *sql.DB, inTx bool) (int64, error) {
	id := s.ids.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if !inTx {
		_, err := db.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", id)
		return id, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return id, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", id); err != nil {
		_ = tx.Rollback()
		return id, err
	}
	return id, tx.Commit()
}

// myCase is one way a target writes: protocol and transaction.
type myCase struct {
	name       string
	text, inTx bool
	kind       string // the landing of the default match
}

var myCases = []myCase{
	{"text/autocommit", true, false, idemcheck.LandedAutocommitWrite},
	{"prepared/autocommit", false, false, idemcheck.LandedAutocommitWrite},
	{"text/transaction", true, true, idemcheck.LandedCommit},
	{"prepared/transaction", false, true, idemcheck.LandedCommit},
}

// db-cut on MySQL cuts the effect write before the server sees it: the
// autocommitted INSERT never ran, the COMMIT never came and the
// transaction rolled back; the target saw an error.
func TestMySQLDBCut(t *testing.T) {
	for _, c := range myCases {
		t.Run(c.name, func(t *testing.T) {
			s := newMyShop(t)
			f := DBCut("", 2)
			db := s.through(t, f, c.text)
			first, err := s.write(db, c.inTx)
			require.NoError(t, err, "the first effect write passes (nth=2)")
			id, err := s.write(db, c.inTx)
			require.Error(t, err, "the second is cut")
			assert.Equal(t, 1, s.rows(t, first))
			assert.Equal(t, 0, s.rows(t, id), "the cut write did not take effect")
			l, ok := s.link.Landing(f)
			require.True(t, ok)
			assert.Equal(t, c.kind, l.Kind)
			assert.Equal(t, 2, l.Match)
			if c.inTx {
				assert.Equal(t, "COMMIT", l.SQL)
			} else {
				assert.Contains(t, l.SQL, "INSERT INTO orders")
			}
			_, err = s.write(db, c.inTx)
			assert.NoError(t, err, "the pool reconnects, and the fault acted once")
		})
	}
}

// db-hold on MySQL, armed on the watched proxy, holds the effect write:
// until it is released, the held INSERT has not run and the held COMMIT
// has not committed; released, it takes effect and the target goes on.
func TestMySQLDBHold(t *testing.T) {
	for _, c := range myCases {
		t.Run(c.name, func(t *testing.T) {
			s := newMyShop(t)
			db := s.through(t, None, c.text)
			_, err := s.write(db, c.inTx)
			require.NoError(t, err, "clean until armed")
			disarm, err := s.link.Arm(DBHold("", 1))
			require.NoError(t, err)
			defer disarm()
			done := make(chan error, 1)
			var id int64
			go func() {
				var err error
				id, err = s.write(db, c.inTx)
				done <- err
			}()
			ev := held(t, s.link)
			assert.Equal(t, c.kind, ev.Landing)
			assert.Equal(t, 0, s.rows(t, s.ids.Load()), "held: no effect yet")
			select {
			case err := <-done:
				t.Fatalf("the write returned (%v) while held", err)
			default:
			}
			require.NoError(t, ev.Release())
			require.NoError(t, waitErr(t, done))
			assert.Equal(t, 1, s.rows(t, id))
			assert.Equal(t, int64(1), s.link.DBSessions(), "one MySQL session came through the watched proxy")
		})
	}
}

// An explicit match holds the statement it names, prepared or not: the
// INSERT of a transaction, which has not run while held.
func TestMySQLDBHoldMatch(t *testing.T) {
	for _, text := range []bool{true, false} {
		s := newMyShop(t)
		db := s.through(t, None, text)
		disarm, err := s.link.Arm(DBHold(`^INSERT INTO orders`, 1))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := s.write(db, true)
			done <- err
		}()
		ev := held(t, s.link)
		assert.Equal(t, LandedStatement, ev.Landing)
		var n int
		require.NoError(t, s.direct.QueryRow("SELECT count(*) FROM information_schema.innodb_trx").Scan(&n))
		assert.Equal(t, 0, n, "text=%v: the held INSERT has not run: no transaction has written", text)
		require.NoError(t, ev.Release())
		require.NoError(t, waitErr(t, done))
		assert.Equal(t, 1, s.rows(t, s.ids.Load()))
		disarm()
	}
}

// db-cut-after on MySQL lets the effect write run and commit, and cuts the
// link once its answer has come, before the target read it: committed,
// and the target saw an error.
func TestMySQLDBCutAfter(t *testing.T) {
	for _, c := range myCases {
		t.Run(c.name, func(t *testing.T) {
			s := newMyShop(t)
			db := s.through(t, None, c.text)
			disarm, err := s.link.Arm(DBCutAfter("", 1))
			require.NoError(t, err)
			id, err := s.write(db, c.inTx)
			require.Error(t, err, "the target never heard the answer")
			l := disarm()
			assert.Equal(t, c.kind, l.Kind)
			assert.Equal(t, 1, s.rows(t, id), "the write committed")
			id, err = s.write(db, c.inTx)
			require.NoError(t, err, "disarmed: clean again")
			assert.Equal(t, 1, s.rows(t, id))
		})
	}
}

// ReleaseHoldingAnswer on MySQL: the released COMMIT has committed when
// the answer is held, and the target has not heard it until Forward.
func TestMySQLDBHoldAnswer(t *testing.T) {
	s := newMyShop(t)
	db := s.through(t, None, false)
	disarm, err := s.link.Arm(DBHold("", 1))
	require.NoError(t, err)
	defer disarm()
	done := make(chan error, 1)
	go func() {
		_, err := s.write(db, true)
		done <- err
	}()
	ev := held(t, s.link)
	a, err := ev.ReleaseHoldingAnswer()
	require.NoError(t, err)
	select {
	case <-a.Held():
	case <-time.After(testTimeout):
		t.Fatal("the answer was not held")
	}
	assert.Equal(t, 1, s.rows(t, s.ids.Load()), "committed before the answer goes")
	select {
	case err := <-done:
		t.Fatalf("the target heard the answer (%v) while it was held", err)
	default:
	}
	a.Forward()
	require.NoError(t, waitErr(t, done))
}

// On MySQL too an answer that spans many chunks is held from its first
// byte: the target has not read a row of it when the hold reports it.
func TestMySQLDBHoldAnswerWithheldFromItsFirstByte(t *testing.T) {
	s := newMyShop(t)
	db := s.through(t, None, false)
	disarm, err := s.link.Arm(DBHold("REPEAT", 1))
	require.NoError(t, err)
	defer disarm()
	type result struct {
		rows int
		err  error
	}
	first := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		rows, err := db.QueryContext(ctx, "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 50) SELECT REPEAT('x', 1000) FROM s a, s b WHERE b.n <= 40")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			if n == 0 {
				close(first)
			}
			n++
		}
		done <- result{rows: n, err: rows.Err()}
	}()
	a, err := held(t, s.link).ReleaseHoldingAnswer()
	require.NoError(t, err)
	select {
	case <-a.Held():
	case <-time.After(testTimeout):
		t.Fatal("the answer was not held")
	}
	select {
	case <-first:
		t.Fatal("a row of the held answer reached the target")
	default:
	}
	a.Forward()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, 2000, r.rows)
	case <-time.After(testTimeout):
		t.Fatal("the query never returned after Forward")
	}
}

// Capabilities of a greeting: CONNECT_WITH_DB, PROTOCOL_41, TRANSACTIONS,
// SECURE_CONNECTION, PLUGIN_AUTH; and SSL.
const (
	myCaps    = 1<<3 | 1<<9 | 1<<13 | 1<<15 | 1<<19
	myCapsSSL = myCaps | 1<<11
)

// mysqlPacket frames payload as packet seq.
func mysqlPacket(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// mysqlGreeting is a MariaDB server's Initial Handshake Packet offering
// caps, framed as packet 0.
func mysqlGreeting(caps uint32) []byte {
	p := []byte{10}
	p = append(p, "5.5.5-10.11.14-MariaDB\x00"...)
	p = append(p, 1, 0, 0, 0)                               // connection id
	p = append(p, "abcdefgh"...)                            // scramble, first part
	p = append(p, 0, byte(caps), byte(caps>>8), 0x21, 2, 0) // filler, capabilities (low), charset, status
	p = append(p, byte(caps>>16), byte(caps>>24), 21)       // capabilities (high), scramble length
	p = append(p, make([]byte, 10)...)                      // reserved, MariaDB's extended capabilities
	p = append(p, "ijklmnopqrst\x00"...)
	p = append(p, "mysql_native_password\x00"...)
	return mysqlPacket(0, p)
}

// A client that pipelines its commands (sends several before the answers
// come, in one chunk) has each held or let through on its own: the
// scanner reports them one at a time, each a whole packet.
func TestMyScannerPipelined(t *testing.T) {
	caps := uint32(myCaps)
	resp := []byte{byte(caps), byte(caps >> 8), byte(caps >> 16), byte(caps >> 24), 0, 0, 0, 1, 0x21} // capabilities, max packet, charset
	resp = append(resp, make([]byte, 23)...)
	resp = append(resp, "root\x00\x00"...) // user, an empty auth response
	var cmds []byte
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)", "SELECT 1", "COMMIT", "INSERT INTO t VALUES (2)"} {
		cmds = append(cmds, mysqlPacket(0, append([]byte{mysqlwire.ComQuery}, q...))...)
	}
	segs := []segment{
		{client: false, b: mysqlGreeting(myCaps)},
		{client: true, b: mysqlPacket(1, resp)},
		{client: false, b: mysqlPacket(2, []byte{0, 0, 0, 2, 0, 0, 0})}, // OK, autocommit
		{client: true, b: cmds},
	}
	for _, k := range []int{1, 5, 1 << 30} {
		evs, passed := replayMySQL(t, segs, k)
		assert.Equal(t, append(mysqlPacket(1, resp), cmds...), passed, "chunks of %d", k)
		var got []string
		for _, ev := range evs {
			got = append(got, ev.sql+" "+ev.kind+" "+ev.writeKind)
		}
		assert.Equal(t, []string{
			"BEGIN statement ",
			"INSERT INTO t VALUES (1) statement " + idemcheck.LandedWrite,
			"SELECT 1 statement ",
			"COMMIT " + idemcheck.LandedCommit + " " + idemcheck.LandedCommit,
			"INSERT INTO t VALUES (2) " + idemcheck.LandedAutocommitWrite + " " + idemcheck.LandedAutocommitWrite,
		}, got, "chunks of %d", k)
		for i, ev := range evs {
			assert.Equal(t, int64(i), ev.prior, "chunks of %d: command %d follows %d", k, i+1, i)
		}
	}
}

// A client that asks for TLS on a MySQL link is refused: the stream would
// hide its statements. Its connection is closed before any TLS byte
// passes, and Refused says why.
func TestMySQLLinkRefusesTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(mysqlGreeting(myCapsSSL))
		n, _ := io.Copy(io.Discard, c) // what came after the greeting, up to the close
		got <- int(n)
	}()
	link, err := NewDBLink(ln.Addr().String(), WithEngine(EngineMySQL))
	require.NoError(t, err)
	defer link.Close()
	addr, err := link.WatchedAddr()
	require.NoError(t, err)
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName, cfg.TLSConfig = "root", "tcp", addr, "shop", "skip-verify"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.Error(t, db.PingContext(ctx))
	select {
	case n := <-got:
		assert.Zero(t, n, "no byte of the SSLRequest or the TLS handshake reached the server")
	case <-time.After(testTimeout):
		t.Fatal("the server's connection was not closed")
	}
	assert.Contains(t, link.Refused(), "the client asked for TLS on the database link")
	assert.Zero(t, link.DBSessions())
}
