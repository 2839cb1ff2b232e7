package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Protocol names the HTTP version a burst goes out with; it is the root
// package's type, so that a run's settings name it without reaching into
// this package. Single attempts (Do) are always HTTP/1.1. A Client whose
// Protocol is empty sends bursts over HTTP/1.1.
type Protocol = idemcheck.Protocol

// The protocols, as the root package names them.
const (
	ProtocolAuto  = idemcheck.ProtocolAuto
	ProtocolHTTP1 = idemcheck.ProtocolHTTP1
	ProtocolH2    = idemcheck.ProtocolH2
)

// Protocols lists the values ParseProtocol accepts, for flag help.
var Protocols = []Protocol{ProtocolAuto, ProtocolHTTP1, ProtocolH2}

// ParseProtocol parses a --protocol flag value.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols {
		if string(p) == s {
			return p, nil
		}
	}
	known := make([]string, len(Protocols))
	for i, p := range Protocols {
		known[i] = string(p)
	}
	return "", fmt.Errorf("unknown protocol %q (known: %s)", s, strings.Join(known, ", "))
}

// probeTimeout bounds the wait for an answer to the h2c preface. A server
// that only speaks HTTP/1.1 answers it at once with an error status; one
// that stays silent is taken for HTTP/1.1 after this long rather than
// eating the burst's whole timeout.
const probeTimeout = 2 * time.Second

// errNotH2 means the target answered, but not in HTTP/2.
var errNotH2 = errors.New("the target does not speak HTTP/2")

// Probe tells whether the target at addr speaks HTTP/2: over TLS, whether it
// selects "h2" by ALPN; in the clear, whether it answers the h2c
// prior-knowledge preface with a SETTINGS frame. It returns ProtocolH2 or
// ProtocolHTTP1, or an error when the target could not be reached at all.
//
// A plain HTTP/1.1 server sees the preface as a request "PRI * HTTP/2.0",
// which Go's net/http even hands to the application's handler. A caller
// that sends many bursts to one target should therefore Probe once and set
// Client.Protocol to the answer, rather than leave every burst in
// ProtocolAuto to find out again.
func (c *Client) Probe(ctx context.Context, addr string) (Protocol, error) {
	deadline := time.Now().Add(c.timeout())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	hc, err := c.dialH2(ctx, addr, deadline)
	switch {
	case errors.Is(err, errNotH2):
		return ProtocolHTTP1, nil
	case err != nil:
		return "", err
	}
	hc.close()
	return ProtocolH2, nil
}

func (c *Client) protocol() Protocol {
	if c.Protocol == "" {
		return ProtocolHTTP1
	}
	return c.Protocol
}
