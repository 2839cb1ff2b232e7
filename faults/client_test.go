package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/wire"
)

// faultAddr starts a client Link in front of target and returns the address
// of f's proxy.
func faultAddr(t *testing.T, target *committer, f Fault) string {
	t.Helper()
	link, err := NewLink(target.addr())
	require.NoError(t, err)
	t.Cleanup(func() { link.Close() })
	addr, err := link.Addr(f)
	require.NoError(t, err)
	return addr
}

// sendAll sends n requests at once, each on its own connection, and returns
// their results in order.
func sendAll(c *wire.Client, addr string, n int) []wire.Result {
	results := make([]wire.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = c.Do(context.Background(), addr, orderRequest(i)) })
	}
	wg.Wait()
	return results
}

// eventually waits, generously, for a server-side count that trails the
// client's view: the client's connection can end before the server has
// finished with its side.
func eventually(t *testing.T, what string, want int64, get func() int64) {
	t.Helper()
	require.Eventually(t, func() bool { return get() == want }, 10*time.Second, 2*time.Millisecond,
		"%s: got %d, want %d", what, get(), want)
}

// TestCutRequestCommitsNothing proves cut-request: every request reaches
// the handler with exactly half its body, the body read fails, and nothing
// is committed.
func TestCutRequestCommitsNothing(t *testing.T) {
	const n = 30
	target := newCommitter(t)
	addr := faultAddr(t, target, CutRequest)
	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}
	bodyLen := len(orderRequest(0).Body)

	kinds := map[string]int{}
	for i := range n {
		res := c.Do(context.Background(), addr, orderRequest(i))
		require.Error(t, res.Err, "send %d got a reply through cut-request", i)
		assert.Zero(t, res.Status, "send %d", i)
		// The proxy closed the server's side before the server could have
		// answered (it answers only after its body read failed).
		assert.Zero(t, res.Received, "send %d", i)
		kinds[res.ErrKind]++
	}
	eventually(t, "failed body reads", n, target.readErrs.Load)
	assert.Equal(t, int64(n), target.entered.Load(), "handler entries")
	target.mu.Lock()
	partial := target.partial
	target.mu.Unlock()
	for i, got := range partial {
		assert.Equal(t, bodyLen/2, got, "body bytes read by failed read %d", i)
	}
	time.Sleep(50 * time.Millisecond) // room for a late commit, were there one
	require.Zero(t, target.commits.Load(), "commits through cut-request")
	t.Logf("cut-request: %d sends, handler entered %d, body reads failed %d after %d of %d bytes, %d commits, client error kinds %v",
		n, target.entered.Load(), target.readErrs.Load(), bodyLen/2, bodyLen, target.commits.Load(), kinds)
}

// Without a body there is nothing to cut into, so the head is cut: the
// server reads bytes but never a whole request, and the handler never runs.
func TestCutRequestWithoutBodyCutsTheHead(t *testing.T) {
	const n = 5
	target := newCommitter(t)
	addr := faultAddr(t, target, CutRequest)
	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}
	req := orderRequest(0)
	req.Body = nil
	for i := range n {
		res := c.Do(context.Background(), addr, req)
		require.Error(t, res.Err, "send %d", i)
		assert.Zero(t, res.Received, "send %d", i)
	}
	eventually(t, "connections the server closed", n, target.closed.Load)
	assert.Equal(t, int64(n), target.active.Load(), "connections that carried bytes")
	assert.Zero(t, target.entered.Load(), "handler entries")
	assert.Zero(t, target.commits.Load(), "commits")
}

// TestSlowReplyClientGivesUpAfterCommit proves slow-reply: a client whose
// timeout is shorter than the delay gives up with nothing received, while
// the server has already committed every send; a patient client gets the
// reply, no sooner than the delay.
func TestSlowReplyClientGivesUpAfterCommit(t *testing.T) {
	const n = 5
	const delay = 600 * time.Millisecond
	target := newCommitter(t)
	addr := faultAddr(t, target, SlowReply(delay))

	quick := &wire.Client{Host: target.addr(), Timeout: 200 * time.Millisecond}
	for i, res := range sendAll(quick, addr, n) {
		require.Error(t, res.Err, "send %d", i)
		assert.Equal(t, wire.KindTimeout, res.ErrKind, "send %d: %v", i, res.Err)
		assert.True(t, res.Written, "send %d", i)
		assert.Zero(t, res.Received, "send %d: the reply is still held", i)
	}
	// Every client has given up by now; the server had committed them all.
	require.Equal(t, int64(n), target.commits.Load(), "commits when the last client gave up")

	patient := &wire.Client{Host: target.addr(), Timeout: 10 * time.Second}
	res := patient.Do(context.Background(), addr, orderRequest(n))
	require.NoError(t, res.Err)
	assert.Equal(t, http.StatusCreated, res.Status)
	assert.Equal(t, fmt.Sprintf(`{"id":%d}`, n+1), string(res.Body))
	took := res.End.Sub(res.Start)
	assert.GreaterOrEqual(t, took, delay, "the reply was held for the delay")
	t.Logf("slow-reply(%v): %d clients with a 200ms timeout gave up with 0 bytes after %d commits; a patient client got its 201 after %v",
		delay, n, n, took.Round(time.Millisecond))
}

