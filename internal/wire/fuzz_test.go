package wire

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// replyServer answers every connection on loopback with serve and returns
// its address.
func replyServer(f *testing.F, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// fuzzReply carries one fuzz input from the test to the server: each
// connection takes the reply the attempt that opened it is to read.
type fuzzReply chan []byte

var fuzzRequest = Request{Method: "POST", Path: "/orders", Body: []byte(`{"a":1}`)}

// checkResult holds for any reply: the attempt ended, with a status or an
// error, and kept no more body than allowed.
func checkResult(t *testing.T, r Result, maxBody int64) {
	t.Helper()
	if r.Err == nil && (r.Status < 100 || r.Status > 999) {
		t.Fatalf("a reply without error has status %d", r.Status)
	}
	if int64(len(r.Body)) > maxBody {
		t.Fatalf("kept %d body bytes, more than the %d allowed", len(r.Body), maxBody)
	}
}

// FuzzHTTP1Reply: whatever bytes a target answers over HTTP/1.1, the
// attempt ends with a status or an error, never a panic or a hang, and
// keeps no more than MaxBody.
func FuzzHTTP1Reply(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 409 Conflict\r\nRetry-After: 1\r\nContent-Length: 5\r\n\r\nbusy",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\nshort",
		"\x16\x03\x01garbage", "H", "",
	} {
		f.Add([]byte(s))
	}
	replies := make(fuzzReply, 1)
	addr := replyServer(f, func(c net.Conn) {
		b := <-replies
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 4096)
		_, _ = c.Read(buf) // the request head and body arrive in one or two reads; the reply does not wait for them
		_, _ = c.Write(b)
	})
	cl := &Client{Timeout: 2 * time.Second, MaxBody: 1024}
	f.Fuzz(func(t *testing.T, b []byte) {
		replies <- b
		r := cl.Do(context.Background(), addr, fuzzRequest)
		checkResult(t, r, cl.MaxBody)
	})
}

// FuzzH2Reply: whatever frames a target sends after a valid server preface,
// every stream of an HTTP/2 burst ends with a status or an error.
func FuzzH2Reply(f *testing.F) {
	// Seeds: a well-formed answer to stream 1 and 3 (HEADERS + DATA), and
	// frames that are broken in typical ways.
	var good bytes.Buffer
	fr := http2.NewFramer(&good, nil)
	for _, id := range []uint32{1, 3} {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x88}, EndHeaders: true}) // :status 200
		_ = fr.WriteData(id, true, []byte("{}"))
	}
	f.Add(good.Bytes())
	f.Add([]byte{0, 0, 4, 1, 4, 0, 0, 0, 1, 0x88}) // HEADERS with a short payload
	f.Add([]byte{0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1})
	replies := make(fuzzReply, 1)
	addr := replyServer(f, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		sf := http2.NewFramer(c, c)
		if _, err := sf.ReadFrame(); err != nil { // the client's SETTINGS
			return
		}
		_ = sf.WriteSettings()
		_ = sf.WriteSettingsAck()
		b := <-replies
		_, _ = c.Write(b)
		// Let the client read what was sent, then end the connection: a
		// stream the bytes did not finish then ends at once, not at the
		// client's timeout.
		time.Sleep(5 * time.Millisecond)
	})
	cl := &Client{Timeout: 500 * time.Millisecond, MaxBody: 1024, Protocol: ProtocolH2, Lanes: 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		replies <- b
		br := cl.SendBurst(context.Background(), addr, []Request{fuzzRequest, fuzzRequest})
		if len(br.Results) != 2 {
			t.Fatalf("%d results for 2 requests", len(br.Results))
		}
		for _, r := range br.Results {
			checkResult(t, r, cl.MaxBody)
		}
		// A burst that fell back to HTTP/1.1 opened other connections:
		// drain the replies the server did not take.
		select {
		case <-replies:
		default:
		}
	})
}
