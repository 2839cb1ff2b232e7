package faults

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/idemcheck/idemcheck/internal/mysqlwire"
)

// pgRepliesType is the toxiproxy type name of repliesToxic.
const pgRepliesType = "idemcheck_pg_replies"

func init() {
	toxics.Register(pgRepliesType, new(repliesToxic))
}

// dbConn is what the two directions of one connection through the watched
// proxy share: how far the database's answers have come (downstream), to
// be compared with a statement's prior (upstream). A statement has
// finished, the database has answered it, once replies passes its prior.
type dbConn struct {
	// replies numbers the last answer the database sent (answerMark): on
	// PostgreSQL the count of its ReadyForQuery messages, on MySQL the ID
	// of the command it answered.
	replies atomic.Int64
	// sent numbers the answer the connection's last statement awaits (a
	// wireEvent's prior plus one): every statement it sent has been
	// answered once replies reaches it.
	sent atomic.Int64
	// my is the connection's MySQL protocol scanner, which both directions
	// feed (nil on PostgreSQL).
	my *mysqlwire.Scanner
	// ended: the connection was closed; gone is closed then too (end).
	ended   atomic.Bool
	gone    chan struct{}
	goneOne sync.Once
	// followed: a replies toxic follows this connection's answers, so an
	// answer hold set on it acts.
	followed atomic.Bool
	// answer, when set, holds the database's answer to one statement on
	// its way back (HoldEvent.ReleaseHoldingAnswer, db-cut-after).
	answer atomic.Pointer[answerHold]
	// live is the watch toxic's set of open connections, this one among
	// them until it ends (nil for a connection no watch toxic follows).
	live *sync.Map
}

// idle reports whether every statement the connection sent has been
// answered, or it has ended.
func (c *dbConn) idle() bool { return c.ended.Load() || c.replies.Load() >= c.sent.Load() }

func newDBConn() *dbConn { return &dbConn{gone: make(chan struct{})} }

// newConn returns a connection's shared state for the toxic's engine.
func (t *watchToxic) newConn() *dbConn {
	c := newDBConn()
	c.live = &t.open
	t.open.Store(c, struct{}{})
	if t.engine == EngineMySQL {
		c.my = mysqlwire.New()
	}
	return c
}

// end records that the connection was closed, by either direction, and
// ends an answer hold still set on it: its answer will never come, so
// whoever decides it (AnswerHold.Drop after a kill) must not wait for it.
func (c *dbConn) end() {
	c.ended.Store(true)
	if c.live != nil {
		c.live.Delete(c)
	}
	c.goneOne.Do(func() {
		if c.gone != nil {
			close(c.gone)
		}
	})
	if a := c.answer.Swap(nil); a != nil {
		a.resolve(outcomeEnded)
		// The connection died with its answer, and so did its process,
		// but a target of several processes may not be dead yet: its
		// freeze holds until the harness decides the answer (Drop once
		// every process is dead), or, if it never does, for decideWait.
		if a.freeze != nil {
			time.AfterFunc(decideWait, func() { a.thaw(true) })
		}
	}
}

// answerHold holds the database's answer to one statement: the first
// answer numbered past after (answerMark). The answers to the statements
// before it pass; its own is withheld from its first byte, and once it has
// come whole held is closed and the hold decided: released, its bytes go
// on; cut, they are dropped, and the connection closed too when closes
// (db-cut-after, whose hold is decided before the statement goes).
type answerHold struct {
	*hold
	after  int64
	held   chan struct{}
	closes bool
	// freeze, when set, keeps what every connection of watch sends from
	// the moment the statement is released until its answer is decided
	// or its connection ends (HoldEvent.ReleaseHoldingAnswerFreezing).
	freeze *freeze
	watch  *watchToxic
}

// thaw ends the hold's freeze, if any: what it kept goes on, or with drop
// is discarded and its connections closed.
func (a *answerHold) thaw(drop bool) {
	if a.freeze != nil {
		a.watch.thaw(a.freeze, drop)
	}
}