// TestTimeoutNeverReachesHandler proves timeout: the client's own timeout
// ends every attempt; the target accepted a connection for each and read
// not one byte from it, so the handler never ran; when the client gives up,
// the proxy closes the target's connection too.
func TestTimeoutNeverReachesHandler(t *testing.T) {
	const n = 5
	target := newCommitter(t)
	addr := faultAddr(t, target, Timeout)
	c := &wire.Client{Host: target.addr(), Timeout: 200 * time.Millisecond}
	for i, res := range sendAll(c, addr, n) {
		require.Error(t, res.Err, "send %d", i)
		assert.Equal(t, wire.KindTimeout, res.ErrKind, "send %d: %v", i, res.Err)
		assert.True(t, res.Written, "send %d: the proxy took the whole request", i)
		assert.Zero(t, res.Received, "send %d", i)
	}
	eventually(t, "connections the target accepted", n, target.conns.Load)
	eventually(t, "connections closed after the clients gave up", n, target.closed.Load)
	assert.Zero(t, target.active.Load(), "connections that carried a request byte")
	assert.Zero(t, target.entered.Load(), "handler entries")
	assert.Zero(t, target.commits.Load(), "commits")
	t.Logf("timeout: %d sends timed out; target accepted %d connections, read a byte on %d, entered the handler %d times, committed %d",
		n, target.conns.Load(), target.active.Load(), target.entered.Load(), target.commits.Load())
}

// TestResetAfterCommit proves reset: every request reaches the server whole
// and commits; the client's connection is then reset before one reply byte
// reaches it, and nothing is resent.
func TestResetAfterCommit(t *testing.T) {
	const n = 30
	target := newCommitter(t)
	addr := faultAddr(t, target, Reset)
	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}
	kinds := map[string]int{}
	for i := range n {
		res := c.Do(context.Background(), addr, orderRequest(i))
		require.Error(t, res.Err, "send %d got a reply through reset", i)
		assert.True(t, res.Written, "send %d", i)
		assert.Zero(t, res.Received, "send %d", i)
		// The reset comes when the reply's first bytes reach the proxy, and
		// the handler counts before it writes: this send has committed.
		assert.Equal(t, int64(i+1), target.commits.Load(), "after send %d", i)
		kinds[res.ErrKind]++
	}
	assert.Equal(t, map[string]int{wire.KindReset: n}, kinds, "client error kinds")
	time.Sleep(50 * time.Millisecond) // room for a resend, were there one
	require.Equal(t, int64(n), target.commits.Load(), "commits through reset")
	t.Logf("reset: %d sends, %d commits, client error kinds %v", n, target.commits.Load(), kinds)
}

// TestLatencyRepliesArrive proves latency: every reply arrives, one commit
// per send, and no exchange is faster than the delay both ways allows.
func TestLatencyRepliesArrive(t *testing.T) {
	const n = 5
	const ms, jitter = 60 * time.Millisecond, 20 * time.Millisecond
	target := newCommitter(t)
	addr := faultAddr(t, target, Latency(ms, jitter))
	c := &wire.Client{Host: target.addr(), Timeout: 10 * time.Second}
	var fastest time.Duration
	for i := range n {
		res := c.Do(context.Background(), addr, orderRequest(i))
		require.NoError(t, res.Err, "send %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
		assert.Equal(t, fmt.Sprintf(`{"id":%d}`, i+1), string(res.Body))
		assert.Equal(t, int64(i+1), target.commits.Load(), "after send %d", i)
		took := res.End.Sub(res.Start)
		// Each direction waits at least ms - jitter after the proxy read it.
		assert.GreaterOrEqual(t, took, 2*(ms-jitter), "send %d", i)
		if i == 0 || took < fastest {
			fastest = took
		}
	}
	t.Logf("latency(%v +/- %v each way): %d sends, %d commits, fastest exchange %v", ms, jitter, n, target.commits.Load(), fastest.Round(time.Millisecond))
}

// TestBandwidthRepliesArrive proves bandwidth: the replies arrive, one
// commit per send, and a body takes about its size over the rate to pass.
func TestBandwidthRepliesArrive(t *testing.T) {
	const n = 2
	const kbps = 16
	target := newCommitter(t)
	addr := faultAddr(t, target, Bandwidth(kbps))
	c := &wire.Client{Host: target.addr(), Timeout: 10 * time.Second}
	pad := strings.Repeat("x", 4096)
	for i := range n {
		req := orderRequest(i)
		req.Body = []byte(`{"totalCents":4000,"pad":"` + pad + `"}`)
		res := c.Do(context.Background(), addr, req)
		require.NoError(t, res.Err, "send %d", i)
		assert.Equal(t, http.StatusCreated, res.Status)
		assert.Equal(t, int64(i+1), target.commits.Load(), "after send %d", i)
		took := res.End.Sub(res.Start)
		// 4 KiB at 16 KB/s is 256 ms; half of it is a bound no scheduler
		// hiccup can break and no unthrottled link can meet.
		floor := time.Duration(len(req.Body)) * time.Second / (kbps * 1000) / 2
		assert.GreaterOrEqual(t, took, floor, "send %d", i)
		t.Logf("bandwidth(%d KB/s): send %d of %d bytes took %v", kbps, i, len(req.Body), took.Round(time.Millisecond))
	}
}
