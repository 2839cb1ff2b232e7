package faults

import (
	"bytes"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// pgWatchType is the toxiproxy type name of watchToxic (the name it had
// when it read PostgreSQL only).
const pgWatchType = "idemcheck_pg_watch"

// What watchToxic does to the message it acts on. actionArmed defers
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
	// Conn numbers the database connection the statement came from, from
	// 1 in the order the proxy accepted them (0: not known). A handler and
	// a background worker of one target write through connections of
	// their own, so it tells whose write the fault met.
	Conn int
}

// Acted reports whether the fault acted.
func (l Landing) Acted() bool { return l.Kind != "" }

// watchRule is what a watch toxic acts on: a db-cut or db-hold, on its own
// proxy for the proxy's life, or armed on a watched proxy for a while (its
// nth then counts from the moment it was armed). re nil is the default
// match: the effect write.
//
// marks, when set (Link.Arm's carrying), narrow the default match to the
// effect writes of one intent: those whose transaction sent one of the
// marks (its key, the values its effect is counted by) in a statement or
// its parameters, on whichever connection. A target with a background
// worker or a job queue writes other things through the same link at the
// same time (a queue's polls, its bookkeeping, other intents' jobs), and
// a fault that met those would break work that is not the intent's.
type watchRule struct {
	re     *regexp.Regexp
	nth    int64
	action string
	fault  Fault
	marks  [][]byte

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

// match reports whether ev is a statement the rule counts; carried says
// whether its transaction sent one of the rule's marks.
func (r *watchRule) match(ev wireEvent, carried bool) bool {
	if r.re == nil {
		return ev.effect && (len(r.marks) == 0 || carried)
	}
	return !ev.sync && r.re.MatchString(ev.sql)
}

// carries reports whether b holds one of the rule's marks.
func (r *watchRule) carries(b []byte) bool {
	for _, m := range r.marks {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// endsTransaction matches a statement that ends a transaction without
// committing it: what it carried no longer counts.
var endsTransaction = regexp.MustCompile(`(?i)^\s*(ROLLBACK|ABORT)\b`)

// land counts a match and reports whether the rule acts on it, with the
// landing it records. The landing is recorded before the toxic acts, so
// whoever learns of the act (a connection error, a HoldEvent) finds it.
func (r *watchRule) land(ev wireEvent, conn int) (Landing, bool) {
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
	r.landing = Landing{Fault: r.fault, Kind: ev.kind, SQL: ev.sql, Match: int(r.matches), Time: time.Now(), Conn: conn}
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
	toxics.Register(pgWatchType, new(watchToxic))
}

// hub is how a Link's watch toxics reach the harness.
type hub struct {
	held chan HoldEvent
	done chan struct{} // closed by Link.Close
}

// watchToxic follows the client's side of a database link (the upstream
// direction) and acts on the nth statement, counted over
// every connection through its proxy, that its rule matches: "cut" closes
// both sides without forwarding it, "hold" keeps it and reports a HoldEvent.
// Everything else passes unchanged, and at once: it buffers only the message
// it is reading, and only for the message types that carry SQL, name it or
// end an implicit transaction.
//
// How it reads the bytes is its engine's (a wireScanner, see wire.go):
// PostgreSQL's frontend protocol, as told below, or the MySQL
// client/server protocol (mysqlwire), where a COM_QUERY or the execution of
// a prepared statement (COM_STMT_EXECUTE) is what runs a statement, the
// effect write is a COMMIT (or a statement that commits implicitly) or a
// write run with autocommit on, and the transaction state is the client's
// commands as the server's status flags of each answer correct them.
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
// On PostgreSQL, whether a connection is inside a transaction block is
// followed from the frontend side alone (BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK,
// ABORT, in simple queries and prepared statements), not from the status
// byte of the backend's ReadyForQuery. The frontend knows its state when it
// sends a statement, and the watcher sees it in the same order; the
// backend's status arrives a round trip later, so a client that pipelines
// BEGIN with its first write (pgx batches, any pipelining driver) would have
// that write taken for an autocommitted one. (The MySQL scanner takes the
// server's status flags only from an answer with no command after it
// pending, for the same reason.) What the frontend cannot show
// (transaction control inside a procedure, a write inside a function) is
// out of reach either way for a watcher that must act before the statement
// runs.
type watchToxic struct {
	Match  string `json:"match"`
	Nth    int64  `json:"nth"`
	Action string `json:"action"`

	// Set by bind before the proxy accepts a connection, read-only after.
	rule   *watchRule // nil on a watched proxy
	hub    *hub
	engine string

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
	// sessions counts the connections that started a session of the
	// engine's protocol (Link.DBSessions).
	sessions atomic.Int64
	// refused says why the last connection refused was (a stream that
	// cannot be followed: TLS), if any (Link.Refused).
	refused atomic.Pointer[string]
	// last is the connection whose state was made last: the downstream
	// toxic of a watched proxy takes it (see repliesToxic).
	last atomic.Pointer[dbConn]
	// open holds the *dbConn of every open connection (quiesce).
	open sync.Map
	// frozen, when set, keeps what every connection sends from the
	// database until it thaws (HoldEvent.ReleaseHoldingAnswerFreezing):
	// a statement held before it (the one released) is not kept.
	frozen atomic.Pointer[freeze]
}

// freeze is one freeze of a watch toxic's connections: done is closed
// when it thaws, drop set before that when what it kept is discarded.
type freeze struct {
	done chan struct{}
	drop atomic.Bool
	once sync.Once
}

// freezeAll freezes every connection from now: what each sends is kept.
func (t *watchToxic) freezeAll() *freeze {
	f := &freeze{done: make(chan struct{})}
	t.frozen.Store(f)
	return f
}

// quiesce waits, at most bound, until every open connection but except
// has had every statement it sent answered: once the link is frozen,
// nothing is then in flight at the database but what is released next.
// It returns how many connections still had a statement in flight when
// the bound passed (0 when none had).
func (t *watchToxic) quiesce(except *dbConn, bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for {
		busy := 0
		t.open.Range(func(k, _ any) bool {
			if c := k.(*dbConn); c != except && !c.idle() {
				busy++
			}
			return true
		})
		if busy == 0 || !time.Now().Before(deadline) {
			return busy
		}
		time.Sleep(time.Millisecond)
	}
}

// thaw ends f: what it kept goes on, or, with drop, is discarded and the
// connections it came from are closed (their process was killed).
func (t *watchToxic) thaw(f *freeze, drop bool) {
	f.once.Do(func() {
		f.drop.Store(drop)
		t.frozen.CompareAndSwap(f, nil)
		close(f.done)
	})
}

// poke tells the armed barrier, if any, that something happened on a
// connection.
func (t *watchToxic) poke() {
	if b := t.barrier.Load(); b != nil {
		b.touch()
	}
}

func (t *watchToxic) bind(h *hub, f Fault, engine string) error {
	t.hub, t.engine = h, engine
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

// watchState is one connection's state.
type watchState struct {
	scan wireScanner
	// pend holds the bytes read and not yet forwarded: an incomplete
	// message, or a held one and what came after it.
	pend     []byte
	held     *heldStatement
	heldSize int
	// id numbers the connection on its proxy, from 1; ended: it was
	// closed and no longer counts as live.
	id    int
	ended bool
	// started: the connection has sent a statement, or has ended.
	started bool
	// session: the connection started a session (a PostgreSQL
	// StartupMessage; a MySQL command, its connection phase over).
	session bool
	// barrier is the last barrier this connection's first write met: it
	// holds a connection's first write only.
	barrier *barrier
	// conn is what this connection's two directions share.
	conn *dbConn
	// carried is the armed rule whose marks the connection's open
	// transaction sent (nil: none): its effect write is that rule's
	// intent's.
	carried *watchRule
	// frozen is the freeze that keeps what the connection sent since it
	// began (nil: none).
	frozen *freeze
}

// NewState is called once for each connection: the watch toxic acts on
// one direction only.
func (t *watchToxic) NewState() any {
	st := &watchState{id: int(t.conns.Add(1)), conn: t.newConn()}
	if st.conn.my != nil {
		st.scan = newMyScanner(st.conn.my)
	} else {
		pg := newPGScanner()
		st.scan = &pg
	}
	t.last.Store(st.conn)
	t.live.Add(1)
	t.starting.Add(1)
	if b := t.barrier.Load(); b != nil {
		b.touch()
	}
	return st
}

// closeConn closes the connection, both sides, and stops counting it.
func (t *watchToxic) closeConn(stub *toxics.ToxicStub, st *watchState) {
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

func (t *watchToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*watchState)
	for {
		if st.frozen != nil {
			if !t.waitThaw(stub, st) {
				return
			}
			continue
		}
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
			if f := t.frozen.Load(); f != nil {
				st.frozen = f
				continue
			}
			if !t.advance(stub, st) {
				return
			}
		}
	}
}

// waitThaw keeps what the frozen connection sends until its freeze
// thaws, then passes it on, or discards it and closes the connection. It
// reports false when the connection has been closed (or the toxic
// interrupted).
func (t *watchToxic) waitThaw(stub *toxics.ToxicStub, st *watchState) bool {
	select {
	case <-st.frozen.done:
		drop := st.frozen.drop.Load()
		st.frozen = nil
		if drop {
			t.closeConn(stub, st)
			drain(stub)
			return false
		}
		return t.advance(stub, st)
	case c := <-stub.Input:
		if c == nil {
			t.closeConn(stub, st)
			return false
		}
		st.pend = append(st.pend, c.Data...)
		return true
	case <-stub.Interrupt:
		return false
	}
}

// markStarted stops counting the connection as starting.
func (t *watchToxic) markStarted(st *watchState) {
	if !st.started {
		st.started = true
		t.starting.Add(-1)
	}
}

// advance forwards what the scanner lets pass and acts on a match. It
// reports false when the connection has been closed.
func (t *watchToxic) advance(stub *toxics.ToxicStub, st *watchState) bool {
	pass := 0
	for {
		n, res, size, ev := st.scan.scan(st.pend[pass:])
		if st.scan.started() {
			t.markStarted(st)
		}
		if !st.session && st.scan.session() {
			st.session = true
			t.sessions.Add(1)
		}
		if res == scanEvent {
			st.conn.sent.Store(max(st.conn.sent.Load(), ev.prior+1))
		}
		r := t.rule
		if r == nil {
			r = t.armed.Load()
		}
		if r != nil && len(r.marks) > 0 {
			// The bytes up to the end of this message, since the last:
			// whole messages, so a mark is never split between two.
			end := pass + n
			if res == scanEvent {
				end += size
			}
			if r.carries(st.pend[pass:end]) {
				st.carried = r
			}
		}
		pass += n
		switch res {
		case scanMore:
			forward(stub, st, pass)
			return true
		case scanRefuse:
			why := st.scan.refusal()
			t.refused.Store(&why)
			forward(stub, st, pass)
			t.closeConn(stub, st)
			drain(stub)
			return false
		}
		carried := r != nil && st.carried == r
		if ev.effect || endsTransaction.MatchString(ev.sql) {
			// The transaction ends with this statement; the next starts
			// carrying nothing.
			st.carried = nil
		}
		if r != nil && r.match(ev, carried) {
			if l, acts := r.land(ev, st.id); acts {
				if r.action == actionCutAfter {
					// The matching message reaches the database too, which
					// runs it; its answer is held on the database side, the
					// hold decided now as a cut that closes the connection
					// (dbConn.holdAnswer), set before the message goes so
					// that no byte of the answer can slip past.
					st.conn.holdAnswer(ev.prior, true, nil)
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
				st.held, st.heldSize = holdStatement(l, st.conn, ev.prior, t.hub.done), size
				st.held.watch = t
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
func (t *watchToxic) waitHold(stub *toxics.ToxicStub, st *watchState) bool {
	h := st.held
	var deliver chan<- HoldEvent
	var linkDone <-chan struct{}
	if !h.delivered {
		deliver, linkDone = t.hub.held, t.hub.done
	}
	bound := h.bound()
	defer bound.Stop()
	select {
	case deliver <- h.event:
		h.delivered = true
	case <-linkDone:
		h.delivered = true // nobody will receive it; the close of the connections follows
	case o := <-h.offers:
		return t.settle(stub, st, o)
	case <-bound.C:
		return t.settle(stub, st, outcomeCut) // nobody decided in time
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

// settle acts on the decision o for the held message, resolves its hold
// and reports false when the connection has been closed.
func (t *watchToxic) settle(stub *toxics.ToxicStub, st *watchState, o outcome) bool {
	h := st.held
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
}

// forward passes the first n pending bytes. The slice handed on is never
// written again: later appends to pend land beyond it.
func forward(stub *toxics.ToxicStub, st *watchState, n int) {
	if n == 0 {
		return
	}
	stub.Output <- &stream.StreamChunk{Data: st.pend[:n], Timestamp: time.Now()}
	st.pend = st.pend[n:]
	if len(st.pend) == 0 {
		st.pend = nil
	}
}

const (
	phaseStartup pgPhase = iota // untyped messages: SSLRequest, GSSENCRequest, StartupMessage
	phaseTyped                  // type byte, int32 length, body
	phasePassive                // a CancelRequest connection: nothing to watch
)

const (
	scanMore   scanResult = iota // everything returned may pass; more bytes are needed
	scanEvent                    // the message after the passing bytes runs a statement (or commits one)
	scanRefuse                   // the stream cannot be followed (encrypted): close it
)
