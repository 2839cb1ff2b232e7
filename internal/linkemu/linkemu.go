// Package linkemu emulates a network link on loopback: a TCP relay in front
// of one upstream that delays every chunk it forwards by a base delay plus
// a jitter, in each direction of each connection, in order, as a
// store-and-forward link does.
//
// A chunk is what one read of the relay returned: a request written in two
// writes a moment apart (the last-byte release's prefix and final byte)
// travels as two chunks, each with a delay of its own. A chunk is sent on
// no earlier than its own delay after it was read, and no earlier than its
// own delay after the chunk before it was delivered: a chunk that reaches
// the relay while the one before is still on its way waits behind it, so
// such a request's arrival is the sum of the two delays, as over a link
// whose every packet waits its turn.
//
// The relay terminates TCP: the client's kernel has its bytes acknowledged
// by the relay at once, whatever the emulated delay, as in front of a load
// balancer or a proxy. A client that waits for acknowledgements alone
// cannot tell when its bytes reached the server through it.
//
// It imports only the standard library and internal/tcprelay; it serves
// the benchmarks and the tests of the burst engines, never the product.
package linkemu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/tcprelay"
)

// Profile is how a link delays what crosses it, one way.
type Profile struct {
	// Name names the link in tables: "loopback", "lan", "wan".
	Name string
	// Base is the one-way delay every chunk gets.
	Base time.Duration
	// Jitter is the most a chunk's delay exceeds Base: each chunk gets a
	// uniform extra in [0, Jitter).
	Jitter time.Duration
	// Coherence, in [0, 1], is how much of a chunk's extra carries over
	// from the chunk before it on the same connection and direction: 0
	// draws every chunk's extra on its own, 1 keeps one extra per
	// connection and direction (a path that is slow stays slow).
	Coherence float64
}

// The links the benchmarks measure across.
var (
	// Loopback adds nothing: the relay still terminates TCP.
	Loopback = Profile{Name: "loopback"}
	// LAN is a 1 ms ± 0.5 ms link: 0.5 ms plus up to 1 ms.
	LAN = Profile{Name: "lan", Base: 500 * time.Microsecond, Jitter: time.Millisecond}
	// WAN is 10 ms plus up to 4 ms, drawn per chunk.
	WAN = Profile{Name: "wan", Base: 10 * time.Millisecond, Jitter: 4 * time.Millisecond}
)

// Profiles are the named links, for flags.
var Profiles = []Profile{Loopback, LAN, WAN}

// ByName returns the named profile, or for BASE+JITTER (two durations,
// such as 10ms+0s) a profile of that base delay and jitter named so.
func ByName(name string) (Profile, error) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	if base, jitter, ok := strings.Cut(name, "+"); ok {
		b, errB := time.ParseDuration(base)
		j, errJ := time.ParseDuration(jitter)
		if errB == nil && errJ == nil && b >= 0 && j >= 0 {
			return Profile{Name: name, Base: b, Jitter: j}, nil
		}
	}
	return Profile{}, fmt.Errorf("linkemu: unknown link %q: loopback, lan, wan, or BASE+JITTER such as 10ms+0s", name)
}

// String is the link as the tables show it.
func (p Profile) String() string {
	if p.Base == 0 && p.Jitter == 0 {
		return p.Name + " (no delay)"
	}
	return fmt.Sprintf("%s (%v + U[0, %v) per chunk, coherence %.1f)", p.Name, p.Base, p.Jitter, p.Coherence)
}

// Link is a running emulated link: connections to Addr reach the upstream
// with the profile's delays both ways.
type Link struct {
	Profile  Profile
	upstream string
	relay    *tcprelay.Relay
}

// Listen starts a link on a free port of 127.0.0.1 in front of upstream
// (host:port, on loopback). Close stops it.
func Listen(upstream string, p Profile) (*Link, error) {
	if p.Base < 0 || p.Jitter < 0 || p.Coherence < 0 || p.Coherence > 1 {
		return nil, errors.New("linkemu: delays must be positive and coherence within [0, 1]")
	}
	r, err := tcprelay.Listen()
	if err != nil {
		return nil, err
	}
	l := &Link{Profile: p, upstream: upstream, relay: r}
	r.Start(l.serve)
	return l, nil
}

// Addr is the link's host:port.
func (l *Link) Addr() string { return l.relay.Addr() }

// Close ends every connection and stops the link.
func (l *Link) Close() error { return l.relay.Close() }

func (l *Link) serve(n uint64, client net.Conn) {
	up, err := net.DialTimeout("tcp", l.upstream, 5*time.Second)
	if err != nil {
		return
	}
	if !l.relay.Track(up) {
		_ = up.Close()
		return
	}
	defer l.relay.Untrack(up)
	done := make(chan struct{}, 2)
	go func() { l.pipe(up, client, 2*n); done <- struct{}{} }()
	go func() { l.pipe(client, up, 2*n+1); done <- struct{}{} }()
	<-done
	<-done
}

// chunk is one read, stamped when it was read.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe forwards src to dst with the link's delays until src ends, then
// ends dst's writing side.
func (l *Link) pipe(dst, src net.Conn, seed uint64) {
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				chunks <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	extra := -1.0
	var delivered time.Time
	for c := range chunks {
		if l.Profile.Jitter > 0 {
			u := rng.Float64()
			if extra >= 0 {
				u = l.Profile.Coherence*extra + (1-l.Profile.Coherence)*u
			}
			extra = u
		}
		d := l.Profile.Base + time.Duration(max(extra, 0)*float64(l.Profile.Jitter))
		due := c.at.Add(d)
		if after := delivered.Add(d); after.After(due) {
			due = after
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.b); err != nil {
			// The other side is gone: end both, and drain the reader,
			// which its closed source ends.
			_ = src.Close()
			_ = dst.Close()
			for range chunks {
			}
			return
		}
		delivered = time.Now()
	}
	if tc, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}
