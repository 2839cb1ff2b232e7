package wire

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request's Finish runs once per attempt, before the attempt's bytes
// are built: each of a burst's attempts, on either engine, carries its own
// computed header, and the caller's shared header is left as it was.
func TestFinishPerAttempt(t *testing.T) {
	var e echoTarget
	addr := h2cServer(t, &e, 0)
	var n atomic.Int32
	shared := http.Header{"X-Seq": {"shared"}}
	finish := func(r Request) Request {
		h := r.Header.Clone()
		h.Set("X-Seq", fmt.Sprint(n.Add(1)))
		r.Header = h
		return r
	}
	for _, p := range []Protocol{ProtocolHTTP1, ProtocolH2} {
		t.Run(string(p), func(t *testing.T) {
			n.Store(0)
			c := &Client{Protocol: p}
			reqs := make([]Request, 8)
			for i := range reqs {
				reqs[i] = Request{Method: "POST", Path: "/", Header: shared, Body: []byte(`{}`), Finish: finish}
			}
			r := c.SendBurst(context.Background(), addr, reqs)
			assert.Equal(t, p, r.Protocol)
			seqs := map[string]bool{}
			for _, s := range e.take() {
				seqs[s.seq] = true
			}
			for _, res := range r.Results {
				assert.True(t, seqs[res.SentHeader.Get("X-Seq")], "each result carries the header its attempt sent")
			}
			assert.Len(t, seqs, 8, "each attempt its own computed header")
			assert.Equal(t, int32(8), n.Load(), "Finish once per attempt")
			assert.Equal(t, "shared", shared.Get("X-Seq"))
			require.NotNil(t, reqs[0].Finish, "the caller's requests are left as they were")

			res := c.Do(context.Background(), addr, reqs[0])
			require.NoError(t, res.Err)
			assert.Equal(t, "9", string(res.Body))
			assert.Equal(t, "9", res.SentHeader.Get("X-Seq"))
			assert.Nil(t, c.Do(context.Background(), addr, Request{Method: "GET", Path: "/"}).SentHeader, "nothing computed, nothing kept")
			e.take()
		})
	}
}