// holdAnswer sets a hold on the answer to the statement whose prior is
// after; cut decides it now: a cut that closes the connection. It must be
// set before the statement goes, so that no byte of the answer slips past.
func (c *dbConn) holdAnswer(after int64, cut bool, freezes *watchToxic) *answerHold {
	a := &answerHold{hold: newHold(c.gone), after: after, held: make(chan struct{}), closes: cut}
	if freezes != nil {
		a.watch, a.freeze = freezes, freezes.freezeAll()
	}
	if cut {
		a.offer(outcomeCut)
	}
	if old := c.answer.Swap(a); old != nil {
		old.resolve(outcomeEnded)
	}
	return a
}

// AnswerHold is the database's answer to a released statement, held on
// its way back to the target (HoldEvent.ReleaseHoldingAnswer). An answer
// nobody decides within an hour of its release is dropped.
type AnswerHold struct {
	a       *answerHold
	unquiet int
}

// Unquiet is, for a freezing release (ReleaseHoldingAnswerFreezing), how
// many other connections still had a statement in flight when the wait
// for them passed its bound and the statement was released anyway: their
// statements may run after it. 0 when every one had been answered.
func (a *AnswerHold) Unquiet() int { return a.unquiet }

// Held is closed once the answer has come back from the database and is
// held: the statement has run, and the target has not received its answer.
func (a *AnswerHold) Held() <-chan struct{} { return a.a.held }

// Forward lets the answer, and what follows it, reach the target. It
// returns at once when the connection has ended.
func (a *AnswerHold) Forward() {
	a.a.decide(outcomeReleased, decideWait)
	a.a.thaw(false)
}

// Drop discards the answer, held or still to come (the target was killed,
// say); what the database sends after it still passes. The first of
// Forward and Drop decides. It returns at once when the connection has
// ended (the target died before the database answered): nothing is left
// to discard, and no answer will come to be held.
func (a *AnswerHold) Drop() {
	a.a.decide(outcomeCut, decideWait)
	a.a.thaw(true)
}

// finished reports whether the statement whose prior is prior (the
// first sent after prior others that each get a ReadyForQuery on
// PostgreSQL: a simple Query, a Sync, a function call; the command after
// command number prior on MySQL) has been answered, or the connection has
// ended.
func (c *dbConn) finished(prior int64) bool {
	return c.replies.Load() > prior || c.ended.Load()
}

// repliesToxic follows the database side of the watched proxy's
// connections and numbers each one's answers (answerScanner: PostgreSQL's
// ReadyForQuery messages, MySQL's answers by command), so that a write
// barrier that releases held writes one at a time knows when the database
// has answered the one it let go. Unless it cuts after an answer or holds
// one (an answer hold), it changes nothing: every byte passes at once. On
// MySQL it also feeds the connection's scanner the server's bytes, which
// the client's side needs (the greeting's capabilities): a MySQL link puts
// it on every proxy that watches.
//
// The toxic of one direction does not know the other's state; toxiproxy
// ties them by nothing. It does start them in a fixed order: a proxy
// accepts its connections one at a time, and for each it starts the
// upstream link and then the downstream one, each making its toxics' states
// as it starts, before the next connection is accepted. So the downstream
// state made now belongs to the connection whose upstream state was made
// last (watchToxic.last). No other toxic with a state is ever added to
// the watched proxy while it runs (db-latency is stateless), so nothing
// else makes a state in between.
type repliesToxic struct {
	// up is the watched proxy's upstream toxic, set by bind before the
	// proxy accepts a connection.
	up *watchToxic
}

// repliesState is one connection's database side.
type repliesState struct {
	conn *dbConn
	scan answerScanner
	// withheld is what an answer hold keeps of the answer it holds, until
	// that answer has come whole.
	withheld []byte
}

// pgRepliesState follows PostgreSQL's backend messages (pgAnswers).
type pgRepliesState struct {
	// started: past the one-byte answers to SSLRequest or GSSENCRequest
	// that may come before the first message.
	started bool
	// passive: the stream cannot be followed (encrypted): count nothing.
	passive bool
	// head holds the first bytes of a message header split across chunks;
	// skip counts the bytes of the current message still to pass.
	head []byte
	skip int
	// ready: the message being skipped is a ReadyForQuery; it counts once
	// its last byte has been read.
	ready bool
}

func (t *repliesToxic) NewState() any {
	c := t.up.last.Load()
	if c == nil {
		c = t.up.newConn()
	}
	c.followed.Store(true)
	st := &repliesState{conn: c, scan: &pgAnswers{}}
	if c.my != nil {
		st.scan = myAnswers{s: c.my}
	}
	return st
}

