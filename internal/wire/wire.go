// Package wire is the harness's own HTTP client: HTTP/1.1 for single
// attempts and bursts, and HTTP/2 for bursts to targets that speak it.
//
// The harness must own every send: one call is one attempt, and nothing is
// ever sent twice behind its back. net/http's Transport does not give that
// guarantee: on a kept-alive connection that dies before the first reply
// byte it silently resends requests whose headers carry Idempotency-Key or
// X-Idempotency-Key, so the target would see two requests where the history
// records one. This package therefore writes every request by hand on its
// own fresh TCP (or TLS) connection, reads the reply with
// http.ReadResponse, closes the connection, and never retries. A single
// attempt is marked "Connection: close"; an HTTP/1.1 burst's requests are
// not, so that the server does not close each connection before it takes
// in the next request (see burstHTTP1).
// An HTTP/2 burst (h2.go) is the one exception to "one connection per
// attempt": its attempts are the streams of a few fresh connections (one
// per release lane, lanes.go), each opened once and never resent.
//
// It imports nothing of idemcheck but the root package (for the Protocol
// its bursts go out with), so any layer may use it.
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
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults applied when the corresponding Client field is zero.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultMaxBody   int64 = 1 << 20
	DefaultUserAgent       = "idemcheck"
	// DefaultMaxHeaderBytes bounds a reply's status line and headers
	// (HTTP/1.1), or its header block (HTTP/2): a hostile target's endless
	// header line ends the attempt instead of growing memory without end.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxHeaders bounds the number of header fields of a reply.
	DefaultMaxHeaders = 1000
)

// ErrReplyTooLarge is wrapped by the transport error of an attempt whose
// reply headers went over Client.MaxHeaderBytes or Client.MaxHeaders
// (ErrKind "malformed"). A long body is not an error: it is cut to
// MaxBody and marked Truncated.
var ErrReplyTooLarge = errors.New("reply too large")

// Error kinds stored in Result.ErrKind. They are stable names: histories and
// reports use them.
const (
	// KindRefused means the connection was refused: the request never reached
	// the server, so it cannot have had an effect.
	KindRefused = "refused"
	// KindTimeout means the attempt ran out of time (Client.Timeout or the
	// context's deadline) after or before the request was written.
	KindTimeout = "timeout"
	// KindReset means the peer reset the connection (ECONNRESET, EPIPE,
	// ECONNABORTED).
	KindReset = "reset"
	// KindEOF means the connection ended before a full status line arrived.
	KindEOF = "eof"
	// KindMalformed means a status line arrived but the reply was cut short
	// (headers or body) or could not be parsed.
	KindMalformed = "malformed"
	// KindOther is every other failure, including an invalid Request, a TLS
	// failure, and a cancelled context.
	KindOther = "other"
)

// Request is what one attempt sends. Path is the request target as written
// on the request line ("/orders?x=1"); an empty Path means "/".
//
// Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive,
// Proxy-Connection, TE and Upgrade are framing headers that the Client
// writes itself; values for them in Header are ignored, so that a request
// can never ask for a kept-alive or resendable connection.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Finish, when set, is called once for each attempt that sends the
	// request, just before its bytes are built (for a burst, before its
	// release), and what it returns is sent: the caller's parts computed
	// at send time, such as a signature with a fresh timestamp over the
	// body. It must not change the Header it is given, which other
	// attempts share.
	Finish func(Request) Request
}

// Finished returns the request as an attempt sends it: Finish applied,
// once.
func (r Request) Finished() Request {
	if r.Finish == nil {
		return r
	}
	f := r.Finish
	r.Finish = nil
	r = f(r)
	r.Finish = nil
	return r
}

