package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"golang.org/x/net/http2/hpack"
)

// seenRequest is what the echo handler saw of one request.
type seenRequest struct {
	seq, remote, key string
	proto, bodyLen   int
	at               time.Time
}

// echoTarget answers every request with 201, the request's X-Seq in the
// body and in X-Echo, after reading the whole body; it records what it saw.
type echoTarget struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (e *echoTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	e.mu.Lock()
	e.seen = append(e.seen, seenRequest{
		seq: r.Header.Get("X-Seq"), remote: r.RemoteAddr, key: r.Header.Get("Idempotency-Key"),
		proto: r.ProtoMajor, bodyLen: len(body), at: now,
	})
	e.mu.Unlock()
	w.Header().Set("X-Echo", r.Header.Get("X-Seq"))
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, r.Header.Get("X-Seq"))
}

func (e *echoTarget) take() []seenRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.seen
	e.seen = nil
	return out
}

// h2cServer serves h over HTTP/1.1 and h2c prior knowledge, allowing
// maxStreams concurrent streams per connection (0: the server's default).
func h2cServer(t *testing.T, h http.Handler, maxStreams uint32) string {
	t.Helper()
	srv := httptest.NewServer(h2c.NewHandler(h, &http2.Server{MaxConcurrentStreams: maxStreams}))
	t.Cleanup(srv.Close)
	return addrOf(t, srv)
}

// tlsServer serves h over TLS, with HTTP/2 offered by ALPN when h2 is set;
// it returns the address and a client TLS configuration that trusts it.
func tlsServer(t *testing.T, h http.Handler, h2 bool) (string, *tls.Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "example.com"
	// What runner.Runner passes: an HTTP/2 burst must override it.
	cfg.NextProtos = []string{"http/1.1"}
	return addrOf(t, srv), cfg
}

func burstOf(n int, method string, body func(i int) []byte) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{
			Method: method, Path: "/orders",
			Header: http.Header{"Idempotency-Key": {"same-key"}, "X-Seq": {strconv.Itoa(i)}, "Content-Type": {"application/json"}},
		}
		if body != nil {
			reqs[i].Body = body(i)
		}
	}
	return reqs
}

func orderBody(i int) []byte {
	return []byte(fmt.Sprintf(`{"customerId":"c-%d","totalCents":4000}`, i))
}

// checkEcho checks that every reply came back on its own stream: request i
// was answered with its own X-Seq; and that the final frames of each of
// the lanes left in one write: request i went with request i%lanes.
func checkEcho(t *testing.T, r BurstResult, n, lanes int) {
	t.Helper()
	require.Len(t, r.Results, n)
	for i, res := range r.Results {
		sent := r.Results[i%lanes].Sent
		require.NoError(t, res.Err, "request %d", i)
		assert.True(t, res.Written, "request %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
		assert.Equal(t, strconv.Itoa(i), string(res.Body), "request %d got another stream's reply", i)
		assert.Equal(t, strconv.Itoa(i), res.Header.Get("X-Echo"))
		assert.Equal(t, sent, res.Sent, "every final frame of a lane left in one write")
		assert.False(t, res.Start.After(res.Sent))
		assert.False(t, res.Sent.After(res.FirstByte))
		assert.False(t, res.FirstByte.After(res.End))
		assert.Positive(t, res.Received)
	}
}

func arrivalSpread(seen []seenRequest) time.Duration {
	at := make([]time.Time, len(seen))
	for i, s := range seen {
		at[i] = s.at
	}
	return slices.MaxFunc(at, time.Time.Compare).Sub(slices.MinFunc(at, time.Time.Compare))
}

// A burst's streams go out over one h2c connection per release lane, each
// lane's final frames in one write; every request arrives whole, once.
func TestBurstH2C(t *testing.T) {
	const n, rounds = 32, 10
	for _, asked := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("lanes=%d", asked), func(t *testing.T) {
			var target echoTarget
			addr := h2cServer(t, &target, 0)
			c := &Client{Protocol: ProtocolH2, Lanes: asked}
			lanes := c.laneCount(n) // fewer on a machine with fewer cores
			for round := range rounds {
				r := c.SendBurst(context.Background(), addr, burstOf(n, "POST", orderBody))
				assert.Equal(t, ProtocolH2, r.Protocol)
				assert.Empty(t, r.Fallback)
				assert.Positive(t, r.Spread, "the release spread is recorded")
				checkEcho(t, r, n, lanes)

				seen := target.take()
				require.Len(t, seen, n, "the server saw every request once")
				remoteOf := map[int]string{}
				for _, s := range seen {
					assert.Equal(t, 2, s.proto)
					assert.Equal(t, "same-key", s.key)
					seq, err := strconv.Atoi(s.seq)
					require.NoError(t, err)
					assert.Equal(t, len(orderBody(seq)), s.bodyLen, "the whole body arrived, last byte included")
					remoteOf[seq] = s.remote
				}
				remotes := map[string]bool{}
				for seq, remote := range remoteOf {
					remotes[remote] = true
					assert.Equal(t, remoteOf[seq%lanes], remote, "request %d went on lane %d's connection", seq, seq%lanes)
				}
				assert.Len(t, remotes, lanes, "one connection per lane")
				t.Logf("round %d: client release spread %v, server arrival spread %v", round, r.Spread, arrivalSpread(seen))
			}
		})
	}
}

