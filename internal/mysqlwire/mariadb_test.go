package mysqlwire_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/internal/mysqlwire"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
)

func TestMain(m *testing.M) {
	// The cut connections make the driver log; the tests say what matters.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	mysqltest.Main(m)
}

// seen is what the relay saw of one connection: every event, with its
// offsets made absolute in its direction's stream, and both streams.
type seen struct {
	mu      sync.Mutex
	events  []absEvent
	up      []byte // client to server
	down    []byte // server to client
	bad     []string
	done    sync.WaitGroup // both directions have ended
	scanner *mysqlwire.Scanner
}

type absEvent struct {
	mysqlwire.Event
	start, end int // offsets in the direction's whole stream
	up         bool
}

// relay is a loopback TCP relay that feeds both directions of each
// connection through a Scanner before forwarding them, as a fault's link
// would.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*seen
	wg     sync.WaitGroup
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() {
		ln.Close()
		r.wg.Wait()
	})
	return r
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		sc, rec := mysqlwire.New(), &seen{}
		rec.scanner = sc
		r.mu.Lock()
		r.conns = append(r.conns, rec)
		r.mu.Unlock()
		r.wg.Add(2)
		rec.done.Add(2)
		go r.pipe(c, s, sc.Client, rec, true)
		go r.pipe(s, c, sc.Server, rec, false)
	}
}

// pipe scans what src sends, then forwards it to dst.
func (r *relay) pipe(src, dst net.Conn, scan func([]byte) []mysqlwire.Event, rec *seen, up bool) {
	defer r.wg.Done()
	defer rec.done.Done()
	defer dst.Close()
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b := buf[:n]
			evs := scan(b)
			rec.mu.Lock()
			stream := &rec.down
			if up {
				stream = &rec.up
			}
			base := len(*stream)
			*stream = append(*stream, b...)
			for _, e := range evs {
				if e.End < 0 || e.End > n || e.Start > e.End {
					rec.bad = append(rec.bad, fmt.Sprintf("%s event at %d..%d in a chunk of %d", e.Kind, e.Start, e.End, n))
				}
				rec.events = append(rec.events, absEvent{Event: e, start: base + e.Start, end: base + e.End, up: up})
			}
			rec.mu.Unlock()
			if _, werr := dst.Write(b); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// connections returns what the relay saw of each connection so far.
func (r *relay) connections() []*seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*seen(nil), r.conns...)
}

// packetsEnd walks whole packets from start and reports whether they end
// exactly at end.
func packetsEnd(stream []byte, start, end int) bool {
	i := start
	for i < end {
		if i+4 > len(stream) {
			return false
		}
		i += 4 + (int(stream[i]) | int(stream[i+1])<<8 | int(stream[i+2])<<16)
	}
	return i == end
}

