package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addrOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return srv.Listener.Addr().String()
}

func TestDoRoundTrip(t *testing.T) {
	type seen struct {
		method, path, host, key, body string
		close                         bool
		contentLength                 int64
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("Idempotency-Key"), string(body), r.Close, r.ContentLength}
		w.Header().Set("Location", "/orders/7")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":7}`)
	}))
	defer srv.Close()

	c := &Client{Host: "api.example:8080"}
	res := c.Do(context.Background(), addrOf(t, srv), Request{
		Method: "POST", Path: "/orders?x=1",
		Header: http.Header{"Idempotency-Key": {"k-1"}, "Content-Type": {"application/json"}},
		Body:   []byte(`{"totalCents":4000}`),
	})
	require.NoError(t, res.Err)
	assert.Equal(t, "", res.ErrKind)
	assert.True(t, res.Written)
	assert.Equal(t, http.StatusCreated, res.Status)
	assert.Equal(t, "/orders/7", res.Header.Get("Location"))
	assert.Equal(t, `{"id":7}`, string(res.Body))
	assert.False(t, res.Truncated)
	assert.Greater(t, res.Received, int64(len(res.Body)))
	assert.False(t, res.Start.After(res.Sent))
	assert.False(t, res.Sent.After(res.FirstByte))
	assert.False(t, res.FirstByte.After(res.End))

	s := <-got
	assert.Equal(t, seen{"POST", "/orders?x=1", "api.example:8080", "k-1", `{"totalCents":4000}`, true, 19}, s)
}

func TestEncode(t *testing.T) {
	c := &Client{}
	b, err := c.Encode("127.0.0.1:9", Request{
		Method: "POST", Path: "/p",
		Header: http.Header{"Idempotency-Key": {"k"}, "Connection": {"keep-alive"}, "Content-Length": {"99"}, "B": {"1", "2"}},
		Body:   []byte("xy"),
	})
	require.NoError(t, err)
	want := "POST /p HTTP/1.1\r\nHost: 127.0.0.1:9\r\nB: 1\r\nB: 2\r\nIdempotency-Key: k\r\n" +
		"User-Agent: idemcheck\r\nContent-Length: 2\r\nConnection: close\r\n\r\nxy"
	assert.Equal(t, want, string(b))

	b, err = c.Encode("h:1", Request{Header: http.Header{"User-Agent": nil}})
	require.NoError(t, err)
	assert.Equal(t, "GET / HTTP/1.1\r\nHost: h:1\r\nConnection: close\r\n\r\n", string(b))

	for _, bad := range []Request{
		{Method: "GE T"},
		{Path: "/a b"},
		{Header: http.Header{"X": {"a\r\nInjected: 1"}}},
		{Header: http.Header{"Bad Name": {"v"}}},
	} {
		_, err := c.Encode("h:1", bad)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestDoInvalidRequestNeverDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if conn, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			conn.Close()
		}
	}()
	res := (&Client{}).Do(context.Background(), ln.Addr().String(), Request{Header: http.Header{"X": {"a\nb"}}})
	require.Error(t, res.Err)
	assert.Equal(t, KindOther, res.ErrKind)
	assert.False(t, res.Written)
	select {
	case <-accepted:
		t.Fatal("an invalid request was dialed")
	case <-time.After(50 * time.Millisecond):
	}
}

// refusedAddr is a loopback address nobody listens on. Port 1 is below the
// range the kernel hands out, so unlike a port freed by closing a listener
// no other test can be given it meanwhile.
const refusedAddr = "127.0.0.1:1"

func TestDoRefused(t *testing.T) {
	res := (&Client{}).Do(context.Background(), refusedAddr, Request{Method: "POST", Body: []byte("x")})
	require.Error(t, res.Err)
	assert.Equal(t, KindRefused, res.ErrKind, "%v", res.Err)
	assert.False(t, res.Written)
	assert.True(t, res.Sent.IsZero())
	assert.True(t, res.FirstByte.IsZero())
}

