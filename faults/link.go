package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// ErrClosed is returned by Addr after Close.
var ErrClosed = errors.New("faults: link closed")

// Link is an in-process toxiproxy in front of one upstream (host:port). Clean
// traffic and each fault get their own proxy, created on first use and then
// reused: a toxic acts on every connection through its proxy, so faulted and
// clean traffic must never share one. Each proxy gets its toxics before it
// accepts its first connection, so no connection through a fault's proxy
// ever escapes the fault.
//
// A Link does not know which link (client or db) it stands on; the caller
// passes it the faults meant for it. A Link is safe for concurrent use.
type Link struct {
	upstream string
	srv      *toxiproxy.ApiServer

	mu     sync.Mutex
	addrs  map[string]string // Fault.String() -> listen address
	closed bool
}

var quietOnce sync.Once

// newServer returns a toxiproxy server without its HTTP API: nothing listens
// but the proxies. The metrics container must not be nil (toxiproxy
// dereferences it on every connection); zerolog.Nop silences the proxies,
// and the global level silences the toxics that log through the global
// logger. That global setting is process-wide, which is why it is set once.
func newServer() *toxiproxy.ApiServer {
	quietOnce.Do(func() { zerolog.SetGlobalLevel(zerolog.Disabled) })
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// NewLink returns a Link in front of upstream. No proxy listens until Addr
// asks for one, and the upstream is not dialed until a client connects, so
// the target need not be running yet.
func NewLink(upstream string) (*Link, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faults: upstream %q: %w", upstream, err)
	}
	return &Link{upstream: upstream, srv: newServer(), addrs: map[string]string{}}, nil
}

// Upstream returns the address the Link forwards to.
func (l *Link) Upstream() string { return l.upstream }

// Addr returns the listen address (127.0.0.1:port) of the proxy that applies
// f, starting it on first use; None is the clean proxy.
func (l *Link) Addr(f Fault) (string, error) {
	var ts []toxic
	if !f.IsNone() {
		var err error
		if ts, err = toxicsFor(f); err != nil {
			return "", err
		}
	}
	key := f.String()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", ErrClosed
	}
	if addr, ok := l.addrs[key]; ok {
		return addr, nil
	}
	p := toxiproxy.NewProxy(l.srv, key, "127.0.0.1:0", l.upstream)
	for _, t := range ts {
		js, err := json.Marshal(t)
		if err != nil {
			return "", fmt.Errorf("faults: %s: %w", key, err)
		}
		if _, err := p.Toxics.AddToxicJson(bytes.NewReader(js)); err != nil {
			return "", fmt.Errorf("faults: %s: add toxic %s: %w", key, t.Type, err)
		}
	}
	if err := l.srv.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("faults: %s: start proxy: %w", key, err)
	}
	// Add returns after the listener is bound, so Listen holds the real port.
	l.addrs[key] = p.Listen
	return p.Listen, nil
}

// Close stops every proxy: their listeners close and their live connections,
// both sides, are closed. It is idempotent; Addr fails after it.
func (l *Link) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.srv.Collection.Clear()
}
