package faults

import (
	"errors"
	"sync"
)

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
// (its answer came back whole: a ReadyForQuery on PostgreSQL, an OK or
// ERR on MySQL) and the answer was held, before the target received it.
// A COMMIT or an autocommitted write held so has committed in the
// database while the target does not know it yet, so it has done nothing
// after it, in this database or anywhere else (a key store in
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
	// ReleaseHoldingAnswer: its answer is the first numbered past prior
	// (answerMark). conn is nil for a hold that cannot follow its answer.
	conn  *dbConn
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