// A request without a body ends its stream with an empty DATA frame.
func TestBurstH2NoBody(t *testing.T) {
	var target echoTarget
	addr := h2cServer(t, &target, 0)
	c := &Client{Protocol: ProtocolH2}
	r := c.SendBurst(context.Background(), addr, burstOf(8, "GET", nil))
	assert.Equal(t, ProtocolH2, r.Protocol)
	checkEcho(t, r, 8, c.laneCount(8))
	assert.Len(t, target.take(), 8)
}

func TestBurstH2TLS(t *testing.T) {
	const n = 32
	var target echoTarget
	addr, cfg := tlsServer(t, &target, true)
	c := &Client{TLS: cfg, Host: "example.com", Protocol: ProtocolAuto}
	for range 3 {
		r := c.SendBurst(context.Background(), addr, burstOf(n, "POST", orderBody))
		assert.Equal(t, ProtocolH2, r.Protocol, "ALPN chose h2")
		assert.Empty(t, r.Fallback)
		assert.Positive(t, r.Spread)
		checkEcho(t, r, n, c.laneCount(n))
		seen := target.take()
		require.Len(t, seen, n)
		for _, s := range seen {
			assert.Equal(t, 2, s.proto)
		}
	}
	// The HTTP/1.1 engine on the same client still negotiates HTTP/1.1.
	res := c.Do(context.Background(), addr, Request{Header: http.Header{"X-Seq": {"7"}}})
	require.NoError(t, res.Err)
	assert.Equal(t, "7", string(res.Body))
	assert.Equal(t, 1, target.take()[0].proto)
}

// A server that allows fewer concurrent streams than the burst has gets
// the burst over HTTP/1.1, and the result says why.
func TestBurstH2MaxConcurrentStreams(t *testing.T) {
	var target echoTarget
	addr := h2cServer(t, &target, 8)
	c := &Client{Protocol: ProtocolH2}

	r := c.SendBurst(context.Background(), addr, burstOf(32, "POST", orderBody))
	assert.Equal(t, ProtocolHTTP1, r.Protocol)
	assert.Equal(t, uint32(8), r.MaxStreams)
	assert.Contains(t, r.Fallback, "allows 8 concurrent HTTP/2 streams and the burst has 32")
	require.Len(t, r.Results, 32)
	for i, res := range r.Results {
		require.NoError(t, res.Err)
		assert.Equal(t, strconv.Itoa(i), string(res.Body))
	}
	seen := target.take()
	require.Len(t, seen, 32)
	for _, s := range seen {
		assert.Equal(t, 1, s.proto)
	}

	r = c.SendBurst(context.Background(), addr, burstOf(8, "POST", orderBody))
	assert.Equal(t, ProtocolH2, r.Protocol)
	assert.Empty(t, r.Fallback)
	checkEcho(t, r, 8, c.laneCount(8))

	// The limit is per connection: 16 streams fit over two lanes' two
	// connections of 8, not over one lane's one.
	two := &Client{Protocol: ProtocolH2, Lanes: 2}
	if two.laneCount(16) == 2 {
		r = two.SendBurst(context.Background(), addr, burstOf(16, "POST", orderBody))
		assert.Equal(t, ProtocolH2, r.Protocol, r.Fallback)
		checkEcho(t, r, 16, 2)
	}
	r = (&Client{Protocol: ProtocolH2, Lanes: 1}).SendBurst(context.Background(), addr, burstOf(16, "POST", orderBody))
	assert.Equal(t, ProtocolHTTP1, r.Protocol)
	assert.Contains(t, r.Fallback, "allows 8 concurrent HTTP/2 streams and the burst has 16 (16 on each of 1 connections)")
}

