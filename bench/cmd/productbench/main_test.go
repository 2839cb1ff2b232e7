package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/internal/linkemu"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// One small combination per protocol end to end, straight to the target
// and through an emulated link: every driver's bursts are counted from the
// target's arrivals, the product's with its client release spread, and the
// tables name every driver, what it sent as, and the goals each link has.
func TestMeasureAndRender(t *testing.T) {
	const hold = 200 * time.Microsecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = bench.Serve(ln, bench.NewRaceTarget(hold)) }()
	t.Cleanup(func() { ln.Close() })
	tlsCfg, err := bench.SelfSignedTLS()
	require.NoError(t, err)
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = bench.ServeTLS(tlsLn, bench.NewRaceTarget(hold), tlsCfg) }()
	t.Cleanup(func() { tlsLn.Close() })
	targets := map[bool]string{false: ln.Addr().String(), true: tlsLn.Addr().String()}

	cfg := config{bursts: 3, linkBursts: 2, warmup: 1, pause: time.Millisecond, links: []linkemu.Profile{linkemu.Loopback, linkemu.WAN}}
	var order []combo
	results := map[combo]map[string]*tally{}
	for _, l := range cfg.links {
		for _, p := range protocols {
			send, scheme := targets[p.tls], "http://"
			if p.tls {
				scheme = "https://"
			}
			if !direct(l) {
				link, err := linkemu.Listen(targets[p.tls], l)
				require.NoError(t, err)
				defer link.Close()
				send = link.Addr()
			}
			c := combo{link: l.Name, hold: hold, proto: p, n: 4}
			got, err := measure(context.Background(), cfg, send, scheme+targets[p.tls], c, cfg.burstsAcross(l))
			require.NoError(t, err)
			for _, d := range drivers {
				f := reduce(got[d])
				// The product repeats a loose burst, as a certification
				// does: on a busy machine it may send more than asked,
				// each repeat counted loose.
				assert.LessOrEqual(t, cfg.burstsAcross(l), f.bursts, "%s", c.label())
				assert.LessOrEqual(t, f.bursts-f.loose, cfg.burstsAcross(l), "%s: only loose bursts are repeated", c.label())
				assert.Zero(t, f.failed, "%s, %s: %v", c.label(), d, f.lastErr)
			}
			assert.Positive(t, reduce(got[product]).releaseUS, "the product's own release spread is kept")
			assert.Equal(t, []string{productWire(p)}, got[product].wires)
			if p.tls {
				assert.Equal(t, []string{"h2 over TLS"}, got[vegetaN].wires)
				assert.Equal(t, []string{"HTTP/1.1 over TLS"}, got[barrier].wires)
			} else {
				assert.Equal(t, []string{"HTTP/1.1"}, got[vegetaN].wires)
				assert.Equal(t, []string{"HTTP/1.1"}, got[barrier].wires)
			}
			order = append(order, c)
			results[c] = got
		}
	}
	md := render(cfg, 0, order, results, "0, 0, 0", "0, 0, 0", time.Second, false)
	for _, d := range drivers {
		assert.Contains(t, md, d)
	}
	assert.Contains(t, md, "#### Across loopback: no link, every driver sends to the target directly")
	assert.Contains(t, md, "#### Across "+linkemu.WAN.String()+": every driver sends through one emulated link")
	assert.Contains(t, md, "3 bursts per driver")
	assert.Contains(t, md, "2 bursts per driver")
	assert.Contains(t, md, "| holds 200µs | h2tls | 4 | idemcheck certify (product path) | h2 over TLS (single packet) | 2 |")
	assert.Contains(t, md, "| holds 200µs | h2tls | 4 | goroutines on a barrier (net/http, warm) | HTTP/1.1 over TLS | 3 |")
	// The windows are the direct link's only; the goals come after every
	// link, each link's own, the WAN's h2 over TLS against its loopback.
	wan := md[strings.Index(md, "#### Across wan"):strings.Index(md, "#### Goals")]
	assert.NotContains(t, wan, "< 10 us")
	assert.Contains(t, wan, "first two < 200 us")
	goals := md[strings.Index(md, "#### Goals"):]
	for _, g := range []string{
		"| loopback, http1: first-two gap no worse than vegeta's | holds 200µs | 4 |",
		"| loopback, http1: share within 200 us no lower than vegeta's |",
		"| loopback, h2: first-two gap at most 0.5x vegeta's |",
		"| wan, h2: race (first two < 200 us) in at least 0.95 of bursts |",
		"| wan, h2: whole-burst spread at most 0.4x vegeta's |",
		"| wan, h2tls: whole-burst spread within 1.5x of its spread on loopback |",
		"| wan, h2tls: race in at least 0.98 of bursts |",
		"| wan, http1: race at least as often as vegeta's |",
	} {
		assert.Contains(t, goals, g)
	}
	assert.Equal(t, 8, strings.Count(goals, "\n| ")-1, "one row per goal, after the head: %s", goals)
}

func TestParseFlags(t *testing.T) {
	links, err := parseLinks("loopback, wan")
	require.NoError(t, err)
	assert.Equal(t, []linkemu.Profile{linkemu.Loopback, linkemu.WAN}, links)
	links, err = parseLinks("10ms+0s")
	require.NoError(t, err)
	assert.Equal(t, []linkemu.Profile{{Name: "10ms+0s", Base: 10 * time.Millisecond}}, links, "a link of a base delay and no jitter")
	for _, bad := range []string{"", "lan,lan", "loopback,satellite", "10ms+", "-1ms+0s", "10ms+4"} {
		_, err := parseLinks(bad)
		assert.Error(t, err, "%q", bad)
	}

	ps, err := parseProtocols("h2tls,http1")
	require.NoError(t, err)
	assert.Equal(t, []protocol{{"h2tls", wire.ProtocolH2, true}, {"http1", wire.ProtocolHTTP1, false}}, ps)
	for _, bad := range []string{"", "auto", "h2,h2", "h3"} {
		_, err := parseProtocols(bad)
		assert.Error(t, err, "%q", bad)
	}

	ts, err := parseTargets("now,hold", time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, time.Millisecond}, ts)
	_, err = parseTargets("hold,now", 0)
	assert.Error(t, err, "-hold 0 makes hold the same target as now")

	cfg := config{bursts: 100, linkBursts: 30}
	assert.Equal(t, 100, cfg.burstsAcross(linkemu.Loopback))
	assert.Equal(t, 30, cfg.burstsAcross(linkemu.WAN))
	cfg.bursts = 3
	assert.Equal(t, 3, cfg.burstsAcross(linkemu.WAN), "-link-bursts bounds -bursts, never raises it")
	cfg.bursts, cfg.linkBursts = 100, 0
	assert.Equal(t, 100, cfg.burstsAcross(linkemu.LAN), "-link-bursts 0 is -bursts")
}
