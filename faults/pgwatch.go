package faults

import (
	"bytes"
	"encoding/binary"
	"errors"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// pgWatchType is the toxiproxy type name of pgWatchToxic.
const pgWatchType = "idemcheck_pg_watch"

// What pgWatchToxic does to the message it acts on. actionArmed defers
// to the rule armed at run time (Link.Arm).
const (
	actionCut   = "cut"
	actionHold  = "hold"
	actionArmed = "armed"
)

// armedRule is a db-cut or db-hold armed on a watched proxy for a while:
// its nth counts from the moment it was armed.
type armedRule struct {
	re      *regexp.Regexp
	nth     int64
	action  string
	fault   Fault
	matches atomic.Int64
}

func init() {
	toxics.Register(pgWatchType, new(pgWatchToxic))
}

// ErrHoldEnded is returned by HoldEvent.Release when the held message can no
// longer be forwarded: its connection ended first (the target went away, or
// the Link was closed) or Cut was called first. The message never reached
// the database.
var ErrHoldEnded = errors.New("faults: the held connection had already ended; nothing was forwarded")

// ErrHoldReleased is returned by HoldEvent.Cut when Release came first and
// the held message has already been forwarded.
var ErrHoldReleased = errors.New("faults: the held message had already been released")

// HoldEvent reports that a db-hold fault stopped a statement on its way to
// the database: the target has reached that point and is waiting for the
// reply. Exactly one of Release or Cut decides what happens to it; until
// then the connection stays held (new bytes from the target queue behind the
// held message). If the target closes its connection first, the message is
// dropped and the database connection closed, as Cut would do.
type HoldEvent struct {
	// Fault is the db-hold fault (normalized) whose proxy held the message.
	Fault Fault
	// SQL is the text of the held statement.
	SQL string
	// Match is the number of the match on the fault's proxy: its nth.
	Match int

	h *hold
}

// Release forwards the held message and lets the connection run on. It
// returns once the proxy's writer to the database has taken the message, or
// ErrHoldEnded if it never will. The watcher learns that a target went
// away only when toxiproxy reads the end of its connection, a moment after
// the fact: to drop the statement of a target just killed, call Cut, which
// never forwards.
func (e HoldEvent) Release() error {
	if e.h == nil {
		return ErrHoldEnded
	}
	if e.h.decide(outcomeReleased) != outcomeReleased {
		return ErrHoldEnded
	}
	return nil
}

// Cut drops the held message and closes its connection, both sides: the
// database sees the target's connection end mid-transaction and rolls the
// transaction back, the target sees a connection error. It returns once
// the close is under way; it returns nil too when the connection had already
// ended (nothing was forwarded either way), and ErrHoldReleased when Release
// came first.
func (e HoldEvent) Cut() error {
	if e.h == nil {
		return nil
	}
	if e.h.decide(outcomeCut) == outcomeReleased {
		return ErrHoldReleased
	}
	return nil
}

type outcome int

const (
	outcomeReleased outcome = iota + 1
	outcomeCut
	outcomeEnded
)

// hold is one held message. decision carries the first of Release and Cut to
// the toxic's goroutine, which alone acts on the connection and then
// resolves the hold.
type hold struct {
	event    HoldEvent
	decision chan outcome
	done     chan struct{}
	once     sync.Once
	outcome  outcome
	// delivered is touched only by the toxic's goroutine: the event was
	// received from Link.Held, or will never be (the Link closed).
	delivered bool
}

func newHold(f Fault, sql string, match int64) *hold {
	h := &hold{decision: make(chan outcome, 1), done: make(chan struct{})}
	h.event = HoldEvent{Fault: f, SQL: sql, Match: int(match), h: h}
	return h
}

func (h *hold) decide(o outcome) outcome {
	select {
	case h.decision <- o:
	default: // another decision is already on its way; the first wins
	}
	<-h.done
	return h.outcome
}

func (h *hold) resolve(o outcome) {
	h.once.Do(func() {
		h.outcome = o
		close(h.done)
	})
}

// hub is how a Link's watch toxics reach the harness.
type hub struct {
	held chan HoldEvent
	done chan struct{} // closed by Link.Close
}

// pgWatchToxic follows the PostgreSQL frontend protocol on the upstream
// direction of a database link and acts on the nth statement, counted over
// every connection through its proxy, whose SQL matches Match: "cut" closes
// both sides without forwarding it, "hold" keeps it and reports a HoldEvent.
// Everything else passes unchanged, and at once: it buffers only the message
// it is reading, and only for the message types that carry SQL or name it.
//
// It acts at the moment a statement is about to run: a simple Query ('Q'),
// or an Execute ('E') of a portal bound from a prepared statement whose SQL
// matches. Parse ('P') only names the SQL, which is why the watcher follows
// statement and portal names through Parse, Bind ('B') and Close ('C'): a
// client that caches a prepared COMMIT re-runs it with Bind and Execute
// alone, which carry no SQL text.
type pgWatchToxic struct {
	Match  string `json:"match"`
	Nth    int64  `json:"nth"`
	Action string `json:"action"`

	// Set by bind before the proxy accepts a connection, read-only after.
	re    *regexp.Regexp
	fault Fault
	hub   *hub

	matches atomic.Int64
	// armed is the rule in force on a watched proxy (action "armed"); nil
	// lets everything pass.
	armed atomic.Pointer[armedRule]
}

func (t *pgWatchToxic) bind(h *hub, f Fault) error {
	re, err := regexp.Compile(t.Match)
	if err != nil {
		return err
	}
	t.re, t.hub, t.fault = re, h, f
	return nil
}

// pgWatchState is one connection's state.
type pgWatchState struct {
	scan pgScanner
	// pend holds the bytes read and not yet forwarded: an incomplete
	// message, or a held one and what came after it.
	pend     []byte
	held     *hold
	heldSize int
}

func (t *pgWatchToxic) NewState() any {
	return &pgWatchState{scan: newPGScanner(t.re)}
}

func (t *pgWatchToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*pgWatchState)
	for {
		if st.held != nil {
			if !t.waitHold(stub, st) {
				return
			}
			continue
		}
		select {
		case <-stub.Interrupt:
			return // st keeps what is pending for the next Pipe
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			st.pend = append(st.pend, c.Data...)
			if !t.advance(stub, st) {
				return
			}
		}
	}
}

