package targets

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBackend is a real TCP server that reads a connection to its end
// and answers "NAME got N bytes", which only works if the end of the
// client's stream is passed on.
func countingBackend(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				n, _ := io.Copy(io.Discard, conn)
				fmt.Fprintf(conn, "%s got %d bytes", name, n)
			}()
		}
	}()
	return ln.Addr().String()
}

// exchange sends msg through the balancer, closes its sending side and
// returns the reply. The deadline only turns a hang into a failure.
func exchange(t *testing.T, addr, msg string) (string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		// A reset that arrives before the handshake is seen ends the dial.
		return "", err
	}
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	if _, err := io.WriteString(conn, msg); err != nil {
		return "", err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(conn)
	return string(reply), err
}

// deadAddr is a loopback address nobody listens on. A port freed by
// closing a listener would not do: the kernel may hand it straight back to
// the balancer's own listener, which then forwards to itself.
const deadAddr = "127.0.0.1:1"

func TestBalancerRoundRobinHalfCloseAndDeadBackend(t *testing.T) {
	b, err := newBalancer([]string{countingBackend(t, "a"), countingBackend(t, "b"), deadAddr})
	require.NoError(t, err)
	defer b.Close()

	for round := range 2 {
		reply, err := exchange(t, b.addr(), "hello")
		require.NoError(t, err, "round %d", round)
		assert.Equal(t, "a got 5 bytes", reply, "the end of the request reaches the instance, and the reply comes back")
		reply, err = exchange(t, b.addr(), "hi")
		require.NoError(t, err, "round %d", round)
		assert.Equal(t, "b got 2 bytes", reply)
		// The third instance is down and is not skipped: the client's
		// connection is reset, and the next one goes to the first again.
		reply, err = exchange(t, b.addr(), "x")
		assert.Error(t, err, "round %d: a dead instance gives an error, not an answer", round)
		assert.Empty(t, reply)
	}
}

func TestBalancerCloseEndsLiveConnections(t *testing.T) {
	b, err := newBalancer([]string{countingBackend(t, "a")})
	require.NoError(t, err)
	conn, err := net.Dial("tcp", b.addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "open")
	require.NoError(t, err)

	require.NoError(t, b.Close())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err)
	var netErr net.Error
	assert.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the connection was closed, not left hanging: %v", err)
	assert.NoError(t, b.Close(), "Close is idempotent")
	_, err = net.Dial("tcp", b.addr())
	assert.Error(t, err, "a closed balancer accepts nothing")
}
