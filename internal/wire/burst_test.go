package wire

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/testctx"
)

// arrivals records, per request, when the server finished reading it and
// from which connection.
type arrivals struct {
	mu    sync.Mutex
	at    []time.Time
	conns map[string]int
	seqs  map[string]int
}

func (a *arrivals) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at, a.conns, a.seqs = nil, map[string]int{}, map[string]int{}
}

func (a *arrivals) spread() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.MaxFunc(a.at, time.Time.Compare).Sub(slices.MinFunc(a.at, time.Time.Compare))
}

func TestBurst(t *testing.T) {
	const n, rounds = 32, 20
	var seen arrivals
	seen.reset()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		now := time.Now()
		seen.mu.Lock()
		seen.at = append(seen.at, now)
		seen.conns[r.RemoteAddr]++
		seen.seqs[r.Header.Get("X-Seq")]++
		seen.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, r.Header.Get("X-Seq"))
	}))
	defer srv.Close()

	c := &Client{}
	var serverSpreads, clientSpreads []time.Duration
	for round := range rounds {
		seen.reset()
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = Request{
				Method: "POST", Path: "/orders",
				Header: http.Header{"Idempotency-Key": {"same-key"}, "X-Seq": {fmt.Sprint(i)}},
				Body:   []byte(`{"totalCents":4000}`),
			}
		}
		results, spread := c.Burst(context.Background(), addrOf(t, srv), reqs)
		require.Len(t, results, n)
		for i, res := range results {
			require.NoError(t, res.Err, "round %d request %d", round, i)
			assert.True(t, res.Written)
			assert.Equal(t, http.StatusCreated, res.Status)
			assert.Equal(t, fmt.Sprint(i), string(res.Body), "results are in request order")
			assert.False(t, res.Start.After(res.Sent))
			assert.False(t, res.Sent.After(res.FirstByte))
		}
		seen.mu.Lock()
		require.Len(t, seen.at, n, "the server saw every request once")
		assert.Len(t, seen.conns, n, "every request came on its own connection")
		assert.Len(t, seen.seqs, n)
		seen.mu.Unlock()
		serverSpreads = append(serverSpreads, seen.spread())
		clientSpreads = append(clientSpreads, spread)
	}
	slices.Sort(serverSpreads)
	slices.Sort(clientSpreads)
	t.Logf("N=%d, %d bursts: server spread of \"request fully read\": median %v, min %v, max %v",
		n, rounds, serverSpreads[rounds/2], serverSpreads[0], serverSpreads[rounds-1])
	t.Logf("N=%d, %d bursts: client release spread: median %v, min %v, max %v",
		n, rounds, clientSpreads[rounds/2], clientSpreads[0], clientSpreads[rounds-1])
}

func TestBurstRefused(t *testing.T) {
	results, spread := (&Client{}).Burst(context.Background(), refusedAddr, make([]Request, 4))
	require.Len(t, results, 4)
	for _, res := range results {
		assert.Equal(t, KindRefused, res.ErrKind, "%v", res.Err)
		assert.False(t, res.Written)
	}
	assert.Zero(t, spread)

	results, spread = (&Client{}).Burst(context.Background(), refusedAddr, nil)
	assert.Empty(t, results)
	assert.Zero(t, spread)
}

// An invalid request in a burst fails alone; the others are still sent.
func TestBurstInvalidMember(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	reqs := []Request{{}, {Method: "BAD METHOD"}, {}}
	results, _ := (&Client{}).Burst(context.Background(), addrOf(t, srv), reqs)
	assert.NoError(t, results[0].Err)
	assert.Equal(t, KindOther, results[1].ErrKind)
	assert.False(t, results[1].Written)
	assert.NoError(t, results[2].Err)
}

// An HTTP/1.1 burst's requests do not ask the server to close: the server
// keeps each connection after its reply (it goes idle), so that it does not
// spend the time between two requests of the burst on a close, and the
// harness closes it once the reply is read. A single attempt still asks
// the server to close.
func TestBurstLeavesTheCloseToTheHarness(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	var closeAsked []bool
	states := map[net.Conn][]http.ConnState{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		closeAsked = append(closeAsked, r.Close)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		states[c] = append(states[c], s)
	}
	srv.Start()
	defer srv.Close()
	// closed waits until every connection the server saw is closed, then
	// returns how many went idle (kept after a reply) before they closed.
	closed := func(conns int) (idled int) {
		ctx := testctx.UntilDeadline(t)
		for {
			mu.Lock()
			done, idled := 0, 0
			for _, ss := range states {
				if ss[len(ss)-1] == http.StateClosed {
					done++
					if slices.Contains(ss, http.StateIdle) {
						idled++
					}
				}
			}
			mu.Unlock()
			if done == conns {
				return idled
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%d of %d connections closed", done, conns)
			case <-time.After(time.Millisecond):
			}
		}
	}

	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{Method: "POST", Path: "/orders", Body: []byte(`{"totalCents":4000}`)}
	}
	results, _ := (&Client{}).Burst(context.Background(), addrOf(t, srv), reqs)
	for i, res := range results {
		require.NoError(t, res.Err, "request %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
	}
	assert.Equal(t, n, closed(n), "every burst connection was kept by the server after its reply, and closed by the harness")
	mu.Lock()
	assert.Equal(t, slices.Repeat([]bool{false}, n), closeAsked, "no burst request asks the server to close")
	closeAsked = nil
	mu.Unlock()

	res := (&Client{}).Do(context.Background(), addrOf(t, srv), reqs[0])
	require.NoError(t, res.Err)
	assert.Equal(t, n, closed(n+1), "the single attempt's connection was closed by the server, never kept")
	mu.Lock()
	assert.Equal(t, []bool{true}, closeAsked, "a single attempt asks the server to close")
	mu.Unlock()
}
