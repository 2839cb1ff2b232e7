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

	"github.com/idemcheck/idemcheck"
)

// pgWatchType is the toxiproxy type name of pgWatchToxic.
const pgWatchType = "idemcheck_pg_watch"

// What pgWatchToxic does to the message it acts on. actionArmed defers
// to the rule armed at run time (Link.Arm).
const (
	actionCut      = "cut"
	actionCutAfter = "cut-after"
	actionHold     = "hold"
	actionArmed    = "armed"
)

// LandedStatement is the landing kind of a fault whose explicit match= chose
// a statement that is neither a COMMIT nor an autocommitted write (a BEGIN,
// say).
const LandedStatement = "statement"

// Landing is where a db-cut or db-hold acted: the statement it cut or held
// and what kind of statement that was. The zero Landing means the fault has
// not acted.
type Landing struct {
	// Fault is the fault (normalized) that acted.
	Fault Fault
	// Kind is idemcheck.LandedCommit (a COMMIT or END),
	// idemcheck.LandedAutocommitWrite (an INSERT, UPDATE, DELETE or MERGE
	// outside a transaction block), or LandedStatement.
	Kind string
	// SQL is the statement's text: the query string of a simple query, the
	// prepared statement's text in the extended protocol.
	SQL string
	// Match is the number of the match it acted on: its nth.
	Match int
	// Time is when it acted.
	Time time.Time
	// Seen is how many statements the fault matched while it was armed,
	// the one it acted on included (Link.Arm's disarm only): with an nth
	// never reached, an armed fault counts a target's effect writes.
	Seen int
	// LastKind is the kind (as Kind) of the last statement the fault
	// matched while it was armed (Link.Arm's disarm only): a counter of
	// effect writes tells from it whether a handler's last write is a
	// COMMIT or commits on its own.
	LastKind string
}

// Acted reports whether the fault acted.
func (l Landing) Acted() bool { return l.Kind != "" }

// watchRule is what a watch toxic acts on: a db-cut or db-hold, on its own
// proxy for the proxy's life, or armed on a watched proxy for a while (its
// nth then counts from the moment it was armed). re nil is the default
// match: the effect write.
type watchRule struct {
	re     *regexp.Regexp
	nth    int64
	action string
	fault  Fault

	mu      sync.Mutex
	matches int64
	last    string // the kind of the last statement matched
	landing Landing
	off     bool // disarmed: it neither counts nor acts any more
}

func newWatchRule(match string, nth int64, action string, f Fault) (*watchRule, error) {
	r := &watchRule{nth: nth, action: action, fault: f}
	if match != "" {
		re, err := regexp.Compile(match)
		if err != nil {
			return nil, err
		}
		r.re = re
	}
	return r, nil
}

// match reports whether ev is a statement the rule counts.
func (r *watchRule) match(ev pgEvent) bool {
	if r.re == nil {
		return ev.effect
	}
	return !ev.sync && r.re.MatchString(ev.sql)
}

// land counts a match and reports whether the rule acts on it, with the
// landing it records. The landing is recorded before the toxic acts, so
// whoever learns of the act (a connection error, a HoldEvent) finds it.
func (r *watchRule) land(ev pgEvent) (Landing, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off {
		return Landing{}, false
	}
	r.matches++
	r.last = ev.kind
	if r.matches != r.nth {
		return Landing{}, false
	}
	r.landing = Landing{Fault: r.fault, Kind: ev.kind, SQL: ev.sql, Match: int(r.matches), Time: time.Now()}
	return r.landing, true
}

// count is how many statements the rule has matched.
func (r *watchRule) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.matches
}

// disarm stops the rule and returns its landing: after it returns, the rule
// never acts, so a landing it did not report never happens.
func (r *watchRule) disarm() Landing {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.off = true
	l := r.landing
	l.Seen = int(r.matches)
	l.LastKind = r.last
	return l
}

// result returns the rule's landing so far.
func (r *watchRule) result() Landing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.landing
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

// ErrAnswerNotFollowed: the held message's connection goes through a proxy
// that does not follow the database's answers (HoldEvent.ReleaseHoldingAnswer).
var ErrAnswerNotFollowed = errors.New("faults: the held message's proxy does not follow the database's answers")

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
	// Landing is the kind of the held statement: idemcheck.LandedCommit,
	// idemcheck.LandedAutocommitWrite or LandedStatement (see Landing).
	Landing string

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
	if o, _ := e.h.decide(outcomeReleased, e.h.ends()...); o != outcomeReleased {
		return ErrHoldEnded
	}
	return nil
}

