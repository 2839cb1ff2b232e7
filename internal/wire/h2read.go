package wire

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// next reads one frame and applies it.
func (hc *h2conn) next() error {
	f, err := hc.rfr.ReadFrame()
	if err != nil {
		var ce http2.ConnectionError
		var se http2.StreamError
		if errors.As(err, &ce) || errors.As(err, &se) || errors.Is(err, http2.ErrFrameTooLarge) {
			return fmt.Errorf("%w: %w", errH2Protocol, err)
		}
		return err
	}
	return hc.handle(f, time.Now())
}

// handle applies one frame read at time now. Its error ends the connection.
func (hc *h2conn) handle(f http2.Frame, now time.Time) error {
	fh := f.Header()
	s := hc.streams[fh.StreamID]
	// Only the reply's own frames count as its bytes: a WINDOW_UPDATE for a
	// stream is credit for the request still going out.
	if reply := fh.Type == http2.FrameHeaders || fh.Type == http2.FrameContinuation ||
		fh.Type == http2.FrameData || fh.Type == http2.FrameRSTStream; reply && s != nil && !s.done {
		if s.a.res.FirstByte.IsZero() {
			s.a.res.FirstByte = now
		}
		s.a.res.Received += int64(9 + fh.Length)
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return hc.settings(f)
	case *http2.WindowUpdateFrame:
		if fh.StreamID == 0 {
			hc.connWindow += int64(f.Increment)
		} else if s != nil {
			s.window += int64(f.Increment)
		}
	case *http2.PingFrame:
		if f.IsAck() {
			hc.pingSeen = hc.pingSeen || f.Data == h2Ping
		} else {
			hc.wfr.WritePing(true, f.Data)
		}
	case *http2.GoAwayFrame:
		for id, s := range hc.streams {
			if id > f.LastStreamID {
				hc.fail(s, fmt.Errorf("the server's GOAWAY (%v) says stream %d was not processed", f.ErrCode, id), KindRefused)
			}
		}
	case *http2.RSTStreamFrame:
		if s == nil {
			return fmt.Errorf("%w: RST_STREAM on stream %d, which was never opened", errH2Protocol, fh.StreamID)
		}
		kind := KindReset
		if f.ErrCode == http2.ErrCodeRefusedStream {
			// RFC 9113, section 8.7: a refused stream was not processed.
			kind = KindRefused
		}
		hc.fail(s, fmt.Errorf("stream reset by the server: %v", f.ErrCode), kind)
	case *http2.HeadersFrame:
		if s == nil {
			return fmt.Errorf("%w: HEADERS on stream %d, which was never opened", errH2Protocol, fh.StreamID)
		}
		hc.block = append(hc.block[:0], f.HeaderBlockFragment()...)
		hc.blockStream, hc.blockEnd = fh.StreamID, f.StreamEnded()
		if f.HeadersEnded() {
			return hc.headers()
		}
	case *http2.ContinuationFrame:
		// The Framer has checked that it follows its HEADERS.
		if len(hc.block)+len(f.HeaderBlockFragment()) > hc.c.maxHeaderBytes() {
			return hc.blockTooLarge()
		}
		hc.block = append(hc.block, f.HeaderBlockFragment()...)
		if f.HeadersEnded() {
			return hc.headers()
		}
	case *http2.DataFrame:
		if s == nil {
			return fmt.Errorf("%w: DATA on stream %d, which was never opened", errH2Protocol, fh.StreamID)
		}
		hc.data(s, f)
	case *http2.PushPromiseFrame:
		return fmt.Errorf("%w: PUSH_PROMISE although push was disabled", errH2Protocol)
	}
	return nil
}

// settings applies the server's SETTINGS, and acknowledges them, or notes
// its acknowledgement of the client's.
func (hc *h2conn) settings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		hc.ackSeen = true
		return nil
	}
	err := f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			hc.maxStreams = st.Val
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - hc.initialWindow
			hc.initialWindow = int64(st.Val)
			for _, s := range hc.streams {
				s.window += delta
			}
		case http2.SettingMaxFrameSize:
			hc.maxFrame = st.Val
		case http2.SettingHeaderTableSize:
			hc.henc.SetMaxDynamicTableSizeLimit(st.Val)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", errH2Protocol, err)
	}
	hc.settingsSeen = true
	hc.wfr.WriteSettingsAck()
	return nil
}

// data adds a DATA frame to stream s's reply body, up to the body limit;
// past it the stream is cancelled and its reply marked truncated.
func (hc *h2conn) data(s *h2stream, f *http2.DataFrame) {
	hc.credit(s, int64(f.Header().Length))
	if s.done {
		return
	}
	if s.a.res.Status == 0 {
		hc.fail(s, fmt.Errorf("%w: DATA before the reply's headers", errH2Protocol), KindMalformed)
		hc.wfr.WriteRSTStream(s.id, http2.ErrCodeProtocol)
		return
	}
	limit := hc.c.maxBody()
	data := f.Data()
	if room := limit - int64(len(s.a.res.Body)); int64(len(data)) > room {
		s.a.res.Body = append(s.a.res.Body, data[:room]...)
		s.a.res.Truncated = true
		// The rest is not wanted; the other streams keep the connection.
		hc.wfr.WriteRSTStream(s.id, http2.ErrCodeCancel)
		hc.complete(s)
		return
	}
	s.a.res.Body = append(s.a.res.Body, data...)
	if f.StreamEnded() {
		hc.complete(s)
	}
}

