package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/wire"
)

// committer is a target that does no deduplication at all: every POST whose
// body it read whole is one commit, counted before the reply is written, so
// the count is the truth about how many requests reached the handler. It
// also counts what happened short of a commit: connections accepted and
// those that carried at least one byte (ConnState), handler entries, and
// body reads that failed, with how many body bytes they had read.
type committer struct {
	commits  atomic.Int64
	entered  atomic.Int64
	readErrs atomic.Int64
	conns    atomic.Int64 // StateNew
	active   atomic.Int64 // StateActive: one byte or more of a request read
	closed   atomic.Int64 // StateClosed

	mu       sync.Mutex
	partial  []int       // body bytes read by each failed read
	commitAt []time.Time // when each commit happened

	srv *httptest.Server
}

func newCommitter(t *testing.T) *committer {
	t.Helper()
	c := &committer{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			io.WriteString(w, "warm")
			return
		}
		c.entered.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			c.mu.Lock()
			c.partial = append(c.partial, len(body))
			c.mu.Unlock()
			c.readErrs.Add(1)
			return
		}
		c.mu.Lock()
		c.commitAt = append(c.commitAt, time.Now())
		c.mu.Unlock()
		n := c.commits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, n)
	}))
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			c.conns.Add(1)
		case http.StateActive:
			c.active.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.closed.Add(1)
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

func (c *committer) addr() string { return c.srv.Listener.Addr().String() }

func orderRequest(i int) wire.Request {
	return wire.Request{
		Method: "POST", Path: "/orders",
		Header: http.Header{
			"Idempotency-Key": {fmt.Sprintf("00000000-0000-4000-8000-%012d", i)},
			"Content-Type":    {"application/json"},
		},
		Body: []byte(`{"totalCents":4000}`),
	}
}

// TestCutReplyCommitsOnceNeverResent is the proof the cut-reply fault rests
// on: each send through it reaches the server whole and commits exactly
// once, the client gets no complete reply, and nothing is sent again.
func TestCutReplyCommitsOnceNeverResent(t *testing.T) {
	const n = 50
	target := newCommitter(t)
	link, err := NewLink(target.addr())
	require.NoError(t, err)
	defer link.Close()
	cutAddr, err := link.Addr(CutReply)
	require.NoError(t, err)
	cleanAddr, err := link.Addr(None)
	require.NoError(t, err)
	require.NotEqual(t, cutAddr, cleanAddr)

	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}
	kinds := map[string]int{}
	for i := range n {
		res := c.Do(context.Background(), cutAddr, orderRequest(i))
		require.Error(t, res.Err, "send %d got a complete reply through cut-reply", i)
		assert.True(t, res.Written, "send %d", i)
		assert.Zero(t, res.Status, "send %d", i)
		assert.Equal(t, int64(1), res.Received, "send %d: the cut passes exactly one reply byte", i)
		// The handler counts before it writes, and one reply byte arrived,
		// so this send's commit has already happened: exactly one per send.
		assert.Equal(t, int64(i+1), target.commits.Load(), "after send %d", i)
		kinds[res.ErrKind]++
	}
	time.Sleep(100 * time.Millisecond) // room for a resend, were there one
	require.Equal(t, int64(n), target.commits.Load(), "commits through cut-reply")
	t.Logf("cut-reply: %d sends, %d commits, error kinds %v", n, target.commits.Load(), kinds)

	for i := range n {
		res := c.Do(context.Background(), cleanAddr, orderRequest(i))
		require.NoError(t, res.Err, "clean send %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
		assert.Equal(t, fmt.Sprintf(`{"id":%d}`, n+i+1), string(res.Body))
	}
	require.Equal(t, int64(2*n), target.commits.Load(), "commits after the clean sends")
}

