package mysqlwire_test

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/internal/mysqlwire"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
)

// faultRelay acts on the scanner's events as the package doc tells
// faults/ to: it holds the first command whose SQL starts with hold
// until release is closed, and cuts the connection after the answer to
// the first command whose SQL is cutAfter has come, before forwarding a
// byte of it. One connection at a time.
type faultRelay struct {
	ln       net.Listener
	target   string
	hold     string
	cutAfter string
	held     chan struct{} // closed once the command is held
	release  chan struct{}
	cut      chan mysqlwire.Answer // the withheld answer, once the connection is cut

	cutAt atomic.Uint64 // the ID of the command whose answer is cut
	wg    sync.WaitGroup
}

func startFaultRelay(t *testing.T, target, hold, cutAfter string) *faultRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRelay{ln: ln, target: target, hold: hold, cutAfter: cutAfter,
		held: make(chan struct{}), release: make(chan struct{}), cut: make(chan mysqlwire.Answer, 1)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			sc := mysqlwire.New()
			r.wg.Add(2)
			go r.upstream(c, s, sc)
			go r.downstream(s, c, sc)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		r.wg.Wait()
	})
	return r
}

// upstream forwards the client's bytes, keeping back an unfinished
// command, and holds or marks the commands it acts on.
func (r *faultRelay) upstream(client, server net.Conn, sc *mysqlwire.Scanner) {
	defer r.wg.Done()
	defer server.Close()
	var pend []byte
	buf := make([]byte, 4096)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		evs := sc.Client(buf[:n])
		base := len(pend) // where this chunk starts in pend
		pend = append(pend, buf[:n]...)
		for _, e := range evs {
			if e.Kind != mysqlwire.EventCommand {
				continue
			}
			sql := e.Command.SQL
			switch {
			case r.hold != "" && strings.HasPrefix(sql, r.hold):
				r.hold = ""
				start := base + e.Start
				if _, err := server.Write(pend[:start]); err != nil {
					return
				}
				pend, base = pend[start:], base-start
				close(r.held)
				<-r.release
			case r.cutAfter != "" && sql == r.cutAfter:
				r.cutAfter = ""
				r.cutAt.Store(e.Command.ID) // before the command goes: no byte of its answer slips past
			}
		}
		keep := sc.ClientPartial()
		if _, err := server.Write(pend[:len(pend)-keep]); err != nil {
			return
		}
		pend = append([]byte(nil), pend[len(pend)-keep:]...)
	}
}

// downstream forwards the server's bytes, except, once a cut is armed,
// those past the end of the answer before the cut command's; at the end
// of that command's answer it closes both sides.
func (r *faultRelay) downstream(server, client net.Conn, sc *mysqlwire.Scanner) {
	defer r.wg.Done()
	defer client.Close()
	buf := make([]byte, 4096)
	for {
		n, err := server.Read(buf)
		if err != nil {
			return
		}
		evs := sc.Server(buf[:n])
		pass := n
		if at := r.cutAt.Load(); at != 0 {
			pass = 0
			for _, e := range evs {
				if e.Kind == mysqlwire.EventAnswer && e.Command.ID < at {
					pass = e.End
				}
				if e.Kind == mysqlwire.EventAnswer && e.Command.ID == at {
					_, _ = client.Write(buf[:pass])
					r.cut <- e.Answer
					server.Close()
					return
				}
			}
		}
		if _, err := client.Write(buf[:pass]); err != nil {
			return
		}
	}
}

// openThrough opens a one-connection pool through the relay, and one
// straight to the database to look from outside.
func openThrough(t *testing.T, addr string, u *url.URL) (through, direct *sql.DB) {
	t.Helper()
	open := func(addr string) *sql.DB {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", addr, strings.TrimPrefix(u.Path, "/")
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	through = open(addr)
	through.SetMaxOpenConns(1)
	return through, open(u.Host)
}

func count(ctx context.Context, t *testing.T, db *sql.DB, id int) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A hold at the EventCommand keeps the whole command from the server
// until it is released; a cut after a COMMIT, at the EventAnswer of that
// COMMIT, leaves it committed while the client never learns it.
func TestFaultsActOnEvents(t *testing.T) {
	u, err := url.Parse(mysqltest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startFaultRelay(t, u.Host, "INSERT INTO t VALUES (5)", "COMMIT")
	through, direct := openThrough(t, r.ln.Addr().String(), u)
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := through.ExecContext(ctx, "INSERT INTO t VALUES (5)")
		done <- err
	}()
	select {
	case <-r.held:
	case err := <-done:
		t.Fatalf("the INSERT was not held: %v", err)
	}
	if n := count(ctx, t, direct, 5); n != 0 {
		t.Fatalf("the held INSERT ran: %d rows", n)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := count(ctx, t, direct, 5); n != 1 {
		t.Fatalf("the released INSERT left %d rows", n)
	}

	tx, err := through.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (6)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("the COMMIT's answer reached the client")
	}
	a := <-r.cut
	if !a.OK || !a.HasStatus || a.InTransaction() {
		t.Errorf("the withheld answer: %+v, want an OK out of the transaction", a)
	}
	if n := count(ctx, t, direct, 6); n != 1 {
		t.Errorf("the COMMIT cut after its answer left %d rows, want 1: it committed", n)
	}
}
