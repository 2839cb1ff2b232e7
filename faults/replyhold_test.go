package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/wire"
)

// TestReplyHoldHoldsAfterTheCommit is the proof the hold-reply point rests
// on: when a reply is held, the server has already committed, and the
// client has received nothing; Cut ends the attempt with no reply byte,
// Release delivers the reply whole, and unarmed replies pass untouched.
func TestReplyHoldHoldsAfterTheCommit(t *testing.T) {
	target := newCommitter(t)
	rh, err := NewReplyHold(target.addr())
	require.NoError(t, err)
	t.Cleanup(func() { rh.Close() })
	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}

	// Unarmed: the reply passes.
	res := c.Do(context.Background(), rh.Addr(), orderRequest(0))
	require.NoError(t, res.Err)
	assert.Equal(t, 201, res.Status)

	disarm := rh.Arm()
	const n = 10
	for i := 1; i <= n; i++ {
		done := make(chan wire.Result, 1)
		go func() { done <- c.Do(context.Background(), rh.Addr(), orderRequest(i)) }()
		var ev ReplyEvent
		select {
		case ev = <-rh.Held():
		case <-time.After(10 * time.Second):
			t.Fatalf("send %d: no reply was held", i)
		}
		// The handler wrote its reply after committing: it has committed.
		assert.Equal(t, int64(i+1), target.commits.Load(), "send %d", i)
		assert.Positive(t, ev.Bytes)
		select {
		case r := <-done:
			t.Fatalf("send %d ended while its reply was held: %+v", i, r)
		default:
		}
		if i%2 == 1 {
			require.NoError(t, ev.Cut())
			r := <-done
			require.Error(t, r.Err, "send %d", i)
			assert.Zero(t, r.Received, "send %d: no reply byte reached the client", i)
			assert.ErrorIs(t, ev.Release(), ErrReplyEnded, "Release after Cut")
		} else {
			require.NoError(t, ev.Release())
			r := <-done
			require.NoError(t, r.Err, "send %d", i)
			assert.Equal(t, 201, r.Status)
		}
	}
	disarm()
	res = c.Do(context.Background(), rh.Addr(), orderRequest(n+1))
	require.NoError(t, res.Err)
	assert.Equal(t, int64(n+2), target.commits.Load())
}

// A reply held and not taken from Held when the hold is disarmed passes on.
func TestReplyHoldDisarmLetsAPendingReplyPass(t *testing.T) {
	target := newCommitter(t)
	rh, err := NewReplyHold(target.addr())
	require.NoError(t, err)
	t.Cleanup(func() { rh.Close() })
	c := &wire.Client{Host: target.addr(), Timeout: 5 * time.Second}
	disarm := rh.Arm()
	done := make(chan wire.Result, 1)
	go func() { done <- c.Do(context.Background(), rh.Addr(), orderRequest(1)) }()
	require.Eventually(t, func() bool { return target.commits.Load() == 1 }, 10*time.Second, time.Millisecond)
	disarm()
	r := <-done
	require.NoError(t, r.Err)
	assert.Equal(t, 201, r.Status)
}
