package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The receive windows a burst connection advertises. Replies of every
// stream arrive at once, and a reply held back by flow control would make
// its attempt look slow, so the windows are large enough that the harness
// never has to return credit while the replies of a burst come in.
const (
	h2StreamWindow = 4 << 20
	h2ConnWindow   = 1 << 30
	// h2DefaultWindow is the window every HTTP/2 stream and connection
	// starts with (RFC 9113, section 6.9.2).
	h2DefaultWindow = 65535
	// h2MaxFrame is the largest frame the harness reads: the size every
	// peer must respect while the harness advertises no larger
	// SETTINGS_MAX_FRAME_SIZE (RFC 9113, section 4.2).
	h2MaxFrame = 16384
)

// h2Ping is the payload of the ping that closes the prefix of a burst.
var h2Ping = [8]byte{'i', 'd', 'e', 'm', 'c', 'h', 'c', 'k'}

// errH2Protocol marks a reply the harness could not accept as HTTP/2: a
// bad frame, an undecodable header block, a frame the settings forbid. Its
// attempts end "malformed", as a garbled HTTP/1.1 reply would.
var errH2Protocol = errors.New("http2 protocol error")

// burstH2 sends reqs as the streams of HTTP/2 connections, one per release
// lane (single-packet release on each):
//
//  1. one connection is opened (h2c prior knowledge in the clear, ALPN "h2"
//     over TLS) and the settings are exchanged; it tells whether the target
//     speaks HTTP/2. Then one more connection for every further lane
//     (Client.Lanes); request i goes on connection i mod lanes, and a
//     connection that cannot be opened leaves its share to the others;
//  2. on every connection, every stream is opened: its HEADERS and all of
//     its body but the last byte, so the server holds each request
//     incomplete;
//  3. a PING is sent and its answer awaited: a server handles a
//     connection's frames in order, so by then it has read every prefix
//     (Go's starts every request's handler), and the release does not
//     queue behind prefixes still being parsed; measured, the first two
//     arrivals are closer with the PING than without;
//  4. the final DATA frame of every stream of a connection (the last body
//     byte, or an empty frame for a request without a body, with
//     END_STREAM) is written in one write call, so they leave in one TCP
//     packet; with more than one lane, each lane makes its connection's
//     write (releaseLanes);
//  5. the replies are read and told apart by stream id.
//
// A server reads one connection's frames one after the other (Go's takes
// about 7.5 us per final frame on the machine the benchmarks ran on), so two
// streams of one packet reach their handlers at least a frame apart; two
// connections released at once can be read side by side, which on a quiet
// machine brought the median first-two gap from 7.8-9.9 us to 6.5 us. With
// the target sharing a busy machine, the second lane's writer cost more
// than it gave (see DefaultLanes), so by default there is one connection.
//
// Holding the last body byte, not only END_STREAM, keeps a server from
// acting on a body it can parse before the stream ends (a JSON decoder
// stops at the closing brace). Unlike HTTP/1.1 it cannot hold the request
// headers: a header block must be sent whole before any other frame, so a
// server that acts on headers alone acts before the release.
//
// When the server allows fewer concurrent streams than the burst has, or
// (in auto mode) does not speak HTTP/2, the burst goes out over HTTP/1.1
// instead, and the result says so.
func (c *Client) burstH2(ctx context.Context, addr string, reqs []Request, auto bool) BurstResult {
	as := make([]*attempt, len(reqs))
	var live []*h2stream
	var deadline time.Time
	for i, req := range reqs {
		a := c.newAttempt(ctx, addr, req, false)
		as[i] = a
		if a.done() {
			continue
		}
		live = append(live, &h2stream{a: a, req: req})
		if deadline.IsZero() || a.deadline.Before(deadline) {
			deadline = a.deadline
		}
	}
	results := func() []Result {
		out := make([]Result, len(as))
		for i, a := range as {
			if a.res.End.IsZero() {
				a.finish()
			}
			out[i] = a.res
		}
		return out
	}
	if len(live) == 0 {
		return BurstResult{Results: results(), Protocol: ProtocolH2}
	}

	hc, err := c.dialH2(ctx, addr, deadline)
	switch {
	case errors.Is(err, errNotH2) && auto:
		res, spread, link := c.burstHTTP1(ctx, addr, reqs)
		return BurstResult{Results: res, Spread: spread, Protocol: ProtocolHTTP1, Link: link}
	case err != nil:
		kind := h2Kind(err)
		if errors.Is(err, errNotH2) {
			kind = KindOther
		}
		for _, s := range live {
			s.a.fail(err, kind)
		}
		return BurstResult{Results: results(), Protocol: ProtocolH2}
	}
	// The streams are shared over one connection per lane, so the server's
	// limit on concurrent streams applies to each connection's share.
	n := len(live)
	perConn := func(conns int) uint64 { return uint64((n + conns - 1) / conns) }
	conns := []*h2conn{hc}
	if lanes := c.laneCount(n); lanes > 1 && perConn(lanes) <= uint64(hc.maxStreams) {
		conns = append(conns, c.dialMoreH2(ctx, addr, deadline, lanes-1)...)
	}
	if share := perConn(len(conns)); share > uint64(hc.maxStreams) {
		for _, hc := range conns {
			hc.close()
		}
		res, spread, link := c.burstHTTP1(ctx, addr, reqs)
		return BurstResult{
			Results: res, Spread: spread, Protocol: ProtocolHTTP1, MaxStreams: hc.maxStreams, Link: link,
			Fallback: fmt.Sprintf("the server allows %d concurrent HTTP/2 streams and the burst has %d (%d on each of %d connections), so it went out over HTTP/1.1",
				hc.maxStreams, n, share, len(conns)),
		}
	}
	shares := make([][]*h2stream, len(conns))
	for i, s := range live {
		shares[i%len(conns)] = append(shares[i%len(conns)], s)
	}
	prepared := make([]bool, len(conns))
	eachConn(conns, func(k int) { prepared[k] = conns[k].prepare(shares[k]) })
	starts := make([]time.Time, len(conns))
	sents := make([]time.Time, len(conns))
	releaseLanes(len(conns), len(conns), func(k int) {
		if prepared[k] {
			starts[k], sents[k] = conns[k].release()
		}
	})
	eachConn(conns, func(k int) {
		if prepared[k] {
			conns[k].collect()
		}
		conns[k].close()
	})
	return BurstResult{Results: results(), Spread: span(append(starts, sents...)), Protocol: ProtocolH2, MaxStreams: hc.maxStreams,
		Link: c.roundTripLink()}
}

