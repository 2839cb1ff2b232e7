package faults

import (
	"sync"
	"time"
)

// Every hold of the package is one state machine: a statement held on its
// way to the database (db-hold, the freeze at a statement, a write
// barrier's holds), the database's answer held on its way back (an
// AnswerHold, the cut after an answer: db-cut-after) and a reply held on
// the client link (ReplyHold). A thing is held by exactly one goroutine,
// its holder (a toxic's, a relay's), which alone acts on the connection;
// any number of parties may decide it (the harness, a barrier, the end of
// the connection, the Link's close), and the first offer wins. The holder
// takes the offer, acts, and resolves the hold with what it did: held
// becomes released, cut or ended, once, and every wait wakes.
//
// No wait is unbounded. A party that decides waits for the holder at most
// a given time, and no longer than the held thing's connection or Link
// lasts; a holder keeps a thing nobody decides at most holdBound, and
// then cuts it.

// outcome is the state of a hold: held until decided, then how it ended.
type outcome int

const (
	// outcomeHeld: not decided yet.
	outcomeHeld outcome = iota
	// outcomeReleased: the held bytes went on.
	outcomeReleased
	// outcomeCut: the held bytes were dropped (a statement's or a reply's
	// connection closed with them; an answer's as its hold says).
	outcomeCut
	// outcomeEnded: the connection ended, or the Link closed, first;
	// nothing was forwarded.
	outcomeEnded
)

const (
	// decideWait bounds how long a party that decides a hold (Release,
	// Cut, Forward, Drop) waits for its holder to act.
	decideWait = 10 * time.Second
	// turnWait bounds how long a barrier waits for a holder to act on its
	// release: longer, and the holder's toxic was interrupted and not run
	// again (its proxy is closing), so the write goes nowhere.
	turnWait = time.Second
	// holdBound bounds how long a holder keeps a thing nobody decides: a
	// harness that never decides leaves no connection held for ever. It is
	// far beyond any hold a check makes on purpose (a freeze past the
	// target's lease lasts the lease and a margin).
	holdBound = time.Hour
)

// hold is one held thing's state. offers carries the first offer to the
// holder; done is closed when the holder resolves it, and taken is then
// what it did.
type hold struct {
	offers chan outcome
	done   chan struct{}
	once   sync.Once
	taken  outcome
	// ends are what stop a party's wait besides the decision: the held
	// thing's connection's end, its Link's close (nil: none).
	ends [2]<-chan struct{}
	// until is when its holder stops waiting for a decision and cuts it.
	until time.Time
}

func newHold(ends ...<-chan struct{}) *hold {
	h := &hold{offers: make(chan outcome, 1), done: make(chan struct{}), until: time.Now().Add(holdBound)}
	copy(h.ends[:], ends)
	return h
}

// offer proposes o to the holder, unless another offer is already on its
// way: the first wins.
func (h *hold) offer(o outcome) {
	select {
	case h.offers <- o:
	default:
	}
}

// decide offers o and waits, at most within, for what was done.
func (h *hold) decide(o outcome, within time.Duration) outcome {
	h.offer(o)
	return h.wait(within)
}

// wait returns what was done, once the holder has resolved the hold, or
// outcomeHeld if within passed first or one of the hold's ends closed (the
// holder may never act then; an offer stays queued for a holder that
// still comes to it).
func (h *hold) wait(within time.Duration) outcome {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-h.done:
	case <-h.ends[0]:
	case <-h.ends[1]:
	case <-t.C:
	}
	return h.state()
}

// state is the hold's state now.
func (h *hold) state() outcome {
	select {
	case <-h.done:
		return h.taken
	default:
		return outcomeHeld
	}
}

// resolve records what the holder did; only the first call counts.
func (h *hold) resolve(o outcome) {
	h.once.Do(func() {
		h.taken = o
		close(h.done)
	})
}

// bound returns a timer that fires when the holder must stop waiting for
// a decision (holdBound after the hold began), and cut.
func (h *hold) bound() *time.Timer { return time.NewTimer(time.Until(h.until)) }

// await is the holder's wait for a decision: the offer, or stop closing
// (the proxy is closing: the offer is lost), or, at the hold's bound, a
// cut. It does not resolve the hold: the holder acts first.
func (h *hold) await(stop <-chan struct{}) (o outcome, ok bool) {
	t := h.bound()
	defer t.Stop()
	select {
	case o = <-h.offers:
		return o, true
	case <-t.C:
		return outcomeCut, true
	case <-stop:
		return outcomeHeld, false
	}
}
