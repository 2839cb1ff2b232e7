package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// One small combination end to end: every driver's bursts are counted from
// the target's arrivals, the product's with its client release spread, and
// the tables name every driver and the bars.
func TestMeasureAndRender(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = bench.Serve(ln, bench.NewRaceTarget(200*time.Microsecond)) }()
	t.Cleanup(func() { ln.Close() })

	cfg := config{bursts: 3, warmup: 1, pause: time.Millisecond}
	for _, p := range []wire.Protocol{wire.ProtocolHTTP1, wire.ProtocolH2} {
		c := combo{hold: 200 * time.Microsecond, proto: p, n: 4}
		got, err := measure(context.Background(), cfg, ln.Addr().String(), c)
		require.NoError(t, err)
		for _, d := range drivers {
			f := reduce(got[d])
			assert.Equal(t, 3, f.bursts, "%s over %s", d, p)
			assert.Zero(t, f.failed, "%s over %s: %v", d, p, f.lastErr)
		}
		assert.Positive(t, reduce(got[product]).releaseUS, "the product's own release spread is kept")
		md := render(cfg, 0, []combo{c}, map[combo]map[string]*tally{c: got}, "0, 0, 0", "0, 0, 0", time.Second, false)
		for _, d := range drivers {
			assert.Contains(t, md, d)
		}
		assert.True(t, strings.Contains(md, "≤ 0.5x") || strings.Contains(md, "≤ 0.3x"), md)
	}
}