func TestProbe(t *testing.T) {
	var target echoTarget
	h1 := httptest.NewServer(&target)
	defer h1.Close()
	h2cAddr := h2cServer(t, &target, 0)
	tlsH2, cfgH2 := tlsServer(t, &target, true)
	tlsH1, cfgH1 := tlsServer(t, &target, false)

	cases := []struct {
		name string
		c    *Client
		addr string
		want Protocol
	}{
		{"http/1.1 in the clear", &Client{}, addrOf(t, h1), ProtocolHTTP1},
		{"h2c", &Client{}, h2cAddr, ProtocolH2},
		{"h2 by ALPN", &Client{TLS: cfgH2}, tlsH2, ProtocolH2},
		{"http/1.1 by ALPN", &Client{TLS: cfgH1}, tlsH1, ProtocolHTTP1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.c.Probe(context.Background(), tc.addr)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p)
		})
	}

	_, err := (&Client{}).Probe(context.Background(), refusedAddr)
	assert.Equal(t, KindRefused, classify(err), "%v", err)
}

// In auto mode an HTTP/1.1 target gets HTTP/1.1 bursts. Finding out costs
// one connection whose h2c preface net/http hands to the handler as a
// request "PRI *"; none of the burst's requests is lost to it.
func TestBurstAutoOnHTTP1Server(t *testing.T) {
	var pri atomic.Int32
	var target echoTarget
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PRI" {
			pri.Add(1)
			return
		}
		target.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := &Client{Protocol: ProtocolAuto}
	for range 3 {
		r := c.SendBurst(context.Background(), addrOf(t, srv), burstOf(8, "POST", orderBody))
		assert.Equal(t, ProtocolHTTP1, r.Protocol)
		assert.Empty(t, r.Fallback)
		require.Len(t, r.Results, 8)
		for i, res := range r.Results {
			require.NoError(t, res.Err)
			assert.Equal(t, strconv.Itoa(i), string(res.Body))
		}
		assert.Len(t, target.take(), 8)
	}
	assert.LessOrEqual(t, pri.Load(), int32(3), "at most one preface per burst")
}

// Forcing HTTP/2 on a target that does not speak it fails the burst rather
// than sending it another way.
func TestBurstH2ForcedOnHTTP1Server(t *testing.T) {
	var target echoTarget
	srv := httptest.NewServer(&target)
	defer srv.Close()
	r := (&Client{Protocol: ProtocolH2}).SendBurst(context.Background(), addrOf(t, srv), burstOf(4, "POST", orderBody))
	assert.Equal(t, ProtocolH2, r.Protocol)
	require.Len(t, r.Results, 4)
	for _, res := range r.Results {
		assert.ErrorIs(t, res.Err, errNotH2)
		assert.Equal(t, KindOther, res.ErrKind)
		assert.False(t, res.Written)
	}
	// The h2c preface reaches a Go HTTP/1.1 server's handler as "PRI *",
	// but no request of the burst does.
	for _, s := range target.take() {
		assert.Empty(t, s.key)
	}

	addr, cfg := tlsServer(t, &target, false)
	r = (&Client{Protocol: ProtocolH2, TLS: cfg}).SendBurst(context.Background(), addr, burstOf(2, "POST", orderBody))
	for _, res := range r.Results {
		assert.ErrorIs(t, res.Err, errNotH2)
		assert.False(t, res.Written)
	}
}

