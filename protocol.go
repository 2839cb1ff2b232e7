package idemcheck

// Protocol names the HTTP version a burst goes out with. A single attempt
// always goes out over HTTP/1.1, one connection carrying one reply: a cut
// after the reply's first byte, which the faults rely on, means something
// only then. The zero value means ProtocolAuto wherever a run is
// configured.
type Protocol string

const (
	// ProtocolAuto sends a burst over HTTP/2 when the target speaks it (ALPN
	// "h2" over TLS, or an answer to the h2c prior-knowledge preface in the
	// clear) and over HTTP/1.1 otherwise.
	ProtocolAuto Protocol = "auto"
	// ProtocolHTTP1 sends a burst as last-byte synchronised HTTP/1.1
	// requests, one connection each.
	ProtocolHTTP1 Protocol = "http1"
	// ProtocolH2 sends a burst as the streams of HTTP/2 connections, one
	// per release lane, each connection's final frames in one write. A
	// target that does not speak HTTP/2 fails every attempt of the burst
	// instead of being sent HTTP/1.1; a burst whose share per connection is
	// over the server's concurrent-stream limit still goes out over
	// HTTP/1.1, and the history's burst record says so.
	ProtocolH2 Protocol = "h2"
)
