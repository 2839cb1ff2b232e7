package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// hostileServer answers every request with head, then writes chunk again
// and again until the client goes away (or, when total is positive, until
// total bytes of chunks were written): a reply without end.
func hostileServer(t *testing.T, head string, chunk []byte, total int64) string {
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
				conn.SetDeadline(time.Now().Add(30 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				if _, err := io.WriteString(conn, head); err != nil {
					return
				}
				for sent := int64(0); total <= 0 || sent < total; sent += int64(len(chunk)) {
					if _, err := conn.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// allocated runs f and returns the bytes the process allocated meanwhile:
// an upper bound on what f held at any one time.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Whatever a hostile target sends, an attempt holds a bounded amount: an
// endless header line and endless small headers end the attempt with
// "reply headers over 64 KiB" after about 64 KiB read, and a 50 MB body
// is cut at MaxBody and read no further.
func TestDoHostileReplies(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name      string
		head      string
		chunk     []byte
		total     int64
		wantErr   string
		maxRecv   int64
		maxAlloc  uint64
		truncated bool
	}{
		{name: "endless header line", head: "HTTP/1.1 200 OK\r\nX-Long: ", chunk: bytes.Repeat([]byte("a"), 32<<10),
			wantErr: "reply headers over 64 KiB", maxRecv: 64<<10 + 8<<10, maxAlloc: 4 * mib},
		{name: "endless small headers", head: "HTTP/1.1 200 OK\r\n", chunk: []byte(strings.Repeat("X-A: b\r\n", 4096)),
			wantErr: "reply headers over 64 KiB", maxRecv: 64<<10 + 8<<10, maxAlloc: 4 * mib},
		{name: "endless 1xx replies", head: "", chunk: []byte(strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 1000)),
			wantErr: "", maxRecv: 64<<10 + 8<<10, maxAlloc: 4 * mib},
		{name: "50 MB body", head: "HTTP/1.1 200 OK\r\nContent-Length: 52428800\r\n\r\n", chunk: make([]byte, 64<<10), total: 50 * mib,
			maxRecv: mib + 128<<10, maxAlloc: 6 * mib, truncated: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := hostileServer(t, c.head, c.chunk, c.total)
			var res Result
			alloc := allocated(func() {
				res = (&Client{Timeout: 20 * time.Second}).Do(context.Background(), addr, Request{Method: "POST", Body: []byte("{}")})
			})
			t.Logf("%s: received %d bytes, kept %d body bytes, allocated %d KiB, err %v", c.name, res.Received, len(res.Body), alloc>>10, res.Err)
			switch {
			case c.truncated:
				require.NoError(t, res.Err)
				assert.True(t, res.Truncated)
				assert.Len(t, res.Body, int(DefaultMaxBody))
			case c.wantErr != "":
				require.Error(t, res.Err)
				assert.ErrorIs(t, res.Err, ErrReplyTooLarge)
				assert.Equal(t, "reply too large: "+c.wantErr, res.Err.Error())
				assert.Equal(t, KindMalformed, res.ErrKind)
				assert.Zero(t, res.Status)
				assert.Empty(t, res.Body)
			default:
				// Ten 1xx replies are skipped, and then the harness stops
				// reading: the head's budget was not even needed.
				assert.Equal(t, 103, res.Status)
			}
			assert.LessOrEqual(t, res.Received, c.maxRecv, "bytes read off the connection")
			assert.LessOrEqual(t, alloc, c.maxAlloc, "bytes allocated by the attempt")
		})
	}
}

// Many headers within the byte limit but over the count limit are refused
// too, and both limits are the Client's to set.
func TestDoHeaderLimits(t *testing.T) {
	addr := rawServer(t, "HTTP/1.1 200 OK\r\n"+strings.Repeat("A: b\r\n", 50)+"Content-Length: 0\r\n\r\n")
	res := (&Client{MaxHeaders: 20}).Do(context.Background(), addr, Request{})
	require.ErrorIs(t, res.Err, ErrReplyTooLarge)
	assert.Equal(t, "reply too large: reply has 51 header fields, over 20", res.Err.Error())

	res = (&Client{MaxHeaderBytes: 100}).Do(context.Background(), addr, Request{})
	require.ErrorIs(t, res.Err, ErrReplyTooLarge)
	assert.Equal(t, "reply too large: reply headers over 100 bytes", res.Err.Error())

	res = (&Client{}).Do(context.Background(), addr, Request{})
	require.NoError(t, res.Err)
	assert.Len(t, res.Header["A"], 50)

	// A body of any size fits a small head limit: the limit is the head's.
	big := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n"+strings.Repeat("z", 300000))
	res = (&Client{MaxHeaderBytes: 100, MaxBody: 1000}).Do(context.Background(), big, Request{})
	require.NoError(t, res.Err)
	assert.True(t, res.Truncated)
	assert.Len(t, res.Body, 1000)
}

// HTTP/2: a header block continued without end, and a small block that
// decodes into a huge header list (every field an index into a 4 KiB
// dynamic table entry), end their stream with "reply headers over 64 KiB"
// while the other streams of the burst are answered.
func TestBurstH2HostileHeaders(t *testing.T) {
	cases := map[string]func(fr *http2.Framer, block func(string) []byte){
		"endless continuation": func(fr *http2.Framer, block func(string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("201"), EndHeaders: true, EndStream: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block("201"), EndHeaders: false})
			frag := bytes.Repeat([]byte{0}, 16000)
			for range 200 { // 3.2 MB, far over the limit
				if fr.WriteContinuation(3, false, frag) != nil {
					return
				}
			}
		},
		"decoded list over the limit": func(fr *http2.Framer, block func(string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("201"), EndHeaders: true, EndStream: true})
			var b bytes.Buffer
			enc := hpack.NewEncoder(&b)
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: "201"})
			enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 4000)}) // into the table (index 62)
			for range 3000 {
				b.WriteByte(0x80 | 62) // the same field again, one byte each: 12 MB decoded
			}
			blk := b.Bytes()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: blk[:2000], EndHeaders: false})
			fr.WriteContinuation(3, true, blk[2000:])
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: block("202"), EndHeaders: true, EndStream: true})
		},
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			n := 2
			if name == "decoded list over the limit" {
				n = 3
			}
			addr := rawH2Server(t, n, reply)
			var r BurstResult
			alloc := allocated(func() {
				r = (&Client{Protocol: ProtocolH2, Timeout: 10 * time.Second}).SendBurst(context.Background(), addr, burstOf(n, "POST", orderBody))
			})
			t.Logf("%s: allocated %d KiB, stream 3: %v", name, alloc>>10, r.Results[1].Err)
			require.Len(t, r.Results, n)
			assert.NoError(t, r.Results[0].Err)
			assert.Equal(t, 201, r.Results[0].Status)
			bad := r.Results[1]
			require.Error(t, bad.Err)
			assert.True(t, errors.Is(bad.Err, ErrReplyTooLarge), "%v", bad.Err)
			assert.Contains(t, bad.Err.Error(), "reply headers over 64 KiB")
			assert.Equal(t, KindMalformed, bad.ErrKind)
			assert.Empty(t, bad.Header)
			if n == 3 {
				assert.NoError(t, r.Results[2].Err, "the connection goes on: the decoder's table is intact")
				assert.Equal(t, 202, r.Results[2].Status)
			}
			assert.LessOrEqual(t, alloc, uint64(24<<20), "bytes allocated by the burst (decoded fields are dropped past the limit)")
		})
	}
}
