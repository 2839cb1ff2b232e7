package faults

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// cutRequestType is the toxiproxy type name of cutRequestToxic.
const cutRequestType = "idemcheck_cut_request"

// maxHead bounds how much the cut-request toxic buffers while it looks for
// the end of a request head; net/http's own default limit is 1 MB.
const maxHead = 1 << 20

func init() {
	toxics.Register(cutRequestType, new(cutRequestToxic))
}

// cutRequestToxic, on the upstream direction, forwards an HTTP/1.x request's
// head and the first half of its body, then closes both sides. It reads the
// head to learn where the body starts and how long it is (Content-Length),
// so it cuts every request in the middle of its own body whatever its
// length, on any number of concurrent connections through one proxy.
//
// A request without a body (Content-Length 0 or absent), or whose length
// the head does not say (chunked), is cut in the middle of its head
// instead: the server then never sees a complete request.
//
// The close reaches the server as end of stream, so its body read fails with
// an unexpected EOF; toxiproxy then closes the client's side too.
type cutRequestToxic struct{}

// cutRequestState is one connection's progress: the head bytes held while
// its end is not yet in sight, then how many bytes may pass and have passed.
type cutRequestState struct {
	head   []byte
	limit  int // -1 until the head is read
	passed int
}

func (t *cutRequestToxic) NewState() any { return &cutRequestState{limit: -1} }

func (t *cutRequestToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*cutRequestState)
	for {
		select {
		case <-stub.Interrupt:
			return // what it holds stays in st for the next Pipe
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			data := c.Data
			if st.limit < 0 {
				st.head = append(st.head, c.Data...)
				limit, ok := cutPoint(st.head)
				if !ok {
					continue
				}
				st.limit, data, st.head = limit, st.head, nil
			}
			if n := min(len(data), st.limit-st.passed); n > 0 {
				stub.Output <- &stream.StreamChunk{Data: data[:n], Timestamp: c.Timestamp}
				st.passed += n
			}
			if st.passed >= st.limit {
				stub.Close()
				drain(stub)
				return
			}
		}
	}
}

// cutPoint returns how many bytes of a request to pass, once buf holds its
// whole head (or more than maxHead bytes of it).
func cutPoint(buf []byte) (int, bool) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		if len(buf) > maxHead {
			return maxHead / 2, true
		}
		return 0, false
	}
	headLen := end + 4
	length := bodyLength(buf[:end])
	if length <= 0 {
		// No body to cut into: cut the head instead. At least one byte
		// passes, so the server sees a connection that starts a request.
		return max(headLen/2, 1), true
	}
	return headLen + length/2, true
}

// bodyLength returns the Content-Length the head declares, or -1 when the
// body's length is unknown (chunked, absent, repeated or malformed).
func bodyLength(head []byte) int {
	length := -1
	for i, line := range strings.Split(string(head), "\r\n") {
		if i == 0 {
			continue // the request line
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "transfer-encoding":
			return -1
		case "content-length":
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || length >= 0 {
				return -1
			}
			length = n
		}
	}
	return length
}

// drain consumes a closed stub's input until its end, so the goroutines that
// feed it (toxiproxy's reader of the source socket and the toxics before
// this one) are not left blocked on a send nobody receives. The input ends
// when toxiproxy closes the source socket, which the close of this stub's
// output sets off.
func drain(stub *toxics.ToxicStub) {
	for range stub.Input {
	}
}
