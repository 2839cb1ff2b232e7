package wire

import (
	"context"
	"net"
	"sync"
	"time"
)

// burstHTTP1 sends reqs concurrently, each once on its own connection to
// addr, released as close to the same instant as one machine allows
// (last-byte synchronisation):
//
//  1. every connection is opened (and its TLS handshake done) first;
//  2. every request is written except its final byte, so the server holds
//     each one incomplete and cannot act on any of them yet;
//  3. once every prefix is in the server's hands as far as the Client can
//     tell (awaitPrefixes: acknowledged by the peer's kernel, and a
//     measured round trip passed), the final bytes are written on the
//     release lanes (releaseLanes; by default one writer), in a tight loop;
//  4. the replies are read concurrently.
//
// The requests are not marked "Connection: close", unlike a single
// attempt's: a server told to close writes its reply, then closes the
// connection (one more packet through the kernel, and the connection's
// teardown) before it takes in the next request, so a target that answers
// at once took the second request of a burst one close later. Unmarked, the
// server keeps the connection until the harness, having read the reply,
// closes it, after the release. Measured with the engine alone and a target
// on the same two cores that answers at once (BENCHMARKS.md, Connection:
// close and the target that answers at once): the share of bursts of 8
// whose first two requests arrived within 50 us rose from 0.04-0.10 to
// 0.21-0.47, with no change on a target that holds its replies. The price:
// the harness, closing first, keeps the TIME_WAIT of a burst's connections
// (N per burst) where the server kept it; single attempts, sent at a soak's
// rate, still leave it to the server.
//
// Holding back the final byte (the last body byte, or the last header byte
// of a request without a body) also holds middleware that acts before the
// body is read. The readers start only after the release loop, so that no
// reply wakes a goroutine while final bytes are still going out; FirstByte is
// therefore when the harness read the first reply byte, not when it arrived.
//
// It returns one Result per request, in order, the release spread (the
// time between the first and the last final-byte write, each stamped when
// its write returned), and what the prefix wait measured. An attempt that
// failed before its release (dial, handshake, prefix write) is not released
// and has Written false.
func (c *Client) burstHTTP1(ctx context.Context, addr string, reqs []Request) ([]Result, time.Duration, Link) {
	as := make([]*attempt, len(reqs))
	for i, req := range reqs {
		as[i] = c.newAttempt(ctx, addr, req, false)
	}

	var wg sync.WaitGroup
	for _, a := range as {
		if !a.done() {
			wg.Go(func() { a.dial(addr) })
		}
	}
	wg.Wait()

	for _, a := range as {
		if a.conn != nil {
			wg.Go(func() {
				if err := a.write(a.wire[:len(a.wire)-1]); err != nil {
					a.writeFailed(err)
				}
			})
		}
	}
	wg.Wait()

	ready := make([]*attempt, 0, len(as))
	for _, a := range as {
		if a.conn != nil && !a.done() {
			ready = append(ready, a)
		} else {
			a.finish()
		}
	}
	conns := make([]net.Conn, len(ready))
	for i, a := range ready {
		conns[i] = a.conn
	}
	var link Link
	if len(conns) > 0 {
		link = c.awaitPrefixes(ctx, conns, time.Now())
	}
	// The release does nothing but one small write per connection; the time
	// stamps are taken around each write and kept for later. The spread
	// runs from the start of the first write to the end of the last, as
	// over HTTP/2.
	starts := make([]time.Time, len(ready))
	sent := make([]time.Time, len(ready))
	errs := make([]error, len(ready))
	releaseLanes(c.laneCount(len(ready)), len(ready), func(i int) {
		starts[i] = time.Now()
		_, errs[i] = ready[i].conn.Write(ready[i].wire[len(ready[i].wire)-1:])
		sent[i] = time.Now()
	})
	spread := span(append(starts, sent...))

	for i, a := range ready {
		wg.Go(func() {
			defer a.finish()
			if errs[i] != nil {
				a.writeFailed(errs[i])
				return
			}
			a.sent(sent[i])
			a.read()
		})
	}
	wg.Wait()

	results := make([]Result, len(as))
	for i, a := range as {
		results[i] = a.res
	}
	return results, spread, link
}
