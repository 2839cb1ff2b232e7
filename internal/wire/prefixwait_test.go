package wire

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/linkemu"
)

// prefixServer is a raw HTTP/1.1 server that stamps, for each request,
// when its head had reached it (the prefix of a body-carrying request is
// its head and all but the body's last byte) and answers 201.
type prefixServer struct {
	mu    sync.Mutex
	heads []time.Time
}

func (p *prefixServer) serve(t *testing.T) string { return rawListener(t, p.conn) }

// conn reads a request's head (http.ReadRequest returns once the head is
// parsed, before the body), stamps it, reads the body and answers.
func (p *prefixServer) conn(c net.Conn) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	p.mu.Lock()
	p.heads = append(p.heads, time.Now())
	p.mu.Unlock()
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return
	}
	_, _ = c.Write([]byte("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"))
}

func (p *prefixServer) reset() {
	p.mu.Lock()
	p.heads = nil
	p.mu.Unlock()
}

// Across a link that acknowledges at once and delivers 25 ms later (as a
// proxy or a balancer does), an HTTP/1.1 burst releases its final bytes
// only once every prefix has reached the server: the single attempts
// before it measured the round trip, and the release waited it. A release
// that stopped waiting would send its final bytes while the prefixes were
// still on their way, each request's arrival then the later of two delays.
func TestHTTP1ReleaseWaitsForThePrefixesAcrossALink(t *testing.T) {
	var srv prefixServer
	addr := srv.serve(t)
	link, err := linkemu.Listen(addr, linkemu.Profile{Name: "test", Base: 25 * time.Millisecond})
	require.NoError(t, err)
	defer link.Close()

	c := &Client{RoundTrips: &RoundTrips{}}
	req := Request{Method: "POST", Path: "/orders", Body: []byte(`{"customerId":"c1"}`)}
	for range 3 {
		res := c.Do(context.Background(), link.Addr(), req)
		require.NoError(t, res.Err)
	}
	rtt, _, n := c.RoundTrips.Estimate()
	require.Equal(t, 3, n)
	require.GreaterOrEqual(t, rtt, 50*time.Millisecond, "a round trip crosses the link twice")

	srv.reset()
	br := c.SendBurst(context.Background(), link.Addr(), slices.Repeat([]Request{req}, 8))
	var released time.Time
	for _, r := range br.Results {
		require.NoError(t, r.Err)
		if released.IsZero() || r.Sent.Before(released) {
			released = r.Sent
		}
	}
	srv.mu.Lock()
	heads := slices.Clone(srv.heads)
	srv.mu.Unlock()
	require.Len(t, heads, 8)
	for i, h := range heads {
		assert.True(t, h.Before(released), "prefix %d reached the server %v after the first final byte was released", i, h.Sub(released))
	}
	assert.GreaterOrEqual(t, br.Link.PrefixWait, rtt, "the release waited less than the quickest round trip")
	assert.Equal(t, rtt, br.Link.RTT)
	assert.Equal(t, 3, br.Link.RoundTrips)
}

// On loopback the kernel reports the prefixes acknowledged, and with no
// round trip measured the release waits for nothing more.
func TestHTTP1ReleaseSeesTheKernelsAcknowledgements(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_INFO is read on Linux")
	}
	var srv prefixServer
	addr := srv.serve(t)
	c := &Client{}
	br := c.SendBurst(context.Background(), addr, slices.Repeat([]Request{{Method: "POST", Path: "/", Body: []byte("{}")}}, 4))
	for _, r := range br.Results {
		require.NoError(t, r.Err)
	}
	assert.True(t, br.Link.Acked, "%+v", br.Link)
	assert.Positive(t, br.Link.KernelRTT)
	assert.Zero(t, br.Link.RoundTrips)
	assert.Less(t, br.Link.PrefixWait, MaxPrefixWait)
}
