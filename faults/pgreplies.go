package faults

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// pgRepliesType is the toxiproxy type name of pgRepliesToxic.
const pgRepliesType = "idemcheck_pg_replies"

func init() {
	toxics.Register(pgRepliesType, new(pgRepliesToxic))
}

// pgConn is what the two directions of one connection through the watched
// proxy share: how many statements that the database answers with a
// ReadyForQuery the target has sent (upstream), and how many ReadyForQuery
// messages came back (downstream). A statement has finished, the database
// has answered it, once the replies outnumber the ones sent before it.
type pgConn struct {
	// replies counts the ReadyForQuery messages the database sent.
	replies atomic.Int64
	// ended: the connection was closed; gone is closed then too (end).
	ended   atomic.Bool
	gone    chan struct{}
	goneOne sync.Once
	// followed: a replies toxic follows this connection's answers, so a
	// gate set on it acts.
	followed atomic.Bool
	// gate, when set, holds the answer that brings replies past its after
	// (HoldEvent.ReleaseHoldingAnswer).
	gate atomic.Pointer[answerGate]
	// cutAt, when not 0, is the number of the ReadyForQuery that answers
	// the statement a db-cut-after let through: the database side passes
	// every answer before it, withholds everything after those, and closes
	// the connection once that ReadyForQuery has come (pgRepliesToxic).
	cutAt atomic.Int64
}

func newPGConn() *pgConn { return &pgConn{gone: make(chan struct{})} }

// end records that the connection was closed, by either direction, and
// settles an answer gate still set on it: its answer will never come, so
// whoever decides it (AnswerHold.Drop after a kill) must not wait for it.
func (c *pgConn) end() {
	c.ended.Store(true)
	c.goneOne.Do(func() {
		if c.gone != nil {
			close(c.gone)
		}
	})
	if g := c.gate.Swap(nil); g != nil {
		g.resolve(false)
	}
}

// answerGate holds the backend's bytes that answer one statement: the
// chunk in which the connection's ReadyForQuery count passes after. held
// is closed when that chunk is held; the decision is true to forward it,
// false to drop it.
type answerGate struct {
	after int64
	held  chan struct{}
	decision[bool]
	// gone is closed when the connection ends: no answer comes after it.
	gone <-chan struct{}
}

func newAnswerGate(after int64, gone <-chan struct{}) *answerGate {
	return &answerGate{after: after, held: make(chan struct{}), decision: newDecision[bool](), gone: gone}
}

// AnswerHold is the database's answer to a released statement, held on
// its way back to the target (HoldEvent.ReleaseHoldingAnswer).
type AnswerHold struct{ g *answerGate }

// Held is closed once the answer has come back from the database and is
// held: the statement has run, and the target has not received its answer.
func (a *AnswerHold) Held() <-chan struct{} { return a.g.held }

// Forward lets the answer, and what follows it, reach the target. It
// returns at once when the connection has ended.
func (a *AnswerHold) Forward() { a.g.decide(true, a.g.gone) }

// Drop discards the answer, held or still to come (the target was killed,
// say); what the database sends after it still passes. The first of
// Forward and Drop decides. It returns at once when the connection has
// ended (the target died before the database answered): nothing is left
// to discard, and no answer will come to be held.
func (a *AnswerHold) Drop() { a.g.decide(false, a.g.gone) }

// finished reports whether the first statement sent after prior others
// that each get a ReadyForQuery (a simple Query, a Sync, a function call)
// has been answered, or the connection has ended.
func (c *pgConn) finished(prior int64) bool {
	return c.replies.Load() > prior || c.ended.Load()
}

// pgRepliesToxic follows the backend side of the watched proxy's
// connections and counts each one's ReadyForQuery messages ('Z'), so that
// a write barrier that releases held writes one at a time knows when the
// database has answered the one it let go. It changes nothing: every byte
// passes at once.
//
// The toxic of one direction does not know the other's state; toxiproxy
// ties them by nothing. It does start them in a fixed order: a proxy
// accepts its connections one at a time, and for each it starts the
// upstream link and then the downstream one, each making its toxics' states
// as it starts, before the next connection is accepted. So the downstream
// state made now belongs to the connection whose upstream state was made
// last (pgWatchToxic.last). No other toxic with a state is ever added to
// the watched proxy while it runs (db-latency is stateless), so nothing
// else makes a state in between.
type pgRepliesToxic struct {
	// up is the watched proxy's upstream toxic, set by bind before the
	// proxy accepts a connection.
	up *pgWatchToxic
}

// pgRepliesState is one connection's backend side.
type pgRepliesState struct {
	conn *pgConn
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

func (t *pgRepliesToxic) NewState() any {
	c := t.up.last.Load()
	if c == nil {
		c = newPGConn()
	}
	c.followed.Store(true)
	return &pgRepliesState{conn: c}
}

func (t *pgRepliesToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*pgRepliesState)
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
			if st.conn.cutAt.Load() > 0 {
				if !t.cutAnswer(stub, st, c.Data) {
					return
				}
				continue
			}
			if n, _ := st.count(c.Data, 0); n > 0 {
				got := st.conn.replies.Add(int64(n))
				t.up.poke()
				if g := st.conn.gate.Load(); g != nil && got > g.after && st.conn.gate.CompareAndSwap(g, nil) {
					forward, ok := holdAnswer(stub, g)
					if !ok {
						return
					}
					if !forward {
						continue
					}
				}
			}
			stub.Output <- c
		}
	}
}

// holdAnswer holds the chunk that answers g's statement until g is decided,
// and reports whether to forward it; ok is false when the toxic was
// interrupted meanwhile (the chunk is then dropped).
func holdAnswer(stub *toxics.ToxicStub, g *answerGate) (forward, ok bool) {
	close(g.held)
	select {
	case v := <-g.offers:
		g.resolve(v)
		return v, true
	case <-stub.Interrupt:
		g.resolve(false)
		return false, false
	}
}

// cutAnswer passes the part of b that answers the statements sent before
// the one a db-cut-after let through, and withholds the rest: once that
// statement's own ReadyForQuery has come, the database has run it (and,
// outside a transaction block, committed it), and the connection is
// closed, both sides, before a byte of its answer reached the target. It
// reports false once the connection is closed.
func (t *pgRepliesToxic) cutAnswer(stub *toxics.ToxicStub, st *pgRepliesState, b []byte) bool {
	for len(b) > 0 {
		left := st.conn.cutAt.Load() - st.conn.replies.Load()
		if left > 1 {
			// Answers to earlier statements: they pass.
			n, end := st.count(b, int(left-1))
			if end > 0 {
				stub.Output <- &stream.StreamChunk{Data: b[:end], Timestamp: time.Now()}
			}
			st.conn.replies.Add(int64(n))
			b = b[end:]
			continue
		}
		// The cut statement's answer: withheld, and the end of it ends the
		// connection.
		if n, _ := st.count(b, 1); n == 0 {
			return true
		}
		st.conn.replies.Add(1)
		st.conn.end()
		t.up.poke()
		stub.Close()
		drain(stub)
		return false
	}
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