// advance forwards what the scanner lets pass and acts on a match. It
// reports false when the connection has been closed.
func (t *pgWatchToxic) advance(stub *toxics.ToxicStub, st *pgWatchState) bool {
	pass := 0
	for {
		n, res, size, sql := st.scan.scan(st.pend[pass:])
		pass += n
		switch res {
		case scanMore:
			forward(stub, st, pass)
			return true
		case scanRefuse:
			forward(stub, st, pass)
			stub.Close()
			drain(stub)
			return false
		}
		action, fault, nth := t.Action, t.fault, t.Nth
		var k int64
		if action == actionArmed {
			r := t.armed.Load()
			if r == nil || !r.re.MatchString(sql) {
				pass += size
				continue
			}
			action, fault, nth = r.action, r.fault, r.nth
			k = r.matches.Add(1)
		} else {
			k = t.matches.Add(1)
		}
		if k != nth {
			pass += size
			continue
		}
		// The work sent before the match reaches the database; the
		// matching message does not (yet).
		forward(stub, st, pass)
		if action == actionCut {
			stub.Close()
			drain(stub)
			return false
		}
		st.held, st.heldSize = newHold(fault, sql, k), size
		return true
	}
}

// waitHold waits for one thing to happen to a held message and reports
// false when the connection has been closed (or the toxic interrupted).
func (t *pgWatchToxic) waitHold(stub *toxics.ToxicStub, st *pgWatchState) bool {
	h := st.held
	var deliver chan<- HoldEvent
	var linkDone <-chan struct{}
	if !h.delivered {
		deliver, linkDone = t.hub.held, t.hub.done
	}
	select {
	case deliver <- h.event:
		h.delivered = true
	case <-linkDone:
		h.delivered = true // nobody will receive it; the close of the connections follows
	case o := <-h.decision:
		select {
		case <-t.hub.done:
			// The Link is closing its connections, this one included:
			// forwarding now would report a release that never reaches
			// the database.
			o = outcomeEnded
		default:
		}
		if o == outcomeReleased {
			forward(stub, st, st.heldSize)
			st.held = nil
			h.resolve(outcomeReleased)
			return t.advance(stub, st)
		}
		stub.Close()
		h.resolve(o)
		drain(stub)
		return false
	case c := <-stub.Input:
		if c == nil {
			// The target closed its side (it was killed, say) while its
			// statement was held: the statement never reaches the database.
			stub.Close()
			h.resolve(outcomeEnded)
			return false
		}
		st.pend = append(st.pend, c.Data...)
	case <-stub.Interrupt:
		return false
	}
	return true
}

