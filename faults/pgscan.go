package faults

import (
	"bytes"
	"encoding/binary"

	"github.com/idemcheck/idemcheck"
)

// Codes of the untyped messages a connection may start with.
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
	pgCancelRequest = 80877102
	// A StartupMessage carries the protocol version instead: major 3 in the
	// high 16 bits (3.0 and 3.2 exist).
	pgProtocolMajor3 = 3
	// maxStartup bounds the length of an untyped message; PostgreSQL itself
	// rejects startup packets over 10000 bytes.
	maxStartup = 10000
)

type pgPhase int

type scanResult int

// wireEvent is a message that runs a statement, or commits one: what a rule
// may act on.
type wireEvent struct {
	// sql is the statement's text (for a Sync, the write it commits).
	sql string
	// kind is what the statement is, as a Landing's Kind.
	kind string
	// effect: the default match acts here. The message makes a write
	// durable: a COMMIT, a simple Query that writes outside a block, a Sync
	// that ends an implicit transaction that wrote.
	effect bool
	// sync: the message is a Sync, which carries no SQL of its own; an
	// explicit match never acts on it.
	sync bool
	// writeKind is set when the statement writes or commits (a write
	// barrier holds it): idemcheck.LandedCommit,
	// idemcheck.LandedAutocommitWrite or idemcheck.LandedWrite.
	writeKind string
	// prior counts the messages the database answers with a ReadyForQuery
	// (a simple Query, a Sync, a function call) that the connection sent
	// before this one: the statement has finished once more replies than
	// that came back (dbConn.finished).
	prior int64
}

// stmt is a prepared statement or portal the scanner follows.
type stmt struct {
	sql   string
	class sqlClass
}

// pgScanner follows one connection's frontend messages.
type pgScanner struct {
	phase pgPhase
	// skip counts the bytes of the current message that pass unread.
	skip int
	// The prepared statements and portals, by name ("" is the unnamed
	// one).
	stmts, portals map[string]stmt
	// inBlock: the connection is inside a transaction block (BEGIN ran,
	// no COMMIT or ROLLBACK yet).
	inBlock bool
	// pending is the first write run outside a block by Execute since the
	// last Sync: it commits at the next Sync.
	pending string
	// statements: a message carrying SQL (a Query or a Parse) was seen.
	statements bool
	// ready counts the messages seen that the database answers with a
	// ReadyForQuery.
	ready int64
}

func newPGScanner() pgScanner {
	return pgScanner{stmts: map[string]stmt{}, portals: map[string]stmt{}}
}

// scan reads b, the bytes not yet passed, from their first unread message
// on. It returns how many leading bytes may pass and why it stopped: it
// needs more bytes, or b[n:n+size] is a whole message that runs a statement
// (ev), or the stream cannot be followed. After an event the caller either
// passes the message and scans on from b[n+size:], or keeps it.
func (s *pgScanner) scan(b []byte) (n int, res scanResult, size int, ev wireEvent) {
	for {
		rest := b[n:]
		if s.skip > 0 {
			k := min(s.skip, len(rest))
			n += k
			s.skip -= k
			if s.skip > 0 {
				return n, scanMore, 0, wireEvent{}
			}
			continue
		}
		switch s.phase {
		case phasePassive:
			return len(b), scanMore, 0, wireEvent{}
		case phaseStartup:
			if len(rest) < 8 {
				return n, scanMore, 0, wireEvent{}
			}
			length := int(binary.BigEndian.Uint32(rest[0:4]))
			code := binary.BigEndian.Uint32(rest[4:8])
			if length < 8 || length > maxStartup {
				// A TLS record (0x16 0x03 ...) or a GSS token after the
				// server accepted encryption: the SQL would be invisible.
				return n, scanRefuse, 0, wireEvent{}
			}
			switch {
			case code == pgSSLRequest || code == pgGSSENCRequest:
				// The server answers with one byte; if it refused, the
				// client goes on with a StartupMessage on this connection.
			case code == pgCancelRequest:
				s.phase = phasePassive
			case code>>16 == pgProtocolMajor3:
				// Authentication ends with a ReadyForQuery: the startup
				// counts as a message the database answers so.
				s.phase = phaseTyped
				s.ready++
			default:
				return n, scanRefuse, 0, wireEvent{}
			}
			s.skip = length
		case phaseTyped:
			if len(rest) < 5 {
				return n, scanMore, 0, wireEvent{}
			}
			typ := rest[0]
			length := int(binary.BigEndian.Uint32(rest[1:5]))
			if length < 4 {
				return n, scanRefuse, 0, wireEvent{} // not the protocol: its framing is lost
			}
			total := 1 + length
			switch typ {
			case 'Q', 'P', 'B', 'E', 'C', 'S':
			default:
				if typ == 'F' { // a function call: answered with a ReadyForQuery
					s.ready++
				}
				s.skip = total
				continue
			}
			if len(rest) < total {
				return n, scanMore, 0, wireEvent{}
			}
			prior := s.ready
			if typ == 'Q' || typ == 'S' {
				s.ready++
			}
			if ev, ok := s.inspect(typ, rest[5:total]); ok {
				ev.prior = prior
				return n, scanEvent, total, ev
			}
			n += total
		}
	}
}