// Result records one attempt: when each phase happened, the reply, or the
// transport error that ended it.
type Result struct {
	// Start is when the attempt began (before dialing). Sent is when the last
	// request byte was handed to the kernel. FirstByte is when the harness
	// read the first reply byte (zero if none arrived). End is when the
	// attempt finished and its connection was closed.
	Start, Sent, FirstByte, End time.Time

	// Status, Header and Body hold the reply. Status and Header are also set
	// when the headers parsed but the body was then cut (ErrKind
	// "malformed"), and Body then holds what arrived.
	Status int
	Header http.Header
	Body   []byte

	// Truncated reports that the reply body was longer than Client.MaxBody
	// and Body holds only its first MaxBody bytes. The reply still counts as
	// complete (Err is nil).
	Truncated bool

	// Received counts the reply bytes read off the connection (status line,
	// headers and body as they arrived, after TLS decryption). It is the
	// evidence of where a cut happened: a reply cut after its first byte has
	// Received 1.
	Received int64

	// Err is the transport error, nil when a complete reply was read.
	Err error
	// ErrKind classifies Err: "", or one of the Kind constants.
	ErrKind string

	// Written reports that the whole request was written to the connection,
	// so the server may have acted on it. When false the server cannot have
	// received the complete request (it may still have replied early, a 413
	// say, and that reply is then kept with Err nil). Through a proxy, true
	// only means the bytes reached the proxy.
	Written bool

	// SentHeader is the request header as this attempt sent it, when the
	// request's Finish computed it (nil otherwise): each attempt's own
	// signature and timestamp, for the record.
	SentHeader http.Header
}

// Client sends attempts. The zero value is ready to use. A Client is safe for
// concurrent use: it holds no connections between calls.
type Client struct {
	// Host is the Host header (the target's host:port as the user wrote it).
	// Empty means the address dialed.
	Host string
	// TLS, when not nil, makes every connection a TLS client connection with
	// this configuration (the caller sets ServerName).
	TLS *tls.Config
	// Timeout bounds each attempt's whole exchange: dial, TLS handshake,
	// write and read. Zero or less means DefaultTimeout.
	Timeout time.Duration
	// MaxBody cuts reply bodies to this many bytes; Result.Truncated says
	// so. Zero or less means DefaultMaxBody.
	MaxBody int64
	// MaxHeaderBytes bounds each reply's status line and headers (HTTP/1.1,
	// 1xx replies included) or header block (HTTP/2); MaxHeaders the
	// number of its header fields. Over either the attempt ends with an
	// error wrapping ErrReplyTooLarge. Zero or less means
	// DefaultMaxHeaderBytes and DefaultMaxHeaders.
	MaxHeaderBytes int
	MaxHeaders     int
	// Control, when set, is the Control function of every dialer the
	// Client uses: netguard.Control refuses addresses off loopback at
	// connect time.
	Control func(network, address string, c syscall.RawConn) error
	// Protocol chooses how bursts are sent (see SendBurst). Empty means
	// ProtocolHTTP1, so a caller that does not choose keeps HTTP/1.1.
	Protocol Protocol
	// Lanes is how many release lanes a burst uses: writers on goroutines
	// of their own, released together through a channel (see
	// releaseLanes). Over HTTP/2 each lane is a connection of its own
	// carrying its share of the streams. Zero or less means DefaultLanes
	// (one, a single writer: measured best with the target on the same
	// machine). Never more lanes than requests, nor than the process runs
	// at once (GOMAXPROCS).
	Lanes int
	// Dial, when set, opens every TCP connection the Client makes (single
	// attempts, bursts and probes alike) instead of a net.Dialer; tests use
	// it to know which sockets the Client's connections come from.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RoundTrips, when set, records the round trip of every complete
	// single attempt (Do), and HTTP/1.1 bursts wait about one of them
	// between their prefixes and their release (see awaitPrefixes). Copies
	// of the Client share it. Nil: bursts wait for the kernel's
	// acknowledgements only.
	RoundTrips *RoundTrips
}

// dial opens a TCP connection to addr with the Client's Dial, or a
// net.Dialer when it has none.
func (c *Client) dial(ctx context.Context, addr string) (net.Conn, error) {
	if c.Dial != nil {
		return c.Dial(ctx, "tcp", addr)
	}
	return c.dialer().DialContext(ctx, "tcp", addr)
}

