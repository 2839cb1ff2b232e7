package faults

import (
	"fmt"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/mysqlwire"
)

// Database engines a database Link speaks (WithEngine): the wire protocol
// its watch toxic reads to tell statements apart.
const (
	EnginePostgres = "postgres"
	EngineMySQL    = "mysql"
)

// checkEngine names the engines a Link knows.
func checkEngine(engine string) error {
	switch engine {
	case EnginePostgres, EngineMySQL:
		return nil
	}
	return fmt.Errorf("faults: database engine %q: want %q or %q", engine, EnginePostgres, EngineMySQL)
}

// The watch toxic and the replies toxic are the same for every engine:
// the rule, the landing, the hold, the barrier and the cut after an answer
// act on wireEvents and answerMarks. What differs is how the bytes of one
// connection are read, which these two interfaces hide: a wireScanner on
// the client's side (PostgreSQL's pgScanner, or myScanner over
// mysqlwire.Scanner) and an answerScanner on the database's side.

// wireScanner follows the client's side of one connection.
type wireScanner interface {
	// scan reads b, the bytes not yet passed, from their first unread
	// message on. It returns how many leading bytes may pass and why it
	// stopped: it needs more bytes (scanMore), or b[n:n+size] is a whole
	// message that runs a statement, or commits one (scanEvent, ev), or the
	// stream cannot be followed (scanRefuse). After an event the caller
	// either passes the message and scans on from b[n+size:], or keeps it
	// and, once it goes, scans on from just after it.
	scan(b []byte) (n int, res scanResult, size int, ev wireEvent)
	// session reports whether the connection has started a session of the
	// engine's protocol (Link.DBSessions counts them).
	session() bool
	// started reports whether the connection has sent a statement (until
	// then it may be a session still starting, which the database's list
	// of sessions may not show yet).
	started() bool
	// refusal says why the scanner refused the stream, after scanRefuse.
	refusal() string
}

// answerMark is the end of the database's answer to one statement, in the
// chunk just read: its last byte is at end-1, and n numbers the answer as
// a wireEvent's prior counts (a statement whose prior is p is answered by
// the answer numbered p+1 or later).
type answerMark struct {
	end int
	n   int64
}

// answerScanner follows the database's side of one connection.
type answerScanner interface {
	// answers reads the next bytes the database sent and returns the
	// answers that end in them, in order, and the number of the answer the
	// bytes after the last of them belong to.
	answers(b []byte) (marks []answerMark, next int64)
}

// PostgreSQL: pgScanner is a wireScanner as it is.

func (s *pgScanner) session() bool { return s.phase == phaseTyped }

func (s *pgScanner) started() bool { return s.statements }

func (s *pgScanner) refusal() string {
	return "the connection's stream cannot be followed (TLS or GSS encryption, or not the PostgreSQL protocol), so faults cannot act on it: " +
		"give the target a DSN with sslmode=disable"
}

// pgAnswers numbers PostgreSQL's answers by their ReadyForQuery messages.
type pgAnswers struct {
	pgRepliesState
	seen int64
}

func (a *pgAnswers) answers(b []byte) ([]answerMark, int64) {
	var marks []answerMark
	for off := 0; off < len(b); {
		n, end := a.count(b[off:], 1)
		off += end
		if n == 0 {
			break
		}
		a.seen++
		marks = append(marks, answerMark{end: off, n: a.seen})
	}
	return marks, a.seen + 1
}

// MySQL and MariaDB: one mysqlwire.Scanner per connection, shared by its
// two directions (dbConn.my). The server speaks first, and the client's
// commands are read with the capabilities its greeting announced: the
// replies toxic on the database's side feeds the scanner the server's
// bytes, the watch toxic the client's, each before forwarding them. The
// scanner locks itself; each side keeps its own state apart.