// Bodies larger than the server's windows go out as the server grants
// credit, and arrive whole.
func TestBurstH2FlowControl(t *testing.T) {
	const n, size = 4, 700 << 10
	var target echoTarget
	addr := h2cServer(t, &target, 0)
	body := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, size) }
	c := &Client{Protocol: ProtocolH2}
	r := c.SendBurst(context.Background(), addr, burstOf(n, "PUT", body))
	assert.Equal(t, ProtocolH2, r.Protocol)
	checkEcho(t, r, n, c.laneCount(n))
	seen := target.take()
	require.Len(t, seen, n)
	for _, s := range seen {
		assert.Equal(t, size, s.bodyLen)
	}
}

func TestBurstH2BodyLimit(t *testing.T) {
	big := strings.Repeat("x", 5000)
	addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.Header.Get("X-Seq") == "0" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "small")
	}), 0)
	r := (&Client{Protocol: ProtocolH2, MaxBody: 1000}).SendBurst(context.Background(), addr, burstOf(3, "POST", orderBody))
	require.Len(t, r.Results, 3)
	for i, res := range r.Results {
		require.NoError(t, res.Err)
		assert.Equal(t, 200, res.Status)
		if i == 0 {
			assert.True(t, res.Truncated)
			assert.Equal(t, big[:1000], string(res.Body))
		} else {
			assert.False(t, res.Truncated)
			assert.Equal(t, "small", string(res.Body))
		}
	}
}

// An invalid request in an HTTP/2 burst fails alone.
func TestBurstH2InvalidMember(t *testing.T) {
	var target echoTarget
	addr := h2cServer(t, &target, 0)
	reqs := []Request{{}, {Method: "BAD METHOD"}, {Header: http.Header{"X-Seq": {"2"}}}}
	r := (&Client{Protocol: ProtocolH2}).SendBurst(context.Background(), addr, reqs)
	assert.Equal(t, ProtocolH2, r.Protocol)
	assert.NoError(t, r.Results[0].Err)
	assert.Equal(t, KindOther, r.Results[1].ErrKind)
	assert.False(t, r.Results[1].Written)
	assert.False(t, r.Results[1].End.IsZero())
	assert.NoError(t, r.Results[2].Err)
	assert.Equal(t, "2", string(r.Results[2].Body))
	assert.Len(t, target.take(), 2)
}

func TestBurstH2Timeout(t *testing.T) {
	release := make(chan struct{})
	read := make(chan string, 8) // the X-Seq of each request whose body the server read whole
	addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err == nil {
			read <- r.Header.Get("X-Seq")
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), 0)
	defer close(release)

	// The server never answers, so every attempt times out. Whether an
	// attempt was written before its timeout depends on the machine's load;
	// what is certain is that a request the server read whole was written.
	r := (&Client{Protocol: ProtocolH2, Timeout: time.Second}).SendBurst(context.Background(), addr, burstOf(4, "POST", orderBody))
	for _, res := range r.Results {
		assert.Equal(t, KindTimeout, res.ErrKind, "%v", res.Err)
	}
	for len(read) > 0 {
		seq, _ := strconv.Atoi(<-read)
		assert.True(t, r.Results[seq].Written, "the server read request %d whole, yet it is not marked written", seq)
	}

	// Cancelled once the server has read all four requests: each was
	// written, and each ends as cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 4 {
			<-read
		}
		cancel()
	}()
	r = (&Client{Protocol: ProtocolH2}).SendBurst(ctx, addr, burstOf(4, "POST", orderBody))
	for _, res := range r.Results {
		assert.Equal(t, KindOther, res.ErrKind, "%v", res.Err)
		assert.ErrorIs(t, res.Err, context.Canceled)
		assert.True(t, res.Written)
	}
}

// rawH2Server speaks just enough HTTP/2 to take one burst of n streams and
// then answers with reply, which writes frames as a misbehaving server
// would; block encodes a reply header block with the given :status.
func rawH2Server(t *testing.T, n int, reply func(fr *http2.Framer, block func(status string) []byte)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(conn, br)
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
		ended := map[uint32]bool{}
		for len(ended) < n {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					fr.WritePing(true, f.Data)
				}
			case *http2.DataFrame:
				if f.StreamEnded() {
					ended[f.StreamID] = true
				}
			}
		}
		var hbuf bytes.Buffer
		enc := hpack.NewEncoder(&hbuf)
		reply(fr, func(status string) []byte {
			hbuf.Reset()
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: status})
			enc.WriteField(hpack.HeaderField{Name: "x-from", Value: "raw"})
			return bytes.Clone(hbuf.Bytes())
		})
		// End the connection with a FIN, after what the client still sends.
		conn.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, br)
	})
	return ln.Addr().String()
}

