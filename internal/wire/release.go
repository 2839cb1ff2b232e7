package wire

import (
	"context"
	"time"
)

// BurstResult is what one burst did.
type BurstResult struct {
	// Results holds one Result per request, in request order.
	Results []Result
	// Spread is the client release spread: the time from the start of the
	// first final write to the end of the last. Over HTTP/1.1 there is one
	// 1-byte final write per connection; over HTTP/2 one write per release
	// lane carries every final frame of that lane's connection, so Spread
	// is an upper bound of the time between the first and the last final
	// frame handed to the kernel. Zero when nothing was released.
	Spread time.Duration
	// Protocol is the protocol the burst went out with: ProtocolHTTP1 or
	// ProtocolH2.
	Protocol Protocol
	// Fallback, when not empty, says why a burst meant for HTTP/2 went out
	// over HTTP/1.1: the server allows fewer concurrent streams than the
	// burst has. Reports show it, since the release was then not one packet
	// per lane.
	Fallback string
	// MaxStreams is the server's SETTINGS_MAX_CONCURRENT_STREAMS when an
	// HTTP/2 connection was made (math.MaxUint32 when it set none), else 0.
	MaxStreams uint32
	// Link is what the burst measured of the link before its release, and
	// over HTTP/1.1 how long it waited for its prefixes to reach the
	// server.
	Link Link
}

// Burst sends reqs to addr released together, as SendBurst does, and
// returns only the results and the release spread.
func (c *Client) Burst(ctx context.Context, addr string, reqs []Request) ([]Result, time.Duration) {
	r := c.SendBurst(ctx, addr, reqs)
	return r.Results, r.Spread
}

// SendBurst sends reqs concurrently to addr, each once, released as close
// to the same instant as one machine allows, and reads every reply. The
// Client's Protocol chooses the engine:
//
//   - ProtocolHTTP1 (and the empty value): one connection per request, every
//     request written but its last byte, then the last bytes (last-byte
//     synchronisation);
//   - ProtocolH2: the requests are the streams of HTTP/2 connections, one
//     per release lane, every stream written but its final DATA frame, then
//     all final frames of a connection in one write call, so they reach the
//     server in one packet (the single-packet release). When the server
//     allows fewer concurrent
//     streams than there are requests, the burst goes out over HTTP/1.1 and
//     BurstResult.Fallback says so;
//   - ProtocolAuto: HTTP/2 when the target speaks it, else HTTP/1.1. Each
//     burst finds out on its own connection, which then carries the burst
//     when the answer is HTTP/2; against an HTTP/1.1 target that costs one
//     extra connection per burst (see Probe to ask once).
//
// Either way the final writes go out on the Client's release lanes
// (Client.Lanes; by default one writer, which never spins: see
// DefaultLanes and releaseLanes).
//
// An attempt that failed before its release (invalid request, dial,
// handshake, prefix write) is not released and has Written false; an
// invalid request fails alone and the others are still sent.
func (c *Client) SendBurst(ctx context.Context, addr string, reqs []Request) BurstResult {
	// Each attempt's computed parts are computed before anything is
	// sent, so that they never widen the release.
	finished := make([]Request, len(reqs))
	for i, r := range reqs {
		finished[i] = r.Finished()
	}
	var out BurstResult
	if p := c.protocol(); p == ProtocolHTTP1 || len(reqs) == 0 {
		res, spread, link := c.burstHTTP1(ctx, addr, finished)
		out = BurstResult{Results: res, Spread: spread, Protocol: ProtocolHTTP1, Link: link}
	} else {
		out = c.burstH2(ctx, addr, finished, p == ProtocolAuto)
	}
	for i := range out.Results {
		if reqs[i].Finish != nil {
			out.Results[i].SentHeader = finished[i].Header
		}
	}
	return out
}
