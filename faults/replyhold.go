package faults

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/idemcheck/idemcheck/internal/tcprelay"
)

// HoldReply is the name of the client-link fault a ReplyHold applies: each
// request passes whole, and the reply is held at its first byte, before any
// of it reaches the client. It is not served by Link (and Parse does not
// know it): it needs a harness that decides, per held reply, whether the
// reply passes or the connection is cut, which is what ReplyHold offers.
const HoldReply = "hold-reply"

// ReplyHold is a client-link proxy in front of one upstream (the target's
// host:port) that lets every request through and holds every reply at its
// first byte: the target has done its work and is writing its answer, and
// the client has received nothing. It reports each held reply on Held while
// armed; unarmed, replies pass at once.
//
// With it a harness can act at the moment between "the handler committed
// and is answering" and "the answer reached the client": kill the target
// there, then Cut, and the client's attempt ends with no reply at all.
// ReplyHold is a plain TCP relay, apart from Link's toxiproxy, because its
// holds need a decision from the harness for each connection.
type ReplyHold struct {
	upstream string
	relay    *tcprelay.Relay
	held     chan ReplyEvent
	done     chan struct{} // closed by Close
	doneOnce sync.Once

	mu    sync.Mutex
	armed chan struct{} // closed by the disarm of the current arming; nil when unarmed
}

// ReplyEvent reports a reply held at its first byte. Exactly one of Release
// or Cut decides what happens to it; if the target ends its connection
// first, the client's side is closed without a byte. A reply nobody
// decides within an hour is cut.
type ReplyEvent struct {
	// Bytes is how many reply bytes the proxy holds (the first read).
	Bytes int
	r     *heldReply
}

// ErrReplyEnded is returned by ReplyEvent.Release when the held reply can
// no longer reach the client: Cut came first, or the proxy was closed.
var ErrReplyEnded = errors.New("faults: the held reply's connection had already ended")

// Release forwards the held bytes and lets the rest of the reply follow.
func (e ReplyEvent) Release() error {
	if e.r == nil {
		return ErrReplyEnded
	}
	// The relay goroutine that delivered the event waits for the decision
	// or the proxy's close, and resolves it either way.
	if e.r.decide(outcomeReleased, decideWait) != outcomeReleased {
		return ErrReplyEnded
	}
	return nil
}

// Cut drops the held bytes and closes both sides of the connection: the
// client receives nothing.
func (e ReplyEvent) Cut() error {
	if e.r != nil {
		e.r.decide(outcomeCut, decideWait)
	}
	return nil
}

// heldReply is one held reply: released, it passes; cut, the connection
// closes without a byte to the client; ended, the proxy closed first.
type heldReply struct{ *hold }

func (rh *ReplyHold) newHeldReply() *heldReply { return &heldReply{newHold(rh.done)} }

// NewReplyHold starts a ReplyHold on 127.0.0.1 in front of upstream. The
// upstream is dialled per client connection, so the target need not run yet.
func NewReplyHold(upstream string) (*ReplyHold, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faults: upstream %q: %w", upstream, err)
	}
	rh := &ReplyHold{upstream: upstream, held: make(chan ReplyEvent), done: make(chan struct{})}
	var err error
	if rh.relay, err = tcprelay.Listen(); err != nil {
		return nil, fmt.Errorf("faults: %s: %w", HoldReply, err)
	}
	rh.relay.Start(rh.relayConn)
	return rh, nil
}

// Addr is the address to send requests to.
func (rh *ReplyHold) Addr() string { return rh.relay.Addr() }

// Held delivers a ReplyEvent for each reply held while armed. The channel
// is never closed.
func (rh *ReplyHold) Held() <-chan ReplyEvent { return rh.held }

// Arm makes the proxy hold replies until disarm is called. A reply held
// and not yet received from Held when disarm is called passes on.
func (rh *ReplyHold) Arm() (disarm func()) {
	ch := make(chan struct{})
	rh.mu.Lock()
	rh.armed = ch
	rh.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			rh.mu.Lock()
			if rh.armed == ch {
				rh.armed = nil
			}
			rh.mu.Unlock()
			close(ch)
		})
	}
}

// Close stops the listener and closes every connection, held ones included.
func (rh *ReplyHold) Close() error {
	rh.doneOnce.Do(func() { close(rh.done) })
	return rh.relay.Close()
}

// relayConn carries one client connection: the request upstream as it
// comes, the reply downstream once its first bytes have been let through.
func (rh *ReplyHold) relayConn(_ uint64, client net.Conn) {
	up, err := net.Dial("tcp", rh.upstream)
	if err != nil {
		return
	}
	if !rh.relay.Track(up) {
		_ = up.Close()
		return
	}
	defer rh.relay.Untrack(up)

	go func() {
		_, _ = io.Copy(up, client)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()

	buf := make([]byte, 32<<10)
	n, err := up.Read(buf)
	if n == 0 {
		return // the target ended the connection without a byte: so does the client's
	}
	rh.mu.Lock()
	armed := rh.armed
	rh.mu.Unlock()
	if armed != nil {
		h := rh.newHeldReply()
		ev := ReplyEvent{Bytes: n, r: h}
		select {
		case rh.held <- ev:
			// The harness decides; a target that ends its connection
			// meanwhile does not change what the client gets.
			o, ok := h.await(rh.done)
			if !ok {
				o = outcomeEnded
			}
			h.resolve(o)
		case <-armed:
			h.resolve(outcomeReleased) // disarmed before anyone took the event: pass
		case <-rh.done:
			h.resolve(outcomeEnded)
		}
		if h.taken != outcomeReleased {
			return // Cut: both sides close, nothing reached the client
		}
	}
	if _, werr := client.Write(buf[:n]); werr != nil || err != nil {
		return
	}
	_, _ = io.Copy(client, up)
}
