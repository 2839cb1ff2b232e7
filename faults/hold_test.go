package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The first offer wins, whoever makes it; the holder's resolve is what
// every party then reads, once.
func TestHoldFirstOfferWins(t *testing.T) {
	h := newHold()
	h.offer(outcomeCut)
	h.offer(outcomeReleased)
	o, ok := h.await(nil)
	assert.True(t, ok)
	assert.Equal(t, outcomeCut, o)
	assert.Equal(t, outcomeHeld, h.state(), "held until the holder resolves")
	h.resolve(o)
	h.resolve(outcomeReleased)
	assert.Equal(t, outcomeCut, h.state())
	assert.Equal(t, outcomeCut, h.decide(outcomeReleased, time.Hour), "a late decision reads what was done")
}

// A party's wait ends when one of the hold's ends closes (its connection
// ended, its Link closed), with the hold still undecided: the holder may
// never come to it.
func TestHoldWaitEndsWithItsConnection(t *testing.T) {
	gone := make(chan struct{})
	h := newHold(gone, nil)
	close(gone)
	assert.Equal(t, outcomeHeld, h.decide(outcomeReleased, time.Hour))
	o, ok := h.await(nil)
	assert.True(t, ok, "the offer stays queued for a holder that still comes")
	assert.Equal(t, outcomeReleased, o)
}

// No wait is unbounded: a party's wait ends at its bound, and a holder
// that nobody decides cuts at the hold's.
func TestHoldWaitsAreBounded(t *testing.T) {
	h := newHold()
	assert.Equal(t, outcomeHeld, h.wait(time.Millisecond))
	h.until = time.Now()
	o, ok := h.await(nil)
	assert.True(t, ok)
	assert.Equal(t, outcomeCut, o)
	stop := make(chan struct{})
	close(stop)
	h = newHold()
	_, ok = h.await(stop)
	assert.False(t, ok, "a holder stopped takes no offer")
}
