package wire

import (
	"context"
	"net"
	"slices"
	"time"
)

// MaxPrefixWait bounds how long an HTTP/1.1 burst waits, between its last
// prefix written and its release, for its prefixes to reach the server.
const MaxPrefixWait = 500 * time.Millisecond

// Link is what a burst measured of the link to its target before its
// release, for the record: a user can tell a tight release from a tight
// arrival only knowing the link.
type Link struct {
	// RTT is the quickest of the Client's latest single attempts' round
	// trips (request's last byte to reply's first byte, the target's own
	// time included), and Jitter the median's excess over it; RoundTrips
	// how many they were. Zeros when the Client has no RoundTrips or none
	// was recorded yet.
	RTT, Jitter time.Duration
	RoundTrips  int
	// KernelRTT is the kernel's smoothed round trip of the burst's
	// connections (the median; TCP_INFO, Linux) to the nearest TCP peer:
	// a proxy or balancer in between answers for the target. Zero where
	// unknown.
	KernelRTT time.Duration
	// PrefixWait is how long an HTTP/1.1 burst waited between its last
	// prefix written and its release: until the kernel reported every
	// prefix acknowledged, and RTT+Jitter (the median round trip) had
	// passed, within MaxPrefixWait. Zero over HTTP/2.
	PrefixWait time.Duration
	// Acked: the kernel reported every prefix acknowledged by the peer
	// before the release.
	Acked bool
}

// awaitPrefixes waits, once every prefix of conns was written (at
// written), until each is in the server's hands as far as the Client can
// tell, and returns what it measured.
//
// Two signs are waited for. The kernel's: every prefix acknowledged by the
// peer (TCP_INFO's unacknowledged and unsent counts at zero), which over a
// plain network path means the bytes reached the server's machine. And a
// round trip's: a proxy, a balancer or an emulated link in between
// acknowledges at once and forwards later, which no acknowledgement shows,
// so the burst also waits the median of the latest measured round trips
// (RoundTrips), which is more than the one-way delay of any but the most
// jittery link. Without the wait, over a link that delays each packet on
// its own, a request's arrival is the later of two independent delays
// (its prefix's and its final byte's) instead of one, and the burst
// arrives looser than it left.
//
// A peer's kernel may delay its acknowledgement (up to 40 ms on Linux) when
// it has nothing to send: the kernel's sign is waited for no longer than
// twice the kernel's own round trip or the median round trip, at least a
// millisecond. The whole wait is bounded by MaxPrefixWait and ctx.
func (c *Client) awaitPrefixes(ctx context.Context, conns []net.Conn, written time.Time) Link {
	l := c.roundTripLink()
	target := min(l.RTT+l.Jitter, MaxPrefixWait)
	pending := slices.Clone(conns)
	var rtts []time.Duration
	unknown := 0
	for first := true; ; first = false {
		left := pending[:0]
		for _, conn := range pending {
			acked, rtt, ok := tcpState(conn)
			if first {
				if ok {
					rtts = append(rtts, rtt)
				} else {
					unknown++
				}
			}
			if ok && !acked {
				left = append(left, conn)
			}
		}
		pending = left
		if first && len(rtts) > 0 {
			slices.Sort(rtts)
			l.KernelRTT = rtts[len(rtts)/2]
		}
		waited := time.Since(written)
		ackBound := min(max(2*l.KernelRTT, target, time.Millisecond), MaxPrefixWait)
		if (len(pending) == 0 || waited >= ackBound) && waited >= target || waited >= MaxPrefixWait || ctx.Err() != nil {
			break
		}
		step := 20 * time.Microsecond
		if len(pending) == 0 {
			step = target - waited
		}
		time.Sleep(step)
	}
	l.Acked = len(pending) == 0 && unknown == 0 && len(conns) > 0
	l.PrefixWait = time.Since(written)
	return l
}

// roundTripLink is the Link of the Client's measured round trips alone.
func (c *Client) roundTripLink() Link {
	quickest, jitter, n := c.RoundTrips.Estimate()
	return Link{RTT: quickest, Jitter: jitter, RoundTrips: n}
}
