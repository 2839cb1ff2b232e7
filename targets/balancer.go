package targets

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/idemcheck/idemcheck/internal/tcprelay"
)

// balancerDialTimeout bounds the connection to an instance. Loopback
// answers at once, refused or accepted, even for a paused instance (the
// kernel accepts for it); only a full accept queue makes a dial wait.
const balancerDialTimeout = 5 * time.Second

// balancer is a TCP proxy on loopback in front of a target's instances. It
// hands each new connection to the next instance in turn and never skips
// one: a dead instance costs the client a reset connection, as behind a
// real load balancer without health checks, because the harness must see
// what clients of such a deployment see. Requests on one kept-alive
// connection all go to the same instance, as they would there.
type balancer struct {
	relay    *tcprelay.Relay
	backends []string // host:port of each instance
	dialer   net.Dialer
}

// newBalancer listens on a free loopback port and starts forwarding.
func newBalancer(backends []string) (*balancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("balancer: no instances to forward to")
	}
	b := &balancer{backends: backends, dialer: net.Dialer{Timeout: balancerDialTimeout}}
	var err error
	if b.relay, err = tcprelay.Listen(); err != nil {
		return nil, fmt.Errorf("cannot start the balancer on 127.0.0.1: %v", err)
	}
	b.relay.Start(b.forward)
	return b, nil
}

// addr returns the balancer's host:port.
func (b *balancer) addr() string { return b.relay.Addr() }

// Close stops accepting, closes every live connection on both sides and
// waits until all forwarding has ended. It is idempotent.
func (b *balancer) Close() error {
	if err := b.relay.Close(); err != nil {
		return fmt.Errorf("cannot close the balancer on %s: %v", b.addr(), err)
	}
	return nil
}

// forward connects client, the n-th connection accepted, to the next
// backend in turn and copies both ways until both directions have ended.
func (b *balancer) forward(n uint64, client net.Conn) {
	server, err := b.dialer.Dial("tcp", b.backends[n%uint64(len(b.backends))])
	if err != nil {
		// The instance is down: the client sees its connection reset,
		// the nearest a proxy can come to "refused" once it has accepted.
		resetConn(client)
		return
	}
	if !b.relay.Track(server) {
		_ = server.Close()
		resetConn(client)
		return
	}
	defer b.relay.Untrack(server)

	done := make(chan error, 2)
	go func() { done <- copyHalf(server, client) }()
	go func() { done <- copyHalf(client, server) }()
	if err := <-done; err != nil {
		// One side failed or was reset: pass it on as a reset to both, so
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
