package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPacerHoldsTheRateAndKeepsBurstsWhole(t *testing.T) {
	p := newPacer(1000, 32)
	start := time.Now()
	// The bucket starts full (1000 tokens); the 256 tokens asked beyond it
	// can only come from refill at 1000/s: at least 0.25 s. This bounds the
	// rate from above, which is what a cap promises; it cannot fail on a
	// slow machine.
	for range 1000 / 32 {
		require.NoError(t, p.wait(context.Background(), 32))
	}
	for range 8 {
		require.NoError(t, p.wait(context.Background(), 32)) // 256 more
	}
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "the cap held")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := newPacer(1, 1)
	require.NoError(t, slow.wait(ctx, 1))
	assert.ErrorIs(t, slow.wait(ctx, 1), context.Canceled, "a wait ends with its context")
	assert.NoError(t, newPacer(0, 1).wait(ctx, 1000), "no cap")
}