// inspect follows the statement and portal names a message creates or
// destroys and the connection's transaction state, and reports whether the
// message runs a statement, or commits one.
func (s *pgScanner) inspect(typ byte, body []byte) (wireEvent, bool) {
	switch typ {
	case 'Q', 'P':
		s.statements = true
	}
	switch typ {
	case 'Q': // query string
		q, _ := cstring(body)
		// A simple query destroys the unnamed statement and portal.
		delete(s.stmts, "")
		delete(s.portals, "")
		ev := wireEvent{sql: q, kind: LandedStatement}
		for _, c := range classifySQL(q) {
			if ev.writeKind == "" && (c == sqlWrite || c == sqlCommit || c == sqlChain) {
				ev.writeKind = kindOfWrite(c, s.inBlock)
			}
			if k := s.step(c); k != "" && !ev.effect {
				ev.kind, ev.effect = k, true
			}
		}
		return ev, true
	case 'P': // statement name, query string, parameter types
		name, rest := cstring(body)
		q, _ := cstring(rest)
		var c sqlClass
		if cs := classifySQL(q); len(cs) > 0 {
			c = cs[0] // the extended protocol takes one statement
		}
		s.stmts[name] = stmt{sql: q, class: c}
	case 'B': // portal name, statement name, parameters
		portal, rest := cstring(body)
		name, _ := cstring(rest)
		if st, ok := s.stmts[name]; ok {
			s.portals[portal] = st
		} else {
			delete(s.portals, portal)
		}
	case 'E': // portal name, row limit
		portal, _ := cstring(body)
		st, ok := s.portals[portal]
		if !ok {
			return wireEvent{}, false
		}
		ev := wireEvent{sql: st.sql, kind: LandedStatement}
		if c := st.class; c == sqlWrite || c == sqlCommit || c == sqlChain {
			ev.writeKind = kindOfWrite(c, s.inBlock)
		}
		switch k := s.step(st.class); k {
		case idemcheck.LandedAutocommitWrite:
			// It runs now and commits at the next Sync, with whatever
			// else runs before it: the Sync is where it lands.
			ev.kind = k
			if s.pending == "" {
				s.pending = st.sql
			}
		case idemcheck.LandedCommit:
			ev.kind, ev.effect = k, true
			s.pending = ""
		}
		return ev, true
	case 'S': // Sync: an implicit transaction ends here, and commits
		if s.pending == "" || s.inBlock {
			return wireEvent{}, false
		}
		ev := wireEvent{sql: s.pending, kind: idemcheck.LandedAutocommitWrite, effect: true, sync: true}
		s.pending = ""
		return ev, true
	case 'C': // 'S' or 'P', name
		if len(body) > 0 {
			name, _ := cstring(body[1:])
			switch body[0] {
			case 'S':
				delete(s.stmts, name)
			case 'P':
				delete(s.portals, name)
			}
		}
	}
	return wireEvent{}, false
}

// step moves the connection's transaction state past a statement of class
// c and returns where a write's effect lands with it: LandedCommit for a
// commit, LandedAutocommitWrite for a write outside a block, else "".
// A COMMIT counts wherever it is sent, as the match on COMMIT always did.
func (s *pgScanner) step(c sqlClass) string {
	switch c {
	case sqlBegin:
		// In an implicit transaction (extended protocol, before Sync) a
		// BEGIN turns it into a block: its writes commit with the block.
		s.inBlock, s.pending = true, ""
	case sqlCommit:
		s.inBlock = false
		return idemcheck.LandedCommit
	case sqlChain:
		s.inBlock = true
		return idemcheck.LandedCommit
	case sqlEndBlock:
		s.inBlock, s.pending = false, ""
	case sqlWrite:
		if !s.inBlock {
			return idemcheck.LandedAutocommitWrite
		}
	}
	return ""
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}