// TestAgainstMariaDB runs a real client on a real MariaDB through the
// relay and checks what the scanner saw: each command's kind, text and
// class, each answer's end with OK or ERR and the transaction flags, and
// that every event's offsets fall on the packets they name.
func TestAgainstMariaDB(t *testing.T) {
	dsn := mysqltest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, u.Host)
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", r.ln.Addr().String(), strings.TrimPrefix(u.Path, "/")
	cfg.InterpolateParams = false // so the driver sends COM_STMT_* for arguments
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runWorkload(ctx, t, conn)
	conn.Close()
	db.Close()

	conns := r.connections()
	if len(conns) != 1 {
		t.Fatalf("%d connections through the relay, want 1", len(conns))
	}
	rec := conns[0]
	rec.done.Wait() // the client's COM_QUIT has been scanned
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.bad {
		t.Error(b)
	}
	checkOffsets(t, rec)
	got := describe(rec.events)
	want := []string{
		"connected OK",
		"command COM_QUERY other CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUERY begin START TRANSACTION",
		"answer COM_QUERY OK trans=true auto=true",
		"command COM_QUERY write INSERT INTO t VALUES (1, 'a') write=in-transaction",
		"answer COM_QUERY OK trans=true auto=true",
		"command COM_QUERY commit COMMIT effect=commit write=commit",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUERY write INSERT INTO t VALUES (2, 'b') effect=autocommit-write write=autocommit",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUERY write INSERT INTO t VALUES (2, 'dup') effect=autocommit-write write=autocommit",
		"answer COM_QUERY ERR 1062",
		"command COM_STMT_PREPARE write INSERT INTO t VALUES (?, ?)",
		"answer COM_STMT_PREPARE OK",
		"command COM_STMT_EXECUTE write INSERT INTO t VALUES (?, ?) effect=autocommit-write write=autocommit",
		"answer COM_STMT_EXECUTE OK trans=false auto=true",
		"command COM_STMT_EXECUTE write INSERT INTO t VALUES (?, ?) effect=autocommit-write write=autocommit",
		"answer COM_STMT_EXECUTE OK trans=false auto=true",
		"command COM_STMT_CLOSE other INSERT INTO t VALUES (?, ?) noreply",
		"command COM_QUERY read SELECT id, v FROM t ORDER BY id",
		"answer COM_QUERY OK trans=false auto=true rows=4",
		"command COM_STMT_PREPARE read SELECT v FROM t WHERE id > ?",
		"answer COM_STMT_PREPARE OK",
		"command COM_STMT_EXECUTE read SELECT v FROM t WHERE id > ?",
		"answer COM_STMT_EXECUTE OK trans=false auto=true rows=3",
		"command COM_STMT_EXECUTE read SELECT v FROM t WHERE id > ?",
		"answer COM_STMT_EXECUTE OK trans=false auto=true rows=2",
		"command COM_STMT_CLOSE other SELECT v FROM t WHERE id > ? noreply",
		"command COM_QUERY set-autocommit SET autocommit=0",
		"answer COM_QUERY OK trans=false auto=false",
		"command COM_QUERY write UPDATE t SET v = 'z' WHERE id = 1 write=in-transaction",
		"answer COM_QUERY OK trans=true auto=false",
		"command COM_QUERY set-autocommit SET autocommit=1 effect=commit",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUIT other  noreply",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// runWorkload is what the client does: a transaction, autocommitted
// writes (one of them refused), a prepared write executed twice, reads
// with text and binary rows, and autocommit turned off and on.
func runWorkload(ctx context.Context, t *testing.T, conn *sql.Conn) {
	t.Helper()
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(ctx, q, args...)
		return err
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))"))
	tx, err := conn.BeginTx(ctx, nil)
	must(err)
	_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (1, 'a')")
	must(err)
	must(tx.Commit())
	must(exec("INSERT INTO t VALUES (2, 'b')"))
	var me *mysql.MySQLError
	if err := exec("INSERT INTO t VALUES (2, 'dup')"); !errors.As(err, &me) || me.Number != 1062 {
		t.Fatalf("duplicate insert: %v, want error 1062", err)
	}
	st, err := conn.PrepareContext(ctx, "INSERT INTO t VALUES (?, ?)")
	must(err)
	_, err = st.ExecContext(ctx, 3, "c")
	must(err)
	_, err = st.ExecContext(ctx, 4, "d")
	must(err)
	must(st.Close())
	countRows := func(rows *sql.Rows, err error) int {
		t.Helper()
		must(err)
		n := 0
		for rows.Next() {
			n++
		}
		must(rows.Err())
		must(rows.Close())
		return n
	}
	if n := countRows(conn.QueryContext(ctx, "SELECT id, v FROM t ORDER BY id")); n != 4 {
		t.Fatalf("%d rows, want 4", n)
	}
	sel, err := conn.PrepareContext(ctx, "SELECT v FROM t WHERE id > ?")
	must(err)
	countRows(sel.QueryContext(ctx, 1))
	countRows(sel.QueryContext(ctx, 2))
	must(sel.Close())
	must(exec("SET autocommit=0"))
	must(exec("UPDATE t SET v = 'z' WHERE id = 1"))
	must(exec("SET autocommit=1"))
}

// describe writes events as one line each, for comparison.
func describe(evs []absEvent) []string {
	var out []string
	for _, e := range evs {
		c, a := e.Command, e.Answer
		switch e.Kind {
		case mysqlwire.EventConnected:
			out = append(out, "connected "+okOrErr(a))
		case mysqlwire.EventCommand:
			s := fmt.Sprintf("command %s %s %s", c.Name(), c.Class(), c.SQL)
			if c.Effect != mysqlwire.NoEffect {
				s += " effect=" + c.Effect.String()
			}
			if c.Write != mysqlwire.NoWrite {
				s += " write=" + c.Write.String()
			}
			if !c.Reply {
				s += " noreply"
			}
			out = append(out, s)
		case mysqlwire.EventAnswer:
			s := fmt.Sprintf("answer %s %s", c.Name(), okOrErr(a))
			if a.HasStatus {
				s += fmt.Sprintf(" trans=%v auto=%v", a.InTransaction(), a.Autocommit())
			}
			if a.Rows > 0 {
				s += fmt.Sprintf(" rows=%d", a.Rows)
			}
			out = append(out, s)
		default:
			out = append(out, fmt.Sprintf("%s %s", e.Kind, e.Reason))
		}
	}
	return out
}