// Do sends req once on a fresh connection to addr (host:port, typically a
// fault proxy) and reads the reply. It never retries: whatever happens is
// reported in the Result, and a failed attempt is the caller's to repeat as a
// new attempt.
func (c *Client) Do(ctx context.Context, addr string, req Request) Result {
	sent := req.Finished()
	a := c.newAttempt(ctx, addr, sent, true)
	if req.Finish != nil {
		a.res.SentHeader = sent.Header
	}
	if !a.done() && a.dial(addr) {
		if err := a.write(a.wire); err != nil {
			a.writeFailed(err)
		} else {
			a.sent(time.Now())
			a.read()
		}
	}
	a.finish()
	c.RoundTrips.record(a.res)
	return a.res
}

// Encode returns the exact bytes Do writes for req when dialing addr. Faults
// that cut a request at a byte offset need the wire length of its head.
func (c *Client) Encode(addr string, req Request) ([]byte, error) {
	host := c.Host
	if host == "" {
		host = addr
	}
	return encode(host, req.Finished(), true)
}

// http1TLS is the TLS configuration of an HTTP/1.1 connection: the caller's,
// without "h2" among the ALPN protocols, since the bytes written on it are
// HTTP/1.1 whatever the server would prefer.
func (c *Client) http1TLS() *tls.Config {
	if !slices.Contains(c.TLS.NextProtos, "h2") {
		return c.TLS
	}
	cfg := c.TLS.Clone()
	cfg.NextProtos = slices.DeleteFunc(slices.Clone(cfg.NextProtos), func(p string) bool { return p == "h2" })
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return cfg
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) maxHeaderBytes() int {
	if c.MaxHeaderBytes > 0 {
		return c.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func (c *Client) maxHeaders() int {
	if c.MaxHeaders > 0 {
		return c.MaxHeaders
	}
	return DefaultMaxHeaders
}

// dialer is the dialer of every connection the Client opens.
func (c *Client) dialer() *net.Dialer {
	return &net.Dialer{Control: c.Control}
}

// tooLarge is the error of a reply over one of the Client's limits.
func tooLarge(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrReplyTooLarge}, args...)...)
}