// forward passes the first n pending bytes. The slice handed on is never
// written again: later appends to pend land beyond it.
func forward(stub *toxics.ToxicStub, st *pgWatchState, n int) {
	if n == 0 {
		return
	}
	stub.Output <- &stream.StreamChunk{Data: st.pend[:n], Timestamp: time.Now()}
	st.pend = st.pend[n:]
	if len(st.pend) == 0 {
		st.pend = nil
	}
}

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

const (
	phaseStartup pgPhase = iota // untyped messages: SSLRequest, GSSENCRequest, StartupMessage
	phaseTyped                  // type byte, int32 length, body
	phasePassive                // a CancelRequest connection: nothing to watch
)

type scanResult int

const (
	scanMore   scanResult = iota // everything returned may pass; more bytes are needed
	scanMatch                    // the message after the passing bytes matches
	scanRefuse                   // the stream cannot be followed (encrypted): close it
)

// pgScanner follows one connection's frontend messages.
type pgScanner struct {
	re    *regexp.Regexp
	phase pgPhase
	// skip counts the bytes of the current message that pass unread.
	skip int
	// SQL of the prepared statements and portals whose SQL matches, by
	// name ("" is the unnamed one).
	stmts, portals map[string]string
}

func newPGScanner(re *regexp.Regexp) pgScanner {
	return pgScanner{re: re, stmts: map[string]string{}, portals: map[string]string{}}
}

// scan reads b, the bytes not yet passed, from their first unread message
// on. It returns how many leading bytes may pass and why it stopped: it
// needs more bytes, or b[n:n+size] is a whole message whose SQL (sql)
// matches, or the stream cannot be followed. After a match the caller
// either passes the message and scans on from b[n+size:], or keeps it.
func (s *pgScanner) scan(b []byte) (n int, res scanResult, size int, sql string) {
	for {
		rest := b[n:]
		if s.skip > 0 {
			k := min(s.skip, len(rest))
			n += k
			s.skip -= k
			if s.skip > 0 {
				return n, scanMore, 0, ""
			}
			continue
		}
		switch s.phase {
		case phasePassive:
			return len(b), scanMore, 0, ""
		case phaseStartup:
			if len(rest) < 8 {
				return n, scanMore, 0, ""
			}
			length := int(binary.BigEndian.Uint32(rest[0:4]))
			code := binary.BigEndian.Uint32(rest[4:8])
			if length < 8 || length > maxStartup {
				// A TLS record (0x16 0x03 ...) or a GSS token after the
				// server accepted encryption: the SQL would be invisible.
				return n, scanRefuse, 0, ""
			}
			switch {
			case code == pgSSLRequest || code == pgGSSENCRequest:
				// The server answers with one byte; if it refused, the
				// client goes on with a StartupMessage on this connection.
			case code == pgCancelRequest:
				s.phase = phasePassive
			case code>>16 == pgProtocolMajor3:
				s.phase = phaseTyped
			default:
				return n, scanRefuse, 0, ""
			}
			s.skip = length
		case phaseTyped:
			if len(rest) < 5 {
				return n, scanMore, 0, ""
			}
			typ := rest[0]
			length := int(binary.BigEndian.Uint32(rest[1:5]))
			if length < 4 {
				return n, scanRefuse, 0, "" // not the protocol: its framing is lost
			}
			total := 1 + length
			switch typ {
			case 'Q', 'P', 'B', 'E', 'C':
			default:
				s.skip = total
				continue
			}
			if len(rest) < total {
				return n, scanMore, 0, ""
			}
			if sql, ok := s.inspect(typ, rest[5:total]); ok {
				return n, scanMatch, total, sql
			}
			n += total
		}
	}
}

// inspect follows the statement and portal names a message creates or
// destroys, and reports whether it runs SQL that matches.
func (s *pgScanner) inspect(typ byte, body []byte) (string, bool) {
	switch typ {
	case 'Q': // query string
		q, _ := cstring(body)
		// A simple query destroys the unnamed statement and portal.
		delete(s.stmts, "")
		delete(s.portals, "")
		if s.re.MatchString(q) {
			return q, true
		}
	case 'P': // statement name, query string, parameter types
		name, rest := cstring(body)
		q, _ := cstring(rest)
		if s.re.MatchString(q) {
			s.stmts[name] = q
		} else {
			delete(s.stmts, name)
		}
	case 'B': // portal name, statement name, parameters
		portal, rest := cstring(body)
		stmt, _ := cstring(rest)
		if q, ok := s.stmts[stmt]; ok {
			s.portals[portal] = q
		} else {
			delete(s.portals, portal)
		}
	case 'E': // portal name, row limit
		portal, _ := cstring(body)
		if q, ok := s.portals[portal]; ok {
			return q, true
		}
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
	return "", false
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}
