// Package tcprelay is the frame of a TCP relay on loopback: a listener
// that hands each connection to a handler and keeps track of every live
// connection, so that Close can end them all and wait for the handlers.
// The targets' balancer and faults.ReplyHold are built on it. It imports
// only the standard library, so any layer may use it.
package tcprelay

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Relay is a loopback listener whose connections are tracked.
type Relay struct {
	ln     net.Listener
	handle func(n uint64, client net.Conn)

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // every live connection, either side

	wg sync.WaitGroup // the accept loop and every handler
}

// Listen listens on a free port of 127.0.0.1. Nothing is accepted before
// Start.
func Listen() (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &Relay{ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

// Start accepts connections and hands each to handle, in a goroutine of
// its own, with n counting the connections accepted before it (0 for the
// first). The connection is tracked while handle runs, and closed when it
// returns. Start is called once, after whatever handle uses is set up.
func (r *Relay) Start(handle func(n uint64, client net.Conn)) {
	r.handle = handle
	r.wg.Add(1)
	go r.accept()
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Track registers a live connection (the upstream side of a client's, say)
// for Close to end. It refuses, and returns false, once the relay is
// closed.
func (r *Relay) Track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

// Untrack closes a tracked connection and forgets it.
func (r *Relay) Untrack(c net.Conn) {
	_ = c.Close()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// Close stops accepting, closes every live connection and waits until
// every handler has returned. Only the first call does so; later ones
// return nil.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	err := r.ln.Close()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *Relay) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for n := uint64(0); ; {
		c, err := r.ln.Accept()
		if err != nil {
			if r.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait for some to be
			// freed rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !r.Track(c) {
			_ = c.Close()
			return
		}
		// The accept loop holds a count, so this Add never races Close's
		// Wait at zero.
		r.wg.Add(1)
		go func(n uint64) {
			defer r.wg.Done()
			defer r.Untrack(c)
			r.handle(n, c)
		}(n)
		n++
	}
}