// sizeLabel writes n bytes the way the limits are usually given: 64 KiB.
func sizeLabel(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (c *Client) maxBody() int64 {
	if c.MaxBody > 0 {
		return c.MaxBody
	}
	return DefaultMaxBody
}

// attempt is the state of one send while it runs. Do runs its phases in
// sequence; Burst runs each phase for every attempt before the next phase.
type attempt struct {
	c        *Client
	ctx      context.Context
	method   string
	wire     []byte
	deadline time.Time
	// ctxDeadline: the context's deadline, not Client.Timeout, bounds the
	// attempt, so a timeout is the context's deadline passing even when the
	// connection's deadline fires before the context's timer does.
	ctxDeadline bool
	conn        net.Conn
	rd          *countingReader
	stop        func() bool
	res         Result
	// ended: the attempt has its outcome (an error, or a reply read early
	// after a failed write) and must not be written to or read again.
	ended bool
}

// newAttempt prepares the send of req to addr: its deadline and its bytes,
// marked "Connection: close" when closeConn is set (see encode).
func (c *Client) newAttempt(ctx context.Context, addr string, req Request, closeConn bool) *attempt {
	a := &attempt{c: c, ctx: ctx, method: req.Method}
	a.res.Start = time.Now()
	a.deadline = a.res.Start.Add(c.timeout())
	if d, ok := ctx.Deadline(); ok && !d.After(a.deadline) {
		a.deadline, a.ctxDeadline = d, true
	}
	host := c.Host
	if host == "" {
		host = addr
	}
	wire, err := encode(host, req, closeConn)
	if err != nil {
		a.fail(err, KindOther)
		return a
	}
	a.wire = wire
	return a
}

func (a *attempt) done() bool { return a.ended }

// dial opens the attempt's connection and, for TLS, completes the handshake.
// It reports whether the connection is ready for the request.
func (a *attempt) dial(addr string) bool {
	ctx, cancel := context.WithDeadline(a.ctx, a.deadline)
	defer cancel()
	conn, err := a.c.dial(ctx, addr)
	if err != nil {
		a.fail(err, classify(err))
		return false
	}
	if err := conn.SetDeadline(a.deadline); err != nil {
		conn.Close()
		a.fail(err, classify(err))
		return false
	}
	// A cancelled context must stop a blocked read or write too, not only
	// the dial: moving the deadline into the past wakes them. The hook is
	// set after the deadline, which would otherwise undo it.
	a.stop = context.AfterFunc(a.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	if a.c.TLS != nil {
		tc := tls.Client(conn, a.c.http1TLS())
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			a.fail(fmt.Errorf("tls handshake: %w", err), classify(err))
			return false
		}
		conn = tc
	}
	a.conn = conn
	a.rd = &countingReader{r: conn}
	return true
}

func (a *attempt) write(p []byte) error {
	_, err := a.conn.Write(p)
	return err
}

func (a *attempt) sent(t time.Time) {
	a.res.Written = true
	a.res.Sent = t
}

// writeFailed records a write error. A server may answer before it has read
// the whole request (a 413 or 400 sent early) and then close, which makes
// the write fail; if that reply can still be read it is the truth about the
// attempt, so it is kept, with Written false.
func (a *attempt) writeFailed(err error) {
	defer func() { a.ended = true }()
	kind := classify(err)
	if kind != KindTimeout && a.ctx.Err() == nil {
		a.read()
		if a.res.Err == nil {
			return
		}
		a.res = Result{Start: a.res.Start}
	}
	a.fail(err, kind)
}

// read reads one final reply (skipping 1xx informational replies) and fills
// in the Result. The status lines and headers of all of them together may
// take at most Client.MaxHeaderBytes, and the body keeps at most
// Client.MaxBody bytes: whatever the target sends, an attempt holds a
// bounded amount of memory.
func (a *attempt) read() {
	const bufSize = 4096
	maxHead := a.c.maxHeaderBytes()
	// The parser may read ahead up to one buffer past the end of the
	// headers: that much more is allowed before the cap is called a breach.
	a.rd.limit = int64(maxHead) + bufSize
	br := bufio.NewReaderSize(a.rd, bufSize)
	probe := &http.Request{Method: a.method}
	var resp *http.Response
	for range 10 {
		var err error
		resp, err = http.ReadResponse(br, probe)
		if err == nil && a.rd.n-int64(br.Buffered()) > int64(maxHead) {
			err = errHeadLimit
		}
		if err != nil {
			if a.rd.overLimit || errors.Is(err, errHeadLimit) {
				a.fail(tooLarge("reply headers over %s", sizeLabel(int64(maxHead))), KindMalformed)
				return
			}
			a.readFailed(err)
			return
		}
		if n := headerCount(resp.Header); n > a.c.maxHeaders() {
			a.fail(tooLarge("reply has %d header fields, over %d", n, a.c.maxHeaders()), KindMalformed)
			return
		}
		if resp.StatusCode < 100 || resp.StatusCode > 999 {
			// net/http parses "000" too: no HTTP status, so no reply.
			a.fail(fmt.Errorf("malformed HTTP status %d in the reply", resp.StatusCode), KindMalformed)
			return
		}
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	a.rd.limit = 0
	a.res.Status = resp.StatusCode
	a.res.Header = resp.Header
	limit := a.c.maxBody()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if int64(len(body)) > limit {
		body, err = body[:limit], nil
		a.res.Truncated = true
	}
	a.res.Body = body
	// resp.Body is deliberately not closed: Close drains the rest of an
	// oversized body, and closing the connection in finish discards it.
	if err != nil {
		a.readFailed(err)
	}
}

// errHeadLimit is countingReader's error once the head's budget is spent.
var errHeadLimit = errors.New("reply head over its limit")

func headerCount(h http.Header) int {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	return n
}

// readFailed classifies an error met while reading the reply. A transport
// error seen by the connection wins; otherwise the stream ended or could not
// be parsed, and what arrived decides: no complete status line is "eof",
// anything after one is "malformed".
func (a *attempt) readFailed(err error) {
	switch {
	case a.rd.err != nil:
		a.fail(err, classify(a.rd.err))
	case !a.rd.sawLF:
		a.fail(err, KindEOF)
	default:
		a.fail(err, KindMalformed)
	}
}

// fail records err and its kind. When the context ended the attempt, the
// context's error is what the caller needs to see (errors.Is works on it):
// a deadline is a timeout, a cancellation is "other".
func (a *attempt) fail(err error, kind string) {
	ctxErr := a.ctx.Err()
	if ctxErr == nil && kind == KindTimeout && a.ctxDeadline {
		// The connection's deadline is the context's and fired before the
		// context's own timer did.
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil && (kind == KindTimeout || errors.Is(err, ctxErr)) {
		kind = KindOther
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			kind = KindTimeout
		}
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
	}
	a.res.Err, a.res.ErrKind = err, kind
	a.ended = true
}

func (a *attempt) finish() {
	if a.stop != nil {
		a.stop()
	}
	if a.conn != nil {
		a.conn.Close()
	}
	if a.rd != nil {
		a.res.FirstByte = a.rd.first
		a.res.Received = a.rd.n
	}
	a.res.End = time.Now()
}

// countingReader sits under the bufio.Reader that parses the reply, so it
// sees the bytes as they come off the connection: when the first arrived, how
// many, whether a line end (and so a whole status line) arrived, and the
// connection's own read error, told apart from the parser's complaints.
type countingReader struct {
	r     io.Reader
	first time.Time
	n     int64
	sawLF bool
	err   error
	// limit, when positive, is how many bytes in all may be read: past it
	// Read fails with errHeadLimit and sets overLimit. It bounds the
	// reply's head while the parser, which has no limit of its own, reads
	// it.
	limit     int64
	overLimit bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.limit > 0 {
		room := r.limit - r.n
		if room <= 0 {
			r.overLimit = true
			return 0, errHeadLimit
		}
		if int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := r.r.Read(p)
	if n > 0 {
		if r.n == 0 {
			r.first = time.Now()
		}
		r.n += int64(n)
		if !r.sawLF && bytes.IndexByte(p[:n], '\n') >= 0 {
			r.sawLF = true
		}
	}
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// framing lists the headers the Client writes itself.
var framing = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Upgrade": true,
}

// sentHeaders returns the names of h that go on the wire, sorted, leaving
// out the framing headers the encoders write themselves, and whether h
// has a User-Agent key (present with no values, it suppresses the
// default). Both the HTTP/1.1 and the HTTP/2 encoding send these.
func sentHeaders(h http.Header) (keys []string, hasUA bool) {
	keys = make([]string, 0, len(h))
	for k := range h {
		ck := http.CanonicalHeaderKey(k)
		hasUA = hasUA || ck == "User-Agent"
		if !framing[ck] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, hasUA
}

// encode writes the request by hand so that the bytes on the wire are exactly
// known: Host first, the caller's headers in sorted order, then
// Content-Length and, when closeConn is set, "Connection: close". Without
// it the server keeps the connection open after its reply until the
// harness, having read the reply, closes it. The caller's own Connection
// header is never sent (see framing).
func encode(host string, req Request, closeConn bool) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !httpguts.ValidHeaderFieldName(method) { // a method is a token, as a header name is
		return nil, fmt.Errorf("wire: invalid method %q", method)
	}
	path := req.Path
	if path == "" {
		path = "/"
	}
	if !isVisible(path) {
		return nil, fmt.Errorf("wire: invalid request target %q", path)
	}
	if !isVisible(host) {
		return nil, fmt.Errorf("wire: invalid host %q", host)
	}
	var b bytes.Buffer
	b.Grow(256 + len(req.Body))
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\n")
	for k := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("wire: invalid header name %q", k)
		}
	}
	keys, hasUA := sentHeaders(req.Header)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			if !isFieldValue(v) {
				return nil, fmt.Errorf("wire: invalid value for header %q", k)
			}
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	// A User-Agent key present with no values suppresses the default.
	if !hasUA {
		b.WriteString("User-Agent: " + DefaultUserAgent + "\r\n")
	}
	if len(req.Body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b.WriteString("Content-Length: " + strconv.Itoa(len(req.Body)) + "\r\n")
	}
	if closeConn {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(req.Body)
	return b.Bytes(), nil
}

// isVisible reports whether s is non-empty and free of spaces and control
// bytes, as a request target or Host value must be.
func isVisible(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// isFieldValue rejects the bytes that would let a value end its header line
// or smuggle another one.
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}