// Replies are told apart by stream, in whatever order they come, and each
// stream's fate is its own.
func TestBurstH2StreamOutcomes(t *testing.T) {
	addr := rawH2Server(t, 6, func(fr *http2.Framer, block func(string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 9, BlockFragment: block("201"), EndHeaders: true})
		fr.WriteData(9, true, []byte("nine"))
		fr.WriteRSTStream(3, http2.ErrCodeRefusedStream)
		fr.WriteRSTStream(5, http2.ErrCodeInternal)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: block("200"), EndHeaders: true})
		fr.WriteData(7, false, []byte("par"))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("103"), EndHeaders: true})
		b := block("202")
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:2], EndHeaders: false})
		fr.WriteContinuation(1, true, b[2:])
		fr.WriteData(1, true, nil)
		// Stream 11 gets nothing before the connection ends.
	})
	r := (&Client{Protocol: ProtocolH2}).SendBurst(context.Background(), addr, burstOf(6, "POST", orderBody))
	require.Len(t, r.Results, 6)
	res := r.Results

	assert.NoError(t, res[0].Err)
	assert.Equal(t, 202, res[0].Status, "the 103 was skipped, the block reassembled")
	assert.Equal(t, "raw", res[0].Header.Get("X-From"))

	assert.Equal(t, KindRefused, res[1].ErrKind, "%v", res[1].Err)
	assert.Equal(t, KindReset, res[2].ErrKind, "%v", res[2].Err)

	assert.Equal(t, KindMalformed, res[3].ErrKind, "%v", res[3].Err)
	assert.Equal(t, 200, res[3].Status)
	assert.Equal(t, "par", string(res[3].Body))

	assert.NoError(t, res[4].Err)
	assert.Equal(t, 201, res[4].Status)
	assert.Equal(t, "nine", string(res[4].Body))

	assert.Equal(t, KindEOF, res[5].ErrKind, "%v", res[5].Err)
	assert.Zero(t, res[5].Status)
	assert.Zero(t, res[5].Received)
	assert.True(t, res[5].FirstByte.IsZero())

	for i, x := range res {
		assert.True(t, x.Written, "request %d", i)
		assert.False(t, x.End.IsZero())
	}
}

// Streams above a GOAWAY's last stream id were not processed.
func TestBurstH2GoAway(t *testing.T) {
	addr := rawH2Server(t, 3, func(fr *http2.Framer, block func(string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("201"), EndHeaders: true, EndStream: true})
		fr.WriteGoAway(1, http2.ErrCodeNo, nil)
	})
	r := (&Client{Protocol: ProtocolH2}).SendBurst(context.Background(), addr, burstOf(3, "POST", orderBody))
	res := r.Results
	assert.NoError(t, res[0].Err)
	assert.Equal(t, 201, res[0].Status)
	for _, x := range res[1:] {
		assert.Equal(t, KindRefused, x.ErrKind, "%v", x.Err)
	}
}

// A protocol violation ends the open streams as malformed replies.
func TestBurstH2ProtocolError(t *testing.T) {
	addr := rawH2Server(t, 2, func(fr *http2.Framer, block func(string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("201"), EndHeaders: true, EndStream: true})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte{0xff, 0xff, 0xff}, EndHeaders: true})
	})
	r := (&Client{Protocol: ProtocolH2}).SendBurst(context.Background(), addr, burstOf(2, "POST", orderBody))
	assert.NoError(t, r.Results[0].Err)
	assert.Equal(t, KindMalformed, r.Results[1].ErrKind, "%v", r.Results[1].Err)
	assert.True(t, errors.Is(r.Results[1].Err, errH2Protocol))
}

func TestParseProtocol(t *testing.T) {
	for _, p := range Protocols {
		got, err := ParseProtocol(string(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := ParseProtocol("h3")
	assert.Error(t, err)
}