// ReleaseHoldingAnswer forwards the held message as Release does, and
// stops the database's answer to it on its way back: the returned
// AnswerHold's Held is closed once the database has answered the message
// (its ReadyForQuery came back) and the answer was held, before the target
// received it. A COMMIT or an autocommitted write held so has committed in
// the database while the target does not know it yet, so it has done
// nothing after it, in this database or anywhere else (a key store in
// Redis, a file, its memory). Forward or Drop the answer afterwards. Only
// the watched proxy (Link.WatchedAddr, Link.Arm) follows answers; on
// another, it returns ErrAnswerNotFollowed and releases nothing.
func (e HoldEvent) ReleaseHoldingAnswer() (*AnswerHold, error) {
	if e.h == nil || e.h.conn == nil {
		return nil, ErrHoldEnded
	}
	if !e.h.conn.followed.Load() {
		return nil, ErrAnswerNotFollowed
	}
	g := newAnswerGate(e.h.prior, e.h.conn.gone)
	e.h.conn.gate.Store(g)
	if err := e.Release(); err != nil {
		e.h.conn.gate.CompareAndSwap(g, nil)
		return nil, err
	}
	return &AnswerHold{g: g}, nil
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
	if o, _ := e.h.decide(outcomeCut, e.h.ends()...); o == outcomeReleased {
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

// hold is one held message. Its decision carries the first of Release and
// Cut to the toxic's goroutine, which alone acts on the connection and then
// resolves the hold.
type hold struct {
	event HoldEvent
	decision[outcome]
	// delivered is touched only by the toxic's goroutine: the event was
	// received from Link.Held, or will never be (the Link closed).
	delivered bool
	// conn and prior place the held message on its connection, for
	// ReleaseHoldingAnswer: its answer is the ReadyForQuery after prior
	// others. conn is nil for a hold that cannot follow its answer.
	conn  *pgConn
	prior int64
	// linkDone is closed when the hold's Link closes (nil for a hold no
	// Link reports).
	linkDone <-chan struct{}
}

// ends are what stop a wait for the hold's decision besides the decision
// itself: its connection's end, its Link's close.
func (h *hold) ends() []<-chan struct{} {
	var e []<-chan struct{}
	if h.conn != nil {
		e = append(e, h.conn.gone)
	}
	if h.linkDone != nil {
		e = append(e, h.linkDone)
	}
	return e
}

func newHold(l Landing) *hold {
	h := &hold{decision: newDecision[outcome]()}
	h.event = HoldEvent{Fault: l.Fault, SQL: l.SQL, Match: l.Match, Landing: l.Kind, h: h}
	return h
}

// decision is what happens to a held thing (a message, a reply), which
// two parties may offer at once (the harness's Release and Cut, a barrier,
// the end of the connection): offers carries the first offer to the
// goroutine that holds it, which acts and then resolves the decision with
// what it did (taken), waking every decide.
type decision[T any] struct {
	offers chan T
	done   chan struct{}
	once   sync.Once
	taken  T
}

func newDecision[T any]() decision[T] {
	return decision[T]{offers: make(chan T, 1), done: make(chan struct{})}
}

// decide offers v and returns what was done (the first offer, unless the
// holder resolved it otherwise), and whether it was done. It stops waiting
// when one of ends closes first (the held thing's connection ended, its
// Link closed): the holder may never act on an offer then, and a caller
// must not wait on it for ever; the offer stays queued for a holder that
// still comes to it.
func (d *decision[T]) decide(v T, ends ...<-chan struct{}) (T, bool) {
	select {
	case d.offers <- v:
	default: // another offer is already on its way; the first wins
	}
	var end [2]<-chan struct{}
	copy(end[:], ends)
	select {
	case <-d.done:
	case <-end[0]:
	case <-end[1]:
	}
	select {
	case <-d.done:
		return d.taken, true
	default:
		var zero T
		return zero, false
	}
}

// resolve records what was done; only the first call counts.
func (d *decision[T]) resolve(v T) {
	d.once.Do(func() {
		d.taken = v
		close(d.done)
	})
}

// hub is how a Link's watch toxics reach the harness.
type hub struct {
	held chan HoldEvent
	done chan struct{} // closed by Link.Close
}

// pgWatchToxic follows the PostgreSQL frontend protocol on the upstream
// direction of a database link and acts on the nth statement, counted over
// every connection through its proxy, that its rule matches: "cut" closes
// both sides without forwarding it, "hold" keeps it and reports a HoldEvent.
// Everything else passes unchanged, and at once: it buffers only the message
// it is reading, and only for the message types that carry SQL, name it or
// end an implicit transaction.
//
// With an explicit match it acts at the moment a statement whose SQL matches
// is about to run: a simple Query ('Q'), or an Execute ('E') of a portal
// bound from a prepared statement. Parse ('P') only names the SQL, which is
// why the watcher follows statement and portal names through Parse, Bind
// ('B') and Close ('C'): a client that caches a prepared COMMIT re-runs it
// with Bind and Execute alone, which carry no SQL text.
//
// Without one (the default) it acts on the effect write: the message that
// makes a write durable. That is the COMMIT (or END) of a transaction
// block; or a write (INSERT, UPDATE, DELETE, MERGE, WITH ... INSERT) sent
// outside any block, which commits on its own: in a simple Query the Query
// itself, in the extended protocol the Sync that ends the implicit
// transaction the write ran in (the write has run, its commit has not).
//
// Whether a connection is inside a transaction block is followed from the
// frontend side alone (BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK,
// ABORT, in simple queries and prepared statements), not from the status
// byte of the backend's ReadyForQuery. The frontend knows its state when it
// sends a statement, and the watcher sees it in the same order; the
// backend's status arrives a round trip later, so a client that pipelines
// BEGIN with its first write (pgx batches, any pipelining driver) would have
// that write taken for an autocommitted one. Reading it would also mean
// pairing the two directions of a connection, whose toxic states toxiproxy
// keeps apart with nothing that ties them. What the frontend cannot show
// (transaction control inside a procedure, a write inside a function) is
// out of reach either way for a watcher that must act before the statement
// runs.
type pgWatchToxic struct {
	Match  string `json:"match"`
	Nth    int64  `json:"nth"`
	Action string `json:"action"`

	// Set by bind before the proxy accepts a connection, read-only after.
	rule *watchRule // nil on a watched proxy
	hub  *hub

	// armed is the rule in force on a watched proxy (action "armed"); nil
	// lets everything pass.
	armed atomic.Pointer[watchRule]
	// barrier is the write barrier armed on a watched proxy, if any.
	barrier atomic.Pointer[barrier]
	// conns numbers the connections; live counts those open, starting
	// those open that have not sent a statement yet (a pool's new
	// connection, whose session may not show in pg_stat_activity before
	// it is ready).
	conns, live, starting atomic.Int64
	// sessions counts the connections that started a PostgreSQL session
	// (Link.PGSessions).
	sessions atomic.Int64
	// last is the connection whose state was made last: the downstream
	// toxic of a watched proxy takes it (see pgRepliesToxic).
	last atomic.Pointer[pgConn]
}

// poke tells the armed barrier, if any, that something happened on a
// connection.
func (t *pgWatchToxic) poke() {
	if b := t.barrier.Load(); b != nil {
		b.touch()
	}
}

func (t *pgWatchToxic) bind(h *hub, f Fault) error {
	t.hub = h
	if t.Action == actionArmed {
		return nil
	}
	r, err := newWatchRule(t.Match, t.Nth, t.Action, f)
	if err != nil {
		return err
	}
	t.rule = r
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
	// id numbers the connection on its proxy, from 1; ended: it was
	// closed and no longer counts as live.
	id    int
	ended bool
	// started: the connection has sent a statement, or has ended.
	started bool
	// session: the connection sent a PostgreSQL StartupMessage.
	session bool
	// barrier is the last barrier this connection's first write met: it
	// holds a connection's first write only.
	barrier *barrier
	// conn is what this connection's two directions share.
	conn *pgConn
}

// NewState is called once for each connection: the watch toxic acts on
// one direction only.
func (t *pgWatchToxic) NewState() any {
	st := &pgWatchState{scan: newPGScanner(), id: int(t.conns.Add(1)), conn: newPGConn()}
	t.last.Store(st.conn)
	t.live.Add(1)
	t.starting.Add(1)
	if b := t.barrier.Load(); b != nil {
		b.touch()
	}
	return st
}

// closeConn closes the connection, both sides, and stops counting it.
func (t *pgWatchToxic) closeConn(stub *toxics.ToxicStub, st *pgWatchState) {
	stub.Close()
	t.markStarted(st)
	if !st.ended {
		st.ended = true
		st.conn.end()
		t.live.Add(-1)
		if b := t.barrier.Load(); b != nil {
			b.touch()
		}
	}
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
				t.closeConn(stub, st)
				return
			}
			if b := t.barrier.Load(); b != nil {
				b.touch()
			}
			st.pend = append(st.pend, c.Data...)
			if !t.advance(stub, st) {
				return
			}
		}
	}
}