// dialMoreH2 opens up to n more HTTP/2 connections for one burst's release
// lanes, concurrently; a connection that fails is left out, and its share
// of the streams goes to the others.
func (c *Client) dialMoreH2(ctx context.Context, addr string, deadline time.Time, n int) []*h2conn {
	more := make([]*h2conn, n)
	var wg sync.WaitGroup
	for k := range more {
		wg.Go(func() {
			if hc, err := c.dialH2(ctx, addr, deadline); err == nil {
				more[k] = hc
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(more, func(hc *h2conn) bool { return hc == nil })
}

// eachConn runs f for every connection, each on its own goroutine, and
// waits for all of them.
func eachConn(conns []*h2conn, f func(k int)) {
	if len(conns) == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for k := range conns {
		wg.Go(func() { f(k) })
	}
	wg.Wait()
}

// h2conn is the client side of one HTTP/2 connection carrying one burst.
// One goroutine drives it: frames are written into wbuf and flushed at
// chosen points, and read only when the burst needs what they say.
type h2conn struct {
	c    *Client
	ctx  context.Context
	addr string
	conn net.Conn
	stop func() bool
	br   *bufio.Reader
	rfr  *http2.Framer // reads frames from br
	wbuf bytes.Buffer
	wfr  *http2.Framer // writes frames into wbuf
	henc *hpack.Encoder
	hbuf bytes.Buffer
	hdec *hpack.Decoder

	// The server's settings, and what is left of its connection window.
	maxStreams    uint32
	initialWindow int64
	maxFrame      uint32
	connWindow    int64
	settingsSeen  bool
	ackSeen       bool
	pingSeen      bool

	streams map[uint32]*h2stream
	order   []*h2stream // the burst's streams, in the order they were opened
	// released are the streams whose final frames prepare framed into wbuf
	// for the release to write.
	released []*h2stream
	open     int // streams still waiting for the end of their reply
	// A header block being reassembled from HEADERS and CONTINUATION.
	block       []byte
	blockStream uint32
	blockEnd    bool
	unacked     int64 // reply bytes not yet returned as connection credit
}

// h2stream is one attempt of an HTTP/2 burst.
type h2stream struct {
	a       *attempt
	req     Request
	id      uint32
	final   []byte // the held-back last body byte; nil without a body
	window  int64  // what the server lets this stream send
	unacked int64
	done    bool
}

// dialH2 opens an HTTP/2 connection and exchanges settings. In the clear,
// an answer other than a SETTINGS frame (or none within probeTimeout) is
// errNotH2, as is an ALPN choice other than "h2" over TLS.
func (c *Client) dialH2(ctx context.Context, addr string, deadline time.Time) (*h2conn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := c.dial(dctx, addr)
	if err != nil {
		return nil, err
	}
	hc := &h2conn{
		c: c, ctx: ctx, addr: addr, conn: conn,
		maxStreams: math.MaxUint32, initialWindow: h2DefaultWindow, maxFrame: 16384, connWindow: h2DefaultWindow,
		streams: map[uint32]*h2stream{},
	}
	// The deadline is set before the cancellation hook, which would
	// otherwise be undone by it.
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	hc.stop = context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	if c.TLS != nil {
		cfg := c.TLS.Clone()
		// http/1.1 is offered even when HTTP/2 is forced: a server that
		// speaks only HTTP/1.1 may refuse a handshake that offers nothing
		// else, and choosing http/1.1 says more than a failed handshake.
		cfg.NextProtos = []string{http2.NextProtoTLS, "http/1.1"}
		// One write goes out as one TLS record up to 16 KiB: the
		// release's final frames of every stream then reach the server
		// in one record, where Go's dynamic record sizing would cut a
		// young connection's writes at about 1.2 KiB (some 120 streams).
		cfg.DynamicRecordSizingDisabled = true
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			hc.closeConn()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		if np := tc.ConnectionState().NegotiatedProtocol; np != http2.NextProtoTLS {
			hc.closeConn()
			if np == "" {
				np = "none"
			}
			return nil, fmt.Errorf("%w: ALPN offered h2 and http/1.1, the server chose %s", errNotH2, np)
		}
		hc.conn = tc
	}
	hc.br = bufio.NewReaderSize(hc.conn, 32<<10)
	hc.rfr = http2.NewFramer(nil, hc.br)
	// The Framer would otherwise accept frames of up to 16 MiB, each read
	// into memory whole.
	hc.rfr.SetMaxReadFrameSize(h2MaxFrame)
	hc.wfr = http2.NewFramer(&hc.wbuf, nil)
	hc.henc = hpack.NewEncoder(&hc.hbuf)
	hc.hdec = hpack.NewDecoder(4096, nil)
	hc.hdec.SetMaxStringLength(c.maxHeaderBytes())

	hc.wbuf.WriteString(http2.ClientPreface)
	hc.wfr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.maxHeaderBytes())},
	)
	hc.wfr.WriteWindowUpdate(0, h2ConnWindow-h2DefaultWindow)
	if err := hc.flush(); err != nil {
		hc.closeConn()
		return nil, err
	}
	if c.TLS == nil {
		if err := hc.expectSettings(deadline); err != nil {
			hc.closeConn()
			return nil, err
		}
	}
	for !hc.settingsSeen || !hc.ackSeen {
		if err := hc.next(); err != nil {
			hc.closeConn()
			return nil, err
		}
	}
	if err := hc.flush(); err != nil {
		hc.closeConn()
		return nil, err
	}
	return hc, nil
}

// expectSettings reads the first bytes of the server's answer to the h2c
// preface: an HTTP/2 server's first frame is SETTINGS on stream 0, while an
// HTTP/1.1 server answers with a status line (or says nothing).
func (hc *h2conn) expectSettings(deadline time.Time) error {
	probeBy := time.Now().Add(probeTimeout)
	if probeBy.After(deadline) {
		probeBy = deadline
	}
	hc.conn.SetReadDeadline(probeBy)
	head, err := hc.br.Peek(9)
	if err != nil {
		if hc.ctx.Err() != nil || !time.Now().Before(deadline) {
			// The attempts' own time ran out: that is their outcome.
			return err
		}
		return fmt.Errorf("%w: no HTTP/2 SETTINGS frame answered the h2c preface (%v)", errNotH2, err)
	}
	if http2.FrameType(head[3]) != http2.FrameSettings || head[4]&byte(http2.FlagSettingsAck) != 0 ||
		head[5]|head[6]|head[7]|head[8] != 0 {
		return fmt.Errorf("%w: the h2c preface was answered with %q", errNotH2, printable(head))
	}
	if err := hc.conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	// A cancellation that came while the probe's deadline was set has been
	// undone by the line above.
	return hc.ctx.Err()
}

// prepare opens the streams, writes every prefix, and waits for the answer
// to a PING sent after them and for window enough for every final frame.
// It reports false when the connection failed; every stream has then ended.
func (hc *h2conn) prepare(streams []*h2stream) bool {
	hc.open = len(streams)
	for i, s := range streams {
		s.id = uint32(2*i + 1)
		s.window = hc.initialWindow
		hc.streams[s.id] = s
		if n := len(s.req.Body); n > 0 {
			s.final = s.req.Body[n-1:]
		}
	}
	hc.order = streams
	for _, s := range streams {
		if err := hc.writePrefix(s); err != nil {
			hc.endAll(err)
			return false
		}
	}
	hc.wfr.WritePing(false, h2Ping)
	if err := hc.flush(); err != nil {
		hc.endAll(err)
		return false
	}
	for !hc.pingSeen || !hc.finalsFit(streams) {
		if err := hc.next(); err != nil {
			hc.endAll(err)
			return false
		}
	}
	if err := hc.flush(); err != nil {
		hc.endAll(err)
		return false
	}
	// The final frames are framed now, so that the release does nothing
	// but write them: no frame is read before it, so the streams still
	// open now are the ones released.
	for _, s := range hc.order {
		if !s.done {
			hc.wfr.WriteData(s.id, true, s.final)
			s.window -= int64(len(s.final))
			hc.connWindow -= int64(len(s.final))
			hc.released = append(hc.released, s)
		}
	}
	return true
}

// release writes the final DATA frames that prepare framed in one write
// call and returns when that call started and ended (zero times when
// nothing was released). It does nothing but write, so that it can run on
// a release lane.
func (hc *h2conn) release() (start, sent time.Time) {
	if len(hc.released) == 0 {
		return time.Time{}, time.Time{}
	}
	start = time.Now()
	_, err := hc.conn.Write(hc.wbuf.Bytes())
	sent = time.Now()
	hc.wbuf.Reset()
	if err != nil {
		hc.endAll(err)
		return time.Time{}, time.Time{}
	}
	for _, s := range hc.released {
		s.a.sent(sent)
	}
	return start, sent
}

// collect reads replies until every stream has ended.
func (hc *h2conn) collect() {
	for hc.open > 0 {
		err := hc.next()
		if err == nil {
			err = hc.flush()
		}
		if err != nil {
			hc.endAll(err)
			return
		}
	}
}

// writePrefix writes a stream's HEADERS and its body but the last byte,
// within the flow-control windows the server grants.
func (hc *h2conn) writePrefix(s *h2stream) error {
	block := hc.headerBlock(s.req)
	first := true
	for first || len(block) > 0 {
		n := min(len(block), int(hc.maxFrame))
		frag, end := block[:n], n == len(block)
		if first {
			hc.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: frag, EndHeaders: end})
			first = false
		} else {
			hc.wfr.WriteContinuation(s.id, end, frag)
		}
		block = block[n:]
	}
	rest := s.req.Body[:len(s.req.Body)-len(s.final)]
	for len(rest) > 0 && !s.done {
		n := min(int64(len(rest)), int64(hc.maxFrame), s.window, hc.connWindow)
		if n <= 0 {
			// Out of credit: what is written so far must reach the server
			// before it can grant more.
			if err := hc.flush(); err != nil {
				return err
			}
			if err := hc.next(); err != nil {
				return err
			}
			continue
		}
		hc.wfr.WriteData(s.id, false, rest[:n])
		s.window -= n
		hc.connWindow -= n
		rest = rest[n:]
	}
	return nil
}