// myScanner is a wireScanner over the client's side of a
// mysqlwire.Scanner. The scanner reads each byte once and reports the
// commands of a chunk at once; myScanner hands them out one scan at a time,
// with their offsets moved to the bytes the caller still holds.
type myScanner struct {
	s *mysqlwire.Scanner
	// fed counts the leading bytes of the next scan's b that the scanner
	// has read already; queue holds the events read and not yet handed out,
	// their offsets in that b.
	fed   int
	queue []mysqlwire.Event
	// sent: the client has sent a command (its connection phase is over).
	sent   bool
	reason string
}

func newMyScanner(s *mysqlwire.Scanner) *myScanner { return &myScanner{s: s} }

func (m *myScanner) scan(b []byte) (n int, res scanResult, size int, ev wireEvent) {
	if m.fed < len(b) {
		for _, e := range m.s.Client(b[m.fed:]) {
			e.Start += m.fed
			e.End += m.fed
			m.queue = append(m.queue, e)
		}
		m.fed = len(b)
	}
	for len(m.queue) > 0 {
		e := m.queue[0]
		m.queue = m.queue[1:]
		switch e.Kind {
		case mysqlwire.EventStop:
			m.reason = e.Reason
			if e.TLS {
				m.reason = "the client asked for TLS on the database link, which hides the statements, so faults cannot act on it: " +
					"give the target a DSN without TLS (tls=false; ssl-mode=DISABLED)"
			}
			return max(e.Start, 0), scanRefuse, 0, wireEvent{}
		case mysqlwire.EventCommand:
			m.sent = true
			if ev, ok := myEvent(e.Command); ok {
				m.shift(e.End)
				return e.Start, scanEvent, e.End - e.Start, ev
			}
		}
	}
	n = max(len(b)-m.s.ClientPartial(), 0)
	m.shift(n)
	return n, scanMore, 0, wireEvent{}
}

// shift moves the offsets k bytes on: the caller's next b starts there.
func (m *myScanner) shift(k int) {
	m.fed -= k
	for i := range m.queue {
		m.queue[i].Start -= k
		m.queue[i].End -= k
	}
}

func (m *myScanner) session() bool { return m.sent }

func (m *myScanner) started() bool { return m.sent }

func (m *myScanner) refusal() string { return m.reason }

// myEvent is the wireEvent of a command that runs SQL (a query, an
// execution of a prepared statement); a command that runs none (a
// prepare, a ping, a close) is no event, as PostgreSQL's Parse is not.
func myEvent(c mysqlwire.Command) (wireEvent, bool) {
	switch c.Code {
	case mysqlwire.ComQuery, mysqlwire.ComStmtExecute, mysqlwire.ComStmtBulkExecute:
	default:
		return wireEvent{}, false
	}
	// Commands are numbered from 1 and each answer carries its command's
	// number: the command before this one is answered by number ID-1.
	ev := wireEvent{sql: c.SQL, kind: LandedStatement, prior: int64(c.ID) - 1}
	switch c.Effect {
	case mysqlwire.EffectCommit:
		ev.kind, ev.effect = idemcheck.LandedCommit, true
	case mysqlwire.EffectAutocommitWrite:
		ev.kind, ev.effect = idemcheck.LandedAutocommitWrite, true
	}
	switch c.Write {
	case mysqlwire.WriteCommit:
		ev.writeKind = idemcheck.LandedCommit
	case mysqlwire.WriteAutocommit:
		ev.writeKind = idemcheck.LandedAutocommitWrite
	case mysqlwire.WriteInTransaction:
		ev.writeKind = idemcheck.LandedWrite
	}
	return ev, true
}

// myAnswers is an answerScanner over the server's side of a
// mysqlwire.Scanner: answers are numbered by their command's ID.
type myAnswers struct{ s *mysqlwire.Scanner }

func (a myAnswers) answers(b []byte) ([]answerMark, int64) {
	var marks []answerMark
	for _, e := range a.s.Server(b) {
		// Command 0 is an ERR the server sent unasked (it is closing the
		// connection): no statement's answer.
		if e.Kind == mysqlwire.EventAnswer && e.Command.ID > 0 {
			marks = append(marks, answerMark{end: e.End, n: int64(e.Command.ID)})
		}
	}
	return marks, int64(a.s.Answering())
}