func (t *repliesToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*repliesState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				st.conn.end()
				t.up.poke()
				stub.Close()
				return
			}
			marks, next := st.scan.answers(c.Data)
			if a := st.conn.answer.Load(); a != nil {
				if !t.withholdAnswer(stub, st, c.Data, marks, next, a) {
					return
				}
				continue
			}
			if len(marks) > 0 {
				st.conn.replies.Store(marks[len(marks)-1].n)
				t.up.poke()
			}
			stub.Output <- c
		}
	}
}

// send passes b on, if there is anything to pass.
func send(stub *toxics.ToxicStub, b []byte) {
	if len(b) > 0 {
		stub.Output <- &stream.StreamChunk{Data: b, Timestamp: time.Now()}
	}
}

// withholdAnswer passes the part of b that answers the statements sent before
// a's, and withholds a's answer; once that answer has come whole (the
// database has run the statement and, outside a transaction block,
// committed it), a is decided and the toxic does what it says. marks and
// next are what the answerScanner read in b. It reports false once the
// connection is closed, or the toxic interrupted (the answer is dropped).
func (t *repliesToxic) withholdAnswer(stub *toxics.ToxicStub, st *repliesState, b []byte, marks []answerMark, next int64, a *answerHold) bool {
	pass := 0
	for i, m := range marks {
		if m.n <= a.after {
			// An answer to an earlier statement: it passes.
			pass = m.end
			st.conn.replies.Store(m.n)
			continue
		}
		send(stub, b[:pass])
		st.withheld = append(st.withheld, b[pass:m.end]...)
		st.conn.replies.Store(m.n)
		t.up.poke()
		close(a.held)
		o, ok := a.await(stub.Interrupt)
		if !ok {
			o = outcomeCut
		}
		a.resolve(o)
		a.thaw(o != outcomeReleased)
		st.conn.answer.CompareAndSwap(a, nil)
		held := st.withheld
		st.withheld = nil
		switch {
		case o == outcomeCut && a.closes:
			st.conn.end()
			t.up.poke()
			stub.Close()
			drain(stub)
			return false
		case o == outcomeReleased:
			send(stub, held)
		}
		if !ok {
			return false
		}
		last := marks[len(marks)-1].n
		if last > m.n {
			st.conn.replies.Store(last)
			t.up.poke()
		}
		send(stub, b[marks[i].end:])
		return true
	}
	if len(marks) > 0 {
		t.up.poke()
	}
	if next <= a.after {
		pass = len(b) // the bytes after the last answer answer an earlier statement too
	}
	send(stub, b[:pass])
	st.withheld = append(st.withheld, b[pass:]...)
	return true
}

// count follows the backend messages in b and returns how many
// ReadyForQuery messages end in it, and where the bytes it read end: all of
// b, or, when stop is above 0, just after the stop-th ReadyForQuery.
func (st *pgRepliesState) count(b []byte, stop int) (n, end int) {
	read := 0
	for read < len(b) && !st.passive {
		rest := b[read:]
		if st.skip > 0 {
			k := min(st.skip, len(rest))
			st.skip -= k
			read += k
			if st.skip == 0 && st.ready {
				st.ready = false
				n++
				if n == stop {
					return n, read
				}
			}
			continue
		}
		if !st.started && len(st.head) == 0 {
			switch rest[0] {
			case 'N': // SSL or GSS encryption refused: plain messages follow
				read++
				continue
			case 'S', 'G': // encryption accepted: nothing to follow
				st.passive = true
				return n, len(b)
			}
		}
		st.started = true
		need := 5 - len(st.head)
		k := min(need, len(rest))
		st.head = append(st.head, rest[:k]...)
		read += k
		if len(st.head) < 5 {
			return n, len(b)
		}
		length := int(binary.BigEndian.Uint32(st.head[1:5]))
		if length < 4 {
			st.passive = true // not the protocol: its framing is lost
			return n, len(b)
		}
		st.ready = st.head[0] == 'Z'
		st.head = st.head[:0]
		st.skip = length - 4
		if st.skip == 0 && st.ready {
			st.ready = false
			n++
			if n == stop {
				return n, read
			}
		}
	}
	return n, len(b)
}
