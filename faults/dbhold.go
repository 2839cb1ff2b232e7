package faults

import (
	"errors"
	"time"
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
// dropped and the database connection closed, as Cut would do. A hold
// nobody decides within an hour is cut.
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
	// Conn numbers the connection it came from (see Landing.Conn).
	Conn int

	h *heldStatement
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
	if e.h.decide(outcomeReleased, decideWait) != outcomeReleased {
		return ErrHoldEnded
	}
	return nil
}

// ReleaseHoldingAnswer forwards the held message as Release does, and
// stops the database's answer to it on its way back: the returned
// AnswerHold's Held is closed once the database has answered the message
// (its answer came back whole: a ReadyForQuery on PostgreSQL, an OK or
// ERR on MySQL) and the answer was held, before the target received any
// of it. A COMMIT or an autocommitted write held so has committed in the
// database while the target does not know it yet, so it has done nothing
// after it, in this database or anywhere else (a key store in
// Redis, a file, its memory). Forward or Drop the answer afterwards. Only
// the watched proxy (Link.WatchedAddr, Link.Arm) follows answers; on
// another, it returns ErrAnswerNotFollowed and releases nothing.
func (e HoldEvent) ReleaseHoldingAnswer() (*AnswerHold, error) {
	return e.releaseHoldingAnswer(false)
}

func (e HoldEvent) releaseHoldingAnswer(freeze bool) (*AnswerHold, error) {
	if e.h == nil || e.h.conn == nil {
		return nil, ErrHoldEnded
	}
	if !e.h.conn.followed.Load() {
		return nil, ErrAnswerNotFollowed
	}
	var freezes *watchToxic
	if freeze {
		freezes = e.h.watch
	}
	a := e.h.conn.holdAnswer(e.h.prior, false, freezes)
	unquiet := 0
	if freezes != nil {
		// What the other connections sent before the freeze runs first:
		// a queue's fetch in flight would otherwise run just after the
		// commit, take the job it commits and strand it at the kill.
		unquiet = freezes.quiesce(e.h.conn, QuiesceBound)
	}
	if err := e.Release(); err != nil {
		e.h.conn.answer.CompareAndSwap(a, nil)
		a.thaw(false)
		return nil, err
	}
	return &AnswerHold{a: a, unquiet: unquiet}, nil
}

// QuiesceBound bounds the wait, before a freezing release, for the
// statements other connections had in flight (a longer one is let run on,
// and the release says so: AnswerHold.Unquiet). A statement sent just
// before the freeze may wait that long for a core on a loaded machine
// before it takes its snapshot, and would then see the commit.
const QuiesceBound = 5 * time.Second

// ReleaseHoldingAnswerFreezing is ReleaseHoldingAnswer for a kill at the
// instant the database has committed: from the moment the statement is
// released, nothing else the target sends on any connection of the link
// reaches the database, as nothing does from a process that died at that
// instant. A queue's worker in the same process that would fetch the job
// the statement commits (told of it by the commit's notification) is
// stopped the same way, instead of marking the job running a few
// milliseconds before the kill and leaving it stranded. Once the answer is
// decided the link thaws: after Forward what it withheld goes on; after
// Drop (the target was killed) it is discarded and the connections it came
// from are closed. The statement's connection ending does not thaw it: a
// target of several processes is not dead until its last process is, and
// another one's worker, its connections closed under it, would fetch the
// job again (the freeze thaws on its own 10 s after that end if nothing
// decides). Before the statement goes, the statements the other
// connections had in flight are let finish (5 s at most): none of
// them runs after the commit.
func (e HoldEvent) ReleaseHoldingAnswerFreezing() (*AnswerHold, error) {
	return e.releaseHoldingAnswer(true)
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
	if e.h.decide(outcomeCut, decideWait) == outcomeReleased {
		return ErrHoldReleased
	}
	return nil
}

// heldStatement is a statement held on its way to the database, by a
// db-hold (reported on Link.Held) or by a write barrier.
type heldStatement struct {
	*hold
	event HoldEvent
	// delivered is touched only by the toxic's goroutine: the event was
	// received from Link.Held, or will never be (the Link closed, or a
	// barrier decides it).
	delivered bool
	// conn and prior place the held message on its connection: its answer
	// is the first numbered past prior (answerMark), which
	// ReleaseHoldingAnswer holds and a barrier in turn waits for.
	conn  *dbConn
	prior int64
	// watch is the watch toxic that held it, whose connections
	// ReleaseHoldingAnswerFreezing freezes (nil: a barrier's hold).
	watch *watchToxic
}

// holdStatement holds the statement ev on conn, which ends with conn and
// with the Link (linkDone).
func holdStatement(l Landing, conn *dbConn, prior int64, linkDone <-chan struct{}) *heldStatement {
	h := &heldStatement{hold: newHold(conn.gone, linkDone), conn: conn, prior: prior}
	h.event = HoldEvent{Fault: l.Fault, SQL: l.SQL, Match: l.Match, Landing: l.Kind, Conn: l.Conn, h: h}
	return h
}