// decode decodes a header block, keeping at most Client.MaxHeaders fields
// and Client.MaxHeaderBytes of them (counted as HTTP/2's header list size:
// name, value and 32 bytes per field). A small block can expand into a
// large list (every field an index into the dynamic table), so the limit
// applies to what is decoded, not only to the block; over it, the rest is
// decoded to keep the shared table right but dropped, and over says so.
func (hc *h2conn) decode(block []byte) (fields []hpack.HeaderField, over error, err error) {
	maxBytes, maxFields := hc.c.maxHeaderBytes(), hc.c.maxHeaders()
	size := 0
	hc.hdec.SetEmitFunc(func(f hpack.HeaderField) {
		if over != nil {
			return
		}
		size += len(f.Name) + len(f.Value) + 32
		switch {
		case size > maxBytes:
			over = tooLarge("reply headers over %s", sizeLabel(int64(maxBytes)))
		case len(fields) >= maxFields:
			over = tooLarge("reply has over %d header fields", maxFields)
		default:
			fields = append(fields, f)
		}
	})
	if _, err := hc.hdec.Write(block); err != nil {
		return nil, nil, err
	}
	if err := hc.hdec.Close(); err != nil {
		return nil, nil, err
	}
	return fields, over, nil
}

// blockTooLarge ends the stream whose header block went over
// Client.MaxHeaderBytes, and the connection: the block cannot be skipped,
// since the decoder's table depends on it.
func (hc *h2conn) blockTooLarge() error {
	err := tooLarge("reply headers over %s", sizeLabel(int64(hc.c.maxHeaderBytes())))
	if s := hc.streams[hc.blockStream]; s != nil && !s.done {
		hc.fail(s, err, KindMalformed)
	}
	return fmt.Errorf("%w: stream %d: %w", errH2Protocol, hc.blockStream, err)
}

// headers decodes a completed header block and applies it to its stream.
// Blocks of finished streams are decoded too: the decoder's table is shared
// by the whole connection.
func (hc *h2conn) headers() error {
	fields, over, err := hc.decode(hc.block)
	if err != nil {
		return fmt.Errorf("%w: %w", errH2Protocol, err)
	}
	s := hc.streams[hc.blockStream]
	if s.done {
		return nil
	}
	if over != nil {
		hc.fail(s, over, KindMalformed)
		hc.wfr.WriteRSTStream(s.id, http2.ErrCodeCancel)
		return nil
	}
	if s.a.res.Status != 0 {
		// Trailers: HTTP/1.1 replies are recorded without theirs too.
		if hc.blockEnd {
			hc.complete(s)
		}
		return nil
	}
	var status string
	hdr := http.Header{}
	for _, f := range fields {
		if strings.HasPrefix(f.Name, ":") {
			if f.Name == ":status" {
				status = f.Value
			}
			continue
		}
		hdr.Add(http.CanonicalHeaderKey(f.Name), f.Value)
	}
	code, err := strconv.Atoi(status)
	if err != nil || len(status) != 3 || code < 100 {
		hc.fail(s, fmt.Errorf("%w: reply :status %q", errH2Protocol, status), KindMalformed)
		hc.wfr.WriteRSTStream(s.id, http2.ErrCodeProtocol)
		return nil
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// An informational reply; the final one follows.
		if hc.blockEnd {
			hc.fail(s, fmt.Errorf("%w: the stream ended after a %d reply", errH2Protocol, code), KindMalformed)
		}
		return nil
	}
	s.a.res.Status, s.a.res.Header = code, hdr
	if hc.blockEnd {
		hc.complete(s)
	}
	return nil
}

// credit counts received DATA against the receive windows and returns
// credit once half a window is used, so that no reply stalls.
func (hc *h2conn) credit(s *h2stream, n int64) {
	if n == 0 {
		return
	}
	hc.unacked += n
	if hc.unacked >= h2ConnWindow/2 {
		hc.wfr.WriteWindowUpdate(0, uint32(hc.unacked))
		hc.unacked = 0
	}
	s.unacked += n
	if !s.done && s.unacked >= h2StreamWindow/2 {
		hc.wfr.WriteWindowUpdate(s.id, uint32(s.unacked))
		s.unacked = 0
	}
}

func (hc *h2conn) complete(s *h2stream) {
	if s.done {
		return
	}
	s.done = true
	s.a.res.End = time.Now()
	hc.open--
}

func (hc *h2conn) fail(s *h2stream, err error, kind string) {
	if !s.done {
		s.a.fail(err, kind)
		hc.complete(s)
	}
}

// endAll ends every open stream with the connection's error. As for
// HTTP/1.1, a stream cut before its status is "eof", after it "malformed",
// and a transport error (reset, timeout) wins over both.
func (hc *h2conn) endAll(err error) {
	kind := h2Kind(err)
	for _, s := range hc.streams {
		k := kind
		if k == KindEOF && s.a.res.Status != 0 {
			k = KindMalformed
		}
		hc.fail(s, err, k)
	}
}

// h2Kind classifies an error of an HTTP/2 connection: a server that broke
// the protocol sent a malformed reply, at the dial as after it.
func h2Kind(err error) string {
	if errors.Is(err, errH2Protocol) {
		return KindMalformed
	}
	return classify(err)
}