// markStarted stops counting the connection as starting.
func (t *pgWatchToxic) markStarted(st *pgWatchState) {
	if !st.started {
		st.started = true
		t.starting.Add(-1)
	}
}

// advance forwards what the scanner lets pass and acts on a match. It
// reports false when the connection has been closed.
func (t *pgWatchToxic) advance(stub *toxics.ToxicStub, st *pgWatchState) bool {
	pass := 0
	for {
		n, res, size, ev := st.scan.scan(st.pend[pass:])
		if st.scan.statements {
			t.markStarted(st)
		}
		if !st.session && st.scan.phase == phaseTyped {
			st.session = true
			t.sessions.Add(1)
		}
		pass += n
		switch res {
		case scanMore:
			forward(stub, st, pass)
			return true
		case scanRefuse:
			forward(stub, st, pass)
			t.closeConn(stub, st)
			drain(stub)
			return false
		}
		r := t.rule
		if r == nil {
			r = t.armed.Load()
		}
		if r != nil && r.match(ev) {
			if l, acts := r.land(ev); acts {
				if r.action == actionCutAfter {
					// The matching message reaches the database too, which
					// runs it; its answer is the database side's to cut
					// (pgRepliesToxic.cutAnswer), set before the message
					// goes so that no byte of the answer can slip past.
					st.conn.cutAt.Store(ev.prior + 1)
					pass += size
					forward(stub, st, pass)
					pass = 0
					continue
				}
				// The work sent before the match reaches the database; the
				// matching message does not (yet).
				forward(stub, st, pass)
				if r.action == actionCut {
					t.closeConn(stub, st)
					drain(stub)
					return false
				}
				st.held, st.heldSize = newHold(l), size
				st.held.conn, st.held.prior, st.held.linkDone = st.conn, ev.prior, t.hub.done
				return true
			}
		}
		if ev.writeKind != "" {
			if b := t.barrier.Load(); b != nil && st.barrier != b {
				// The connection's first write since the barrier was armed
				// (the barrier holds no other).
				st.barrier = b
				if h := b.hold(st.id, st.conn, ev); h != nil {
					forward(stub, st, pass)
					st.held, st.heldSize = h, size
					return true
				}
			}
		}
		pass += size
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
	case o := <-h.offers:
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
		t.closeConn(stub, st)
		h.resolve(o)
		drain(stub)
		return false
	case c := <-stub.Input:
		if c == nil {
			// The target closed its side (it was killed, say) while its
			// statement was held: the statement never reaches the database.
			t.closeConn(stub, st)
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
	scanEvent                    // the message after the passing bytes runs a statement (or commits one)
	scanRefuse                   // the stream cannot be followed (encrypted): close it
)

// pgEvent is a message that runs a statement, or commits one: what a rule
// may act on.
type pgEvent struct {
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
	// that came back (pgConn.finished).
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
func (s *pgScanner) scan(b []byte) (n int, res scanResult, size int, ev pgEvent) {
	for {
		rest := b[n:]
		if s.skip > 0 {
			k := min(s.skip, len(rest))
			n += k
			s.skip -= k
			if s.skip > 0 {
				return n, scanMore, 0, pgEvent{}
			}
			continue
		}
		switch s.phase {
		case phasePassive:
			return len(b), scanMore, 0, pgEvent{}
		case phaseStartup:
			if len(rest) < 8 {
				return n, scanMore, 0, pgEvent{}
			}
			length := int(binary.BigEndian.Uint32(rest[0:4]))
			code := binary.BigEndian.Uint32(rest[4:8])
			if length < 8 || length > maxStartup {
				// A TLS record (0x16 0x03 ...) or a GSS token after the
				// server accepted encryption: the SQL would be invisible.
				return n, scanRefuse, 0, pgEvent{}
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
				return n, scanRefuse, 0, pgEvent{}
			}
			s.skip = length
		case phaseTyped:
			if len(rest) < 5 {
				return n, scanMore, 0, pgEvent{}
			}
			typ := rest[0]
			length := int(binary.BigEndian.Uint32(rest[1:5]))
			if length < 4 {
				return n, scanRefuse, 0, pgEvent{} // not the protocol: its framing is lost
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
				return n, scanMore, 0, pgEvent{}
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
func (s *pgScanner) inspect(typ byte, body []byte) (pgEvent, bool) {
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
		ev := pgEvent{sql: q, kind: LandedStatement}
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
			return pgEvent{}, false
		}
		ev := pgEvent{sql: st.sql, kind: LandedStatement}
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
			return pgEvent{}, false
		}
		ev := pgEvent{sql: s.pending, kind: idemcheck.LandedAutocommitWrite, effect: true, sync: true}
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
	return pgEvent{}, false
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