// A server that accepts the request and drops the connection without a byte
// of reply: the request was written, so it may have acted.
func TestDoHijackClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()

	for range 20 {
		res := (&Client{}).Do(context.Background(), addrOf(t, srv), Request{Method: "POST", Body: []byte("hello")})
		require.Error(t, res.Err)
		assert.Contains(t, []string{KindEOF, KindReset}, res.ErrKind, "%v", res.Err)
		assert.True(t, res.Written)
		assert.Equal(t, 0, res.Status)
		assert.Equal(t, int64(0), res.Received)
	}
}

// rawServer answers every connection with reply after reading the request
// head, then closes. It stands in for servers that misbehave on the wire.
func rawServer(t *testing.T, reply string) string {
	return rawListener(t, func(conn net.Conn) {
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, reply)
	})
}

// rawListener listens on loopback and hands every connection to serve, on
// a goroutine of its own, closing it when serve returns.
func rawListener(t *testing.T, serve func(net.Conn)) string {
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
				serve(conn)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestDoCutAndGarbageReplies(t *testing.T) {
	cases := []struct {
		name, reply, kind string
		status            int
		body              string
	}{
		{"nothing", "", KindEOF, 0, ""},
		{"first byte only", "H", KindEOF, 0, ""},
		{"status line cut", "HTTP/1.1 20", KindEOF, 0, ""},
		{"headers cut", "HTTP/1.1 201 Created\r\nContent-Len", KindMalformed, 0, ""},
		{"body short", "HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nabc", KindMalformed, 201, "abc"},
		{"chunked cut", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", KindMalformed, 201, "ab"},
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", KindMalformed, 0, ""},
		{"bad status", "HTTP/1.1 2x1 OK\r\n\r\n", KindMalformed, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.reply)
			res := (&Client{}).Do(context.Background(), addr, Request{Method: "POST", Body: []byte("x")})
			require.Error(t, res.Err)
			assert.Equal(t, tc.kind, res.ErrKind, "%v", res.Err)
			assert.True(t, res.Written)
			assert.Equal(t, tc.status, res.Status)
			assert.Equal(t, tc.body, string(res.Body))
			assert.Equal(t, int64(len(tc.reply)), res.Received)
		})
	}
}

func TestDoInformationalSkipped(t *testing.T) {
	addr := rawServer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
	res := (&Client{}).Do(context.Background(), addr, Request{Method: "POST"})
	require.NoError(t, res.Err)
	assert.Equal(t, 201, res.Status)
	assert.Equal(t, "ok", string(res.Body))
}

func TestDoCloseDelimitedBody(t *testing.T) {
	addr := rawServer(t, "HTTP/1.1 200 OK\r\n\r\nuntil close")
	res := (&Client{}).Do(context.Background(), addr, Request{})
	require.NoError(t, res.Err)
	assert.Equal(t, "until close", string(res.Body))
}

func TestDoTimeout(t *testing.T) {
	release := make(chan struct{})
	read := make(chan struct{}, 3) // one per request the server read whole
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err == nil {
			read <- struct{}{}
		}
		<-release
	}))
	defer srv.Close()
	defer close(release)

	// The server never answers. Whether the request was written before the
	// timeout depends on the machine's load; a request the server read whole
	// certainly was, so Written is checked against what the server saw.
	wasWritten := func(res Result) {
		t.Helper()
		select {
		case <-read:
			assert.True(t, res.Written, "the server read the request whole, yet it is not marked written")
		case <-time.After(10 * time.Second):
			t.Log("the server never read the request: the machine delayed it past the timeout")
		}
	}

	c := &Client{Timeout: time.Second}
	res := c.Do(context.Background(), addrOf(t, srv), Request{Method: "POST", Body: []byte("x")})
	require.Error(t, res.Err)
	assert.Equal(t, KindTimeout, res.ErrKind, "%v", res.Err)
	assert.GreaterOrEqual(t, res.End.Sub(res.Start), time.Second)
	wasWritten(res)

	// A context deadline shorter than Timeout wins and is still a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res = (&Client{Timeout: time.Hour}).Do(ctx, addrOf(t, srv), Request{Method: "POST", Body: []byte("x")})
	assert.Equal(t, KindTimeout, res.ErrKind, "%v", res.Err)
	assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
	wasWritten(res)

	// Cancelling the context, once the server has the request, ends the
	// blocked read: without it the attempt would wait for a reply forever.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-read; cancel() }()
	res = (&Client{Timeout: time.Hour}).Do(ctx, addrOf(t, srv), Request{Method: "POST", Body: []byte("x")})
	assert.Equal(t, KindOther, res.ErrKind, "%v", res.Err)
	assert.ErrorIs(t, res.Err, context.Canceled)
	assert.True(t, res.Written)
}