// finalsFit reports whether the server's windows admit every final frame.
func (hc *h2conn) finalsFit(streams []*h2stream) bool {
	var total int64
	for _, s := range streams {
		if !s.done {
			if s.window < int64(len(s.final)) {
				return false
			}
			total += int64(len(s.final))
		}
	}
	return hc.connWindow >= total
}

// headerBlock encodes a request's header block, with the same headers the
// HTTP/1.1 encoding writes (framing headers left out, a default User-Agent,
// Content-Length), lower-cased as HTTP/2 requires.
func (hc *h2conn) headerBlock(req Request) []byte {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	path := req.Path
	if path == "" {
		path = "/"
	}
	scheme := "http"
	if hc.c.TLS != nil {
		scheme = "https"
	}
	host := hc.c.Host
	if host == "" {
		host = hc.addr
	}
	hc.hbuf.Reset()
	field := func(name, value string, sensitive bool) {
		hc.henc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: sensitive})
	}
	field(":method", method, false)
	field(":scheme", scheme, false)
	field(":authority", host, false)
	field(":path", path, false)
	keys, hasUA := sentHeaders(req.Header)
	for _, k := range keys {
		name := strings.ToLower(k)
		sensitive := name == "authorization" || name == "cookie" || name == "proxy-authorization"
		for _, v := range req.Header[k] {
			field(name, v, sensitive)
		}
	}
	if !hasUA {
		field("user-agent", DefaultUserAgent, false)
	}
	if len(req.Body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		field("content-length", strconv.Itoa(len(req.Body)), false)
	}
	return bytes.Clone(hc.hbuf.Bytes())
}

// flush writes the frames queued in wbuf.
func (hc *h2conn) flush() error {
	if hc.wbuf.Len() == 0 {
		return nil
	}
	_, err := hc.conn.Write(hc.wbuf.Bytes())
	hc.wbuf.Reset()
	return err
}

// close says goodbye and closes the connection. Nothing is waited for: the
// burst is over, or never started.
func (hc *h2conn) close() {
	if hc.ctx.Err() == nil {
		hc.wbuf.Reset()
		hc.wfr.WriteGoAway(0, http2.ErrCodeNo, nil)
		hc.flush()
	}
	hc.closeConn()
}

func (hc *h2conn) closeConn() {
	hc.stop()
	hc.conn.Close()
}

// printable shows bytes that were meant to be a frame header, for an error.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < ' ' || c > '~' {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}
