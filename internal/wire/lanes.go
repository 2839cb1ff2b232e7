package wire

import (
	"runtime"
	"sync"
	"time"
)

// DefaultLanes is how many release lanes a burst uses unless the Client
// says otherwise: one, a single writer that never spins.
//
// Two lanes whose writers spun on a flag until released were the default
// until 2026-12-01, when the product path was measured with its targets
// sharing the machine's two cores (BENCHMARKS.md, product path). On a busy
// machine (load average 10-20) the spinning writers took the cores the
// target needed to take the burst in, and the lanes waited on each other
// for a scheduler time slice: an HTTP/1.1 burst's first two arrivals came
// 64-90 us apart against vegeta's 18-26 us in the same run, and its
// release took about 1 ms for 8 requests. One writer doing nothing but its
// writes gave 14-24 us, and over h2c 4-7 us against 7-8 us with two
// spinning lanes. Two lanes released through a channel instead of a spin
// measured the same as one over HTTP/1.1 and no better over h2c, where a
// single connection's one packet kept the full spread of 32 at 60-120 us
// against 160-275 us over two; so one is the default.
const DefaultLanes = 1

// laneCount is how many release lanes a burst of n requests uses: never
// more than the process can run at once (GOMAXPROCS) nor than requests.
func (c *Client) laneCount(n int) int {
	lanes := c.Lanes
	if lanes <= 0 {
		lanes = DefaultLanes
	}
	return max(min(lanes, runtime.GOMAXPROCS(0), n), 1)
}

// releaseLanes calls write(i) once for every i in [0, n) over the given
// number of lanes. With one lane the calling goroutine writes them all, in
// order. With more, every other lane is a goroutine of its own, parked on
// a channel until the calling goroutine, lane 0, closes it and writes its
// own share: the opening round, write(0) to write(lanes-1), is one write
// per lane, and the writes after it are shared by every lane but one, so
// that one core is left to a target on the same machine.
//
// No lane spins: a writer spinning while it waits for the others takes a
// core that a target on the same machine needs to take the burst in, and
// on a busy machine waits for a scheduler time slice besides (see
// DefaultLanes).
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
	start := make(chan struct{})
	var parked, wg sync.WaitGroup
	parked.Add(lanes - 1)
	for k := 1; k < lanes; k++ {
		wg.Go(func() {
			parked.Done()
			<-start
			lane(k)
		})
	}
	parked.Wait()
	close(start)
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
