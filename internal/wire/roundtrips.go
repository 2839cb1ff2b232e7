package wire

import (
	"slices"
	"sync"
	"time"
)

// RoundTrips gathers the round trips of a Client's single attempts: from
// the request's last byte handed to the kernel to the reply's first byte
// read, the target's own time included. An HTTP/1.1 burst waits about one
// of them between writing its prefixes and releasing its final bytes (see
// burstHTTP1), so that through a proxy, a balancer or a slow link every
// prefix has reached the server before any final byte sets off.
//
// The zero value is ready to use; one RoundTrips is shared by every copy
// of the Client that points to it, and is safe for concurrent use.
type RoundTrips struct {
	mu   sync.Mutex
	last [roundTripWindow]time.Duration
	n    int // round trips recorded, all told
}

// roundTripWindow is how many of the latest round trips are kept.
const roundTripWindow = 32

// record adds the round trip of a complete single attempt.
func (r *RoundTrips) record(res Result) {
	if r == nil || res.Err != nil || res.Sent.IsZero() || res.FirstByte.IsZero() || !res.FirstByte.After(res.Sent) {
		return
	}
	r.mu.Lock()
	r.last[r.n%roundTripWindow] = res.FirstByte.Sub(res.Sent)
	r.n++
	r.mu.Unlock()
}

// Estimate returns the quickest of the latest round trips and the median's
// excess over it (the link's jitter, and the target's, as a client sees
// them), from how many round trips; zeros when none was recorded.
func (r *RoundTrips) Estimate() (quickest, jitter time.Duration, n int) {
	if r == nil {
		return 0, 0, 0
	}
	r.mu.Lock()
	k := min(r.n, roundTripWindow)
	d := slices.Clone(r.last[:k])
	r.mu.Unlock()
	if k == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	return d[0], d[k/2] - d[0], k
}
