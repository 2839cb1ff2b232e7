package wire

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every index is written exactly once, whatever the lanes; the opening
// round is written by as many goroutines as there are lanes; and the rest
// by all lanes but one.
func TestReleaseLanes(t *testing.T) {
	for _, lanes := range []int{0, 1, 2, 3, 4} {
		for _, n := range []int{0, 1, 2, 3, 7, 32} {
			t.Run(fmt.Sprintf("lanes=%d/n=%d", lanes, n), func(t *testing.T) {
				var mu sync.Mutex
				seen := make([]int, n)
				writer := map[int]int64{}
				var order []int
				releaseLanes(lanes, n, func(i int) {
					id := goid()
					mu.Lock()
					defer mu.Unlock()
					seen[i]++
					writer[i] = id
					order = append(order, i)
				})
				for i, c := range seen {
					assert.Equal(t, 1, c, "index %d written %d times", i, c)
				}
				eff := max(min(lanes, n), 1)
				if n == 0 {
					return
				}
				opening := map[int64]bool{}
				for i := range min(eff, n) {
					opening[writer[i]] = true
				}
				assert.Len(t, opening, min(eff, n), "one writer per lane in the opening round")
				rest := map[int64]bool{}
				for i := eff; i < n; i++ {
					rest[writer[i]] = true
				}
				if n > eff {
					assert.Len(t, rest, max(eff-1, 1), "all lanes but one go on after the opening round")
				}
			})
		}
	}
}

func TestLaneCount(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	assert.Equal(t, 1, (&Client{Lanes: 1}).laneCount(32))
	assert.Equal(t, min(3, procs), (&Client{Lanes: 3}).laneCount(32), "never more lanes than can run at once")
	assert.Equal(t, min(2, procs), (&Client{Lanes: 3}).laneCount(2), "never more lanes than requests")
	assert.Equal(t, 1, (&Client{}).laneCount(0))
	assert.Equal(t, min(DefaultLanes, procs), (&Client{}).laneCount(32))
	assert.Equal(t, 1, (&Client{Lanes: 1000}).laneCount(1))
}

// goid is the calling goroutine's id, read from its stack header.
func goid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var id int64
	fmt.Sscanf(string(buf), "goroutine %d ", &id)
	return id
}
