package targets

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// balancerDialTimeout bounds the connection to an instance. Loopback
// answers at once, refused or accepted, even for a paused instance (the
// kernel accepts for it); only a full accept queue makes a dial wait.
const balancerDialTimeout = 5 * time.Second

// balancer is a TCP proxy on loopback in front of a target's instances. It
// hands each new connection to the next instance in turn and never skips
// one: a dead instance costs the client a resetConn connection, as behind a
// real load balancer without health checks, because the harness must see
// what clients of such a deployment see. Requests on one kept-alive
// connection all go to the same instance, as they would there.
type balancer struct {
	ln       net.Listener
	backends []string // host:port of each instance
	next     atomic.Uint64
	dialer   net.Dialer

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // both sides of every live connection

	wg sync.WaitGroup // the accept loop and every forwarding goroutine
}

// newBalancer listens on a free loopback port and starts forwarding.
func newBalancer(backends []string) (*balancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("balancer: no instances to forward to")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot start the balancer on 127.0.0.1: %v", err)
	}
	b := &balancer{
		ln:       ln,
		backends: backends,
		dialer:   net.Dialer{Timeout: balancerDialTimeout},
		conns:    map[net.Conn]struct{}{},
	}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

// addr returns the balancer's host:port.
func (b *balancer) addr() string { return b.ln.Addr().String() }

// Close stops accepting, closes every live connection on both sides and
// waits until all forwarding has ended. It is idempotent.
func (b *balancer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	err := b.ln.Close()
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	if err != nil {
		return fmt.Errorf("cannot close the balancer on %s: %v", b.addr(), err)
	}
	return nil
}

func (b *balancer) serve() {
	defer b.wg.Done()
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			if b.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait for some to be
			// freed rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		backend := b.backends[(b.next.Add(1)-1)%uint64(len(b.backends))]
		if !b.track(conn) {
			_ = conn.Close()
			return
		}
		// serve holds a count, so this Add never races Close's Wait at zero.
		b.wg.Add(1)
		go b.forward(conn, backend)
	}
}

// forward connects client to backend and copies both ways until both
// directions have ended.
func (b *balancer) forward(client net.Conn, backend string) {
	defer b.wg.Done()
	defer b.untrack(client)
	server, err := b.dialer.Dial("tcp", backend)
	if err != nil {
		// The instance is down: the client sees its connection resetConn,
		// the nearest a proxy can come to "refused" once it has accepted.
		resetConn(client)
		return
	}
	if !b.track(server) {
		_ = server.Close()
		resetConn(client)
		return
	}
	defer b.untrack(server)

	done := make(chan error, 2)
	go func() { done <- copyHalf(server, client) }()
	go func() { done <- copyHalf(client, server) }()
	if err := <-done; err != nil {
		// One side failed or resetConn: pass it on as a resetConn to both, so
		// neither peer mistakes it for a clean end of the stream.
		resetConn(client)
		resetConn(server)
	}
	<-done
}

// copyHalf copies one direction; a clean end of stream is passed on as a
// half close, so a peer that waits for it (a reply sent after the request
// is closed) still works.
func copyHalf(dst, src net.Conn) error {
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// resetConn closes conn with an RST instead of a FIN.
func resetConn(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (b *balancer) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// track registers a live connection for Close; it refuses once closed.
func (b *balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

// untrack closes a connection and forgets it.
func (b *balancer) untrack(c net.Conn) {
	_ = c.Close()
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}