func TestDoBodyLimit(t *testing.T) {
	big := strings.Repeat("a", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, big)
	}))
	defer srv.Close()

	res := (&Client{MaxBody: 1000}).Do(context.Background(), addrOf(t, srv), Request{})
	require.NoError(t, res.Err)
	assert.Equal(t, 200, res.Status)
	assert.Len(t, res.Body, 1000)
	assert.True(t, res.Truncated)

	res = (&Client{MaxBody: 5000}).Do(context.Background(), addrOf(t, srv), Request{})
	require.NoError(t, res.Err)
	assert.Len(t, res.Body, 5000)
	assert.False(t, res.Truncated)
}

func TestDoTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls=%v host=%s", r.TLS != nil, r.Host)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake below is expected
	srv.StartTLS()
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "example.com"

	c := &Client{TLS: cfg, Host: "example.com"}
	res := c.Do(context.Background(), addrOf(t, srv), Request{})
	require.NoError(t, res.Err)
	assert.Equal(t, "tls=true host=example.com", string(res.Body))

	// A failed handshake never carried the request.
	res = (&Client{TLS: &tls.Config{ServerName: "example.com"}}).Do(context.Background(), addrOf(t, srv), Request{})
	require.Error(t, res.Err)
	assert.False(t, res.Written)
	assert.Equal(t, KindOther, res.ErrKind, "%v", res.Err)
}

// earlyReplyServer answers each connection with a 413 as soon as the request
// head has arrived, without reading the body, then resets the connection.
func earlyReplyServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				br := bufio.NewReader(conn)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				io.WriteString(conn, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				time.Sleep(50 * time.Millisecond)
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			})
		}
	})
	return ln.Addr().String()
}

// A server that answers before reading the request and then resets: the
// write fails, and if the early reply can still be read it is kept, with
// Written false. Linux delivers the reply (measured: every run), but which
// of the two happens is up to the kernel, so a reset is accepted too;
// neither may claim the request was written.
func TestDoEarlyReplyThenReset(t *testing.T) {
	addr := earlyReplyServer(t)
	// The timeout is only a safety net: the server answers at once.
	res := (&Client{Timeout: time.Minute}).Do(context.Background(), addr,
		Request{Method: "POST", Body: make([]byte, 32<<20)})
	assert.False(t, res.Written)
	t.Logf("early reply: status=%d kind=%q err=%v", res.Status, res.ErrKind, res.Err)
	if res.Err == nil {
		assert.Equal(t, 413, res.Status)
	} else {
		assert.Equal(t, KindReset, res.ErrKind)
	}
}

// In a burst, an attempt whose early part already failed (here: the server
// answered early and reset while the body was still going out) is over: it
// is not released, written to or read again.
func TestBurstEarlyReplyNotReleased(t *testing.T) {
	addr := earlyReplyServer(t)
	reqs := []Request{{Method: "POST", Body: make([]byte, 32<<20)}, {Method: "POST", Body: make([]byte, 32<<20)}}
	results, spread := (&Client{Timeout: time.Minute}).Burst(context.Background(), addr, reqs)
	assert.Zero(t, spread, "nothing was released")
	for _, res := range results {
		assert.False(t, res.Written)
		assert.True(t, res.Sent.IsZero())
		if res.Err == nil {
			assert.Equal(t, 413, res.Status)
		} else {
			assert.Equal(t, KindReset, res.ErrKind)
		}
	}
}