// TestTransportResendsBehindOurBack documents why the harness owns every
// send. net/http's Transport, on a kept-alive connection that ends before
// the first reply byte, sends the request again by itself when it carries
// Idempotency-Key and a replayable body (GetBody). The server then commits
// twice for one client call, and a harness built on http.Client would record
// one attempt where there were two: it would blame the target for a
// duplicate that the harness itself made. wire.Client sends once.
func TestTransportResendsBehindOurBack(t *testing.T) {
	const rounds = 10
	target := newCommitter(t)
	srv := newServer()
	p := toxiproxy.NewProxy(srv, "why", "127.0.0.1:0", target.addr())
	require.NoError(t, srv.Collection.Add(p, true))
	defer srv.Collection.Clear()
	url := "http://" + p.Listen + "/orders"
	// Reply bytes 0: the connection ends after the server has committed and
	// before any reply byte, the one case the Transport treats as safe to
	// resend (with bytes 1, as in CutReply, it does not).
	cut := `{"name":"cut","type":"limit_data","stream":"downstream","toxicity":1,"attributes":{"bytes":0}}`

	perCall := make([]int64, 0, rounds)
	for round := range rounds {
		p.Toxics.ResetToxics(context.Background())
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}

		// Pre-warm: one clean exchange leaves a kept-alive connection in the
		// pool; the toxic then acts on that connection too.
		resp, err := hc.Get(url)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_, err = p.Toxics.AddToxicJson(strings.NewReader(cut))
		require.NoError(t, err)

		before := target.commits.Load()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"totalCents":4000}`)))
		require.NoError(t, err)
		require.NotNil(t, req.GetBody, "NewRequest with a bytes.Reader makes the body replayable")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("00000000-0000-4000-8000-%012d", round))
		resp, err = hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		require.Error(t, err, "round %d: the reply was cut, yet the client got one", round)
		tr.CloseIdleConnections()
		perCall = append(perCall, target.commits.Load()-before)
	}
	t.Logf("http.Client, one call per round, pooled connection, limit_data bytes:0: commits per call %v", perCall)
	for round, got := range perCall {
		assert.Equal(t, int64(2), got, "round %d: commits for one http.Client call", round)
	}

	// The same cut, the same request, through wire.Client: one commit each.
	c := &wire.Client{Timeout: 5 * time.Second}
	for i := range rounds {
		before := target.commits.Load()
		res := c.Do(context.Background(), p.Listen, orderRequest(i))
		require.Error(t, res.Err)
		assert.True(t, res.Written)
		assert.Equal(t, int64(1), target.commits.Load()-before, "wire.Client send %d", i)
	}
}

func TestLinkReusesProxies(t *testing.T) {
	target := newCommitter(t)
	link, err := NewLink(target.addr())
	require.NoError(t, err)
	defer link.Close()
	assert.Equal(t, target.addr(), link.Upstream())

	clean, err := link.Addr(None)
	require.NoError(t, err)
	cut, err := link.Addr(CutReply)
	require.NoError(t, err)
	cut2, err := link.Addr(Fault{Name: "cut-reply"})
	require.NoError(t, err)
	clean2, err := link.Addr(Fault{})
	require.NoError(t, err)
	assert.Equal(t, cut, cut2)
	assert.Equal(t, clean, clean2)
	assert.NotEqual(t, clean, cut)
	for _, a := range []string{clean, cut} {
		host, _, err := net.SplitHostPort(a)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1", host)
	}

	_, err = link.Addr(Fault{Name: "nope"})
	assert.Error(t, err)
	_, err = link.Addr(Fault{Name: "cut-reply", Link: LinkDB})
	assert.Error(t, err)

	// Faults are normalized before they pick a proxy: defaults written out
	// or left implicit are one fault, one proxy.
	lat, err := link.Addr(Fault{Name: "latency"})
	require.NoError(t, err)
	lat2, err := link.Addr(Fault{Name: "latency", Params: map[string]string{"ms": "100", "jitter": "0"}})
	require.NoError(t, err)
	lat3, err := link.Addr(Latency(200*time.Millisecond, 0))
	require.NoError(t, err)
	assert.Equal(t, lat, lat2)
	assert.NotEqual(t, lat, lat3)

	_, err = NewLink("no-port")
	assert.Error(t, err)
	_, err = NewDBLink("no-port")
	assert.Error(t, err)
}

// A Link applies only the faults of the link it stands on: a db-cut on the
// client link would never see SQL and so never act, silently.
func TestLinkAppliesOnlyItsOwnFaults(t *testing.T) {
	client, err := NewLink("127.0.0.1:1")
	require.NoError(t, err)
	defer client.Close()
	db, err := NewDBLink("127.0.0.1:1")
	require.NoError(t, err)
	defer db.Close()

	_, err = client.Addr(DBCut("", 0))
	assert.EqualError(t, err, "faults: db-cut acts on the db link, and this Link stands on the client link")
	_, err = db.Addr(CutReply)
	assert.EqualError(t, err, "faults: cut-reply acts on the client link, and this Link stands on the db link")
	_, err = db.Addr(Latency(time.Millisecond, 0))
	assert.EqualError(t, err, "faults: latency acts on the client link, and this Link stands on the db link")
	_, err = db.Addr(Fault{Name: "db-cut", Params: map[string]string{"nth": "x"}})
	assert.EqualError(t, err, `faults: db-cut: nth="x": want a whole number, at least 1`)
	for _, f := range []Fault{None, DBCut("", 0), DBHold("", 0), DBLatency(time.Millisecond)} {
		_, err := db.Addr(f)
		assert.NoError(t, err, f.String())
	}
	assert.Zero(t, db.Matches(DBCut("", 0)), "nothing went through yet")
	assert.Zero(t, db.Matches(DBLatency(time.Millisecond)), "not a watching fault")
}

// A burst through the clean proxy still arrives whole; this logs the release
// spread seen through toxiproxy.
func TestLinkCleanBurst(t *testing.T) {
	const n = 16
	target := newCommitter(t)
	link, err := NewLink(target.addr())
	require.NoError(t, err)
	defer link.Close()
	clean, err := link.Addr(None)
	require.NoError(t, err)
	reqs := make([]wire.Request, n)
	for i := range reqs {
		reqs[i] = orderRequest(i)
	}
	results, spread := (&wire.Client{}).Burst(context.Background(), clean, reqs)
	for i, res := range results {
		require.NoError(t, res.Err, "request %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
	}
	assert.Equal(t, int64(n), target.commits.Load())
	t.Logf("burst of %d through the clean proxy: client release spread %v", n, spread)
}

func TestLinkClose(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer target.Close()
	defer close(release)

	link, err := NewLink(target.Listener.Addr().String())
	require.NoError(t, err)
	clean, err := link.Addr(None)
	require.NoError(t, err)
	cut, err := link.Addr(CutReply)
	require.NoError(t, err)

	// A live connection: its request is inside the handler when Close runs.
	done := make(chan wire.Result, 1)
	go func() {
		done <- (&wire.Client{Timeout: 5 * time.Second}).Do(context.Background(), clean, wire.Request{})
	}()
	<-entered

	require.NoError(t, link.Close())
	select {
	case res := <-done:
		require.Error(t, res.Err)
		assert.Contains(t, []string{wire.KindEOF, wire.KindReset}, res.ErrKind, "%v", res.Err)
	case <-time.After(3 * time.Second):
		t.Fatal("Close left a live connection open")
	}

	for _, addr := range []string{clean, cut} {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial %s after Close: %v", addr, err)
	}
	assert.NoError(t, link.Close(), "Close is idempotent")
	_, err = link.Addr(None)
	assert.ErrorIs(t, err, ErrClosed)
}
