package wire

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLanes is how many release lanes a burst uses unless the Client
// says otherwise: two, since a race needs two attempts at once, and two is
// what was measured (on a 2-core machine shared with the target). More
// lanes mean more writers spinning at once and, over HTTP/2, more
// connections with fewer streams each; unmeasured, so not the default.
const DefaultLanes = 2

// laneCount is how many release lanes a burst of n requests uses: never
// more than the process can run at once (GOMAXPROCS) nor than requests.
func (c *Client) laneCount(n int) int {
	lanes := c.Lanes
	if lanes <= 0 {
		lanes = DefaultLanes
	}
	// Lanes spin while they wait for each other: more of them than can
	// run at once would wait for the scheduler to preempt one.
	return max(min(lanes, runtime.GOMAXPROCS(0), n), 1)
}

// releaseLanes calls write(i) once for every i in [0, n) over the given
// number of lanes: the calling goroutine is lane 0, every other lane a
// goroutine of its own, spinning on one flag until all are running, so
// that the opening round, write(0) to write(lanes-1), one per lane, leaves
// at the same instant. A race needs two attempts, and the first two
// arrivals then come from two cores at once instead of one write apart
// (a 1-byte loopback write cost 12-16 us of kernel time on the machine
// of BENCHMARKS.md; parallel writers do not make a write cheaper, they make
// the first ones simultaneous).
//
// The writes after the opening round are shared by every lane but one, in
// order, so that one core is left to the target, which on a machine it
// shares with the harness must take the arrivals in: measured on 2 cores,
// keeping both busy to the end delayed the target's handlers and widened
// the first-two gap by a third. With two lanes the rest is written by lane
// 0 alone.
func releaseLanes(lanes, n int, write func(i int)) {
	lanes = max(min(lanes, n), 1)
	if lanes == 1 {
		for i := range n {
			write(i)
		}
		return
	}
	rest := lanes - 1 // lanes that go on after the opening round
	lane := func(k int) {
		write(k)
		if k >= rest {
			return
		}
		for i := lanes + k; i < n; i += rest {
			write(i)
		}
	}
	var ready, going atomic.Int32
	var start atomic.Bool
	var wg sync.WaitGroup
	for k := 1; k < lanes; k++ {
		wg.Go(func() {
			ready.Add(1)
			for !start.Load() {
			}
			going.Add(1)
			lane(k)
		})
	}
	// Every other lane is running when the flag goes up, and this one
	// writes only once every other has seen it: a lane that spun long
	// enough to be preempted, or whose thread the kernel took off its core
	// for a busy target, would otherwise write its share milliseconds
	// late (seen with the target on the same machine). Waiting here costs
	// nothing, since the release moment matters only relative to itself.
	for ready.Load() < int32(lanes-1) {
		runtime.Gosched()
	}
	start.Store(true)
	for going.Load() < int32(lanes-1) {
	}
	lane(0)
	wg.Wait()
}

// span is the time between the earliest and the latest of ts, zero values
// ignored; zero when fewer than two are set.
func span(ts []time.Time) time.Duration {
	var lo, hi time.Time
	for _, t := range ts {
		if t.IsZero() {
			continue
		}
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}