func okOrErr(a mysqlwire.Answer) string {
	if a.OK {
		return "OK"
	}
	return fmt.Sprintf("ERR %d", a.ErrCode)
}

// checkOffsets checks that each event's offsets fall on its packets: a
// command starts with a header of sequence 0 and its command byte, and
// both a command and an answer are whole packets from start to end.
func checkOffsets(t *testing.T, rec *seen) {
	t.Helper()
	for _, e := range rec.events {
		stream := rec.down
		if e.up {
			stream = rec.up
		}
		if e.start < 0 || e.end > len(stream) || !packetsEnd(stream, e.start, e.end) {
			t.Errorf("%s %s: %d..%d are not whole packets of the stream", e.Kind, e.Command.Name(), e.start, e.end)
			continue
		}
		if e.Kind == mysqlwire.EventCommand && (stream[e.start+3] != 0 || stream[e.start+4] != e.Command.Code) {
			t.Errorf("command %s does not start at %d", e.Command.Name(), e.start)
		}
	}
}

// TestMariaDBCommandLineClient runs MariaDB's own client (libmariadb)
// through the relay: another client's capabilities (MariaDB's progress
// reports, its own queries at connect) and several statements in one
// COM_QUERY.
func TestMariaDBCommandLineClient(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		if mysqltest.Required() {
			t.Fatal("the mariadb client is missing (it comes with mariadb-server)")
		}
		t.Skip("the mariadb client is missing (it comes with mariadb-server)")
	}
	dsn := mysqltest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, u.Host)
	host, port, _ := net.SplitHostPort(r.ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// With $$ as its delimiter the client sends what lies between two as
	// one COM_QUERY, semicolons and all.
	script := "CREATE TABLE t (id INT PRIMARY KEY)$$ BEGIN$$ INSERT INTO t VALUES (1)$$ COMMIT$$ " +
		"INSERT INTO t VALUES (2); SELECT id FROM t ORDER BY id; SELECT id FROM t WHERE id = 1 FOR UPDATE$$ " +
		"SET autocommit=0$$ DELETE FROM t WHERE id = 2$$ COMMIT$$"
	cmd := exec.CommandContext(ctx, bin, "--no-defaults", "--protocol=tcp", "-h", host, "-P", port, "-u", "root",
		"--skip-ssl", "--no-auto-rehash", "--batch", "--delimiter=$$", "-e", script, strings.TrimPrefix(u.Path, "/"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	conns := r.connections()
	if len(conns) != 1 {
		t.Fatalf("%d connections through the relay, want 1", len(conns))
	}
	rec := conns[0]
	rec.done.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.bad {
		t.Error(b)
	}
	checkOffsets(t, rec)
	// This client leaves CLIENT_DEPRECATE_EOF unset: its result sets end
	// with EOF packets.
	if caps, _ := rec.scanner.Capabilities(); caps&mysqlwire.ClientDeprecateEOF != 0 || caps&mysqlwire.ClientMultiStatements == 0 {
		t.Logf("capabilities %#x: the test no longer covers EOF packets or several statements a query", caps)
	}
	got := describe(rec.events)
	want := []string{
		"connected OK",
		"command COM_QUERY other CREATE TABLE t (id INT PRIMARY KEY)",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUERY begin BEGIN",
		"answer COM_QUERY OK trans=true auto=true",
		"command COM_QUERY write INSERT INTO t VALUES (1) write=in-transaction",
		"answer COM_QUERY OK trans=true auto=true",
		"command COM_QUERY commit COMMIT effect=commit write=commit",
		"answer COM_QUERY OK trans=false auto=true",
		"command COM_QUERY write INSERT INTO t VALUES (2); SELECT id FROM t ORDER BY id; SELECT id FROM t WHERE id = 1 FOR UPDATE effect=autocommit-write write=autocommit",
		"answer COM_QUERY OK trans=false auto=true rows=3",
		"command COM_QUERY set-autocommit SET autocommit=0",
		"answer COM_QUERY OK trans=false auto=false",
		"command COM_QUERY write DELETE FROM t WHERE id = 2 write=in-transaction",
		"answer COM_QUERY OK trans=true auto=false",
		"command COM_QUERY commit COMMIT effect=commit write=commit",
		"answer COM_QUERY OK trans=false auto=false",
		"command COM_QUIT other  noreply",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
