// Command productbench measures idemcheck's bursts where users get them:
// through the product path, certify.Run with the concurrent-burst check
// alone (bench.RunProduct, the code `idemcheck certify --checks
// concurrent-burst` runs, as cmd/idemcheck's TestProductBenchIsCertify
// shows), against race targets in processes of their own on the same
// machine. vegeta and goroutines on a barrier send their bursts in the same
// run, interleaved one by one with the product's: after every burst the
// certification sends, the run's progress hook sends one burst of each
// (their order alternating) before the next round.
//
// Every figure comes from what the target saw: its handlers stamp each
// request's arrival (time.Now, monotonic) once its body is read, by key.
// It runs every combination of link, target (one holding its reply -hold
// after its check, one answering at once), protocol (HTTP/1.1, h2c, h2
// over TLS) and burst size, first on the machine as it is, then with -busy
// busy loops (`sh -c 'while :; do :; done'`, started and ended by this
// command) competing for the cores. With -write it puts the tables into
// BENCHMARKS.md between the product markers.
//
// Links (-links): across loopback the drivers send to the target directly,
// as they did before links were measured; across any other link
// (internal/linkemu: a base delay and a jitter per chunk) every driver
// sends through one emulated link, run in this process in front of the
// target, one link per target and link profile. The arrivals are fetched
// from the target directly, never through the link.
//
// Over TLS (protocol h2tls) the target serves h2 and HTTP/1.1 by ALPN
// behind a self-signed certificate made at its start; the product
// certifies its https:// URL with --insecure and --protocol h2, vegeta
// sends h2 over TLS (its HTTP2 option), and the barrier net/http over
// TLS, which speaks HTTP/1.1 on its warmed connections; each table says
// what every driver's requests went out as.
//
// Every loop is bounded by -bursts (-link-bursts across links) and -max,
// and traffic goes to the loopback targets only.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/internal/linkemu"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/runner"
)

// windows are the race windows whose share of bursts the tables show: a
// burst opens a window W when its first two requests reached the target
// less than W apart.
var windows = []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond}

func main() {
	var target bench.TargetFlags
	target.Define(200*time.Microsecond, "how long the holding target's handlers hold their replies after their check")
	bursts := flag.Int("bursts", 100, "bursts per driver in each combination (across loopback)")
	linkBursts := flag.Int("link-bursts", 50, "at most this many bursts per driver in each combination across a link other than loopback (0: as many as -bursts)")
	sizes := flag.String("n", "8,32", "burst sizes")
	protos := flag.String("protocols", "http1,h2,h2tls", "protocols: http1 (the product's --protocol http1), h2 (h2c), h2tls (h2 over TLS, --insecure)")
	links := flag.String("links", "loopback,lan,wan", "emulated links in front of the targets (internal/linkemu): loopback (no link: straight to the target), lan, wan, or BASE+JITTER (such as 10ms+0s: a delay without jitter)")
	targetsFlag := flag.String("targets", "hold,now", "race targets: hold (replies held -hold after the check), now (replies at once)")
	busy := flag.Int("busy", 2, "busy loops for the loaded pass (0: no loaded pass)")
	quiet := flag.Bool("quiet", true, "run the pass without busy loops")
	warmup := flag.Int("warmup", 5, "bursts per driver sent before each combination, not counted")
	pause := flag.Duration("pause", 2*time.Millisecond, "pause after every burst of each driver (the product's included), before the next driver's")
	maxTime := flag.Duration("max", 20*time.Minute, "stop measuring after this long, whatever -bursts says")
	write := flag.String("write", "", "Markdown file whose product section is rewritten")
	dump := flag.Int("dump", 0, "print the arrival offsets of this many bursts per driver and combination")
	flag.Parse()
	target.ServeIfAsked("productbench")

	cfg := config{bursts: *bursts, linkBursts: *linkBursts, warmup: *warmup, pause: *pause, max: *maxTime, hold: target.Hold, dump: *dump}
	var err error
	if cfg.sizes, err = bench.ParseSizes(*sizes); err != nil {
		fail(err)
	}
	if cfg.protocols, err = parseProtocols(*protos); err != nil {
		fail(err)
	}
	if cfg.links, err = parseLinks(*links); err != nil {
		fail(err)
	}
	if cfg.targets, err = parseTargets(*targetsFlag, target.Hold); err != nil {
		fail(err)
	}
	if cfg.bursts < 1 || cfg.linkBursts < 0 {
		fail(fmt.Errorf("-bursts must be 1 or more and -link-bursts 0 or more"))
	}
	var passes []int
	if *quiet {
		passes = append(passes, 0)
	}
	if *busy > 0 {
		passes = append(passes, *busy)
	}
	began := time.Now()
	var md strings.Builder
	fmt.Fprintf(&md, "Measured %s with %s %s/%s, %d CPUs, `go run ./bench/cmd/productbench %s`.\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		strings.Join(os.Args[1:], " "))
	deadline := began.Add(*maxTime)
	for _, loops := range passes {
		out, err := pass(cfg, loops, deadline)
		if err != nil {
			fail(err)
		}
		md.WriteString(out)
	}
	fmt.Fprintf(&md, "\n%s in all.\n", time.Since(began).Round(time.Second))
	fmt.Print(md.String())
	if *write != "" {
		if err := bench.RewriteSection(*write, "product", md.String()); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "productbench: figures written to %s\n", *write)
	}
}

// protocol is one value of -protocols: how the product sends its bursts
// (its --protocol), and whether over TLS.
type protocol struct {
	name string
	wire wire.Protocol
	tls  bool
}

var protocols = []protocol{{"http1", wire.ProtocolHTTP1, false}, {"h2", wire.ProtocolH2, false}, {"h2tls", wire.ProtocolH2, true}}

// parseProtocols reads -protocols: names of protocols, each once.
func parseProtocols(list string) ([]protocol, error) {
	var out []protocol
	for f := range strings.SplitSeq(list, ",") {
		f = strings.TrimSpace(f)
		i := slices.IndexFunc(protocols, func(p protocol) bool { return p.name == f })
		if i < 0 {
			return nil, fmt.Errorf("bad protocol %q: http1, h2 or h2tls", f)
		}
		if slices.Contains(out, protocols[i]) {
			return nil, fmt.Errorf("protocol %s named twice", f)
		}
		out = append(out, protocols[i])
	}
	return out, nil
}

// parseLinks reads -links: linkemu profile names, each once.
func parseLinks(list string) ([]linkemu.Profile, error) {
	var out []linkemu.Profile
	for f := range strings.SplitSeq(list, ",") {
		p, err := linkemu.ByName(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("link %s named twice", p.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseTargets reads -targets: hold (replies held hold), now (at once).
func parseTargets(list string, hold time.Duration) ([]time.Duration, error) {
	var out []time.Duration
	for f := range strings.SplitSeq(list, ",") {
		var h time.Duration
		switch f = strings.TrimSpace(f); f {
		case "hold":
			h = hold
		case "now":
		default:
			return nil, fmt.Errorf("unknown target %q: hold or now", f)
		}
		if slices.Contains(out, h) {
			return nil, fmt.Errorf("target %s named twice (or -hold 0 beside now)", f)
		}
		out = append(out, h)
	}
	return out, nil
}

// direct says whether the drivers send to the target straight, with no
// link in front of it: across a link that adds no delay (loopback), so
// that its figures stay those measured before links were.
func direct(l linkemu.Profile) bool { return l.Base == 0 && l.Jitter == 0 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "productbench:", err)
	os.Exit(1)
}

type config struct {
	bursts, linkBursts, warmup, dump int
	sizes                            []int
	protocols                        []protocol
	targets                          []time.Duration
	links                            []linkemu.Profile
	pause, max, hold                 time.Duration
}

// burstsAcross is how many bursts each driver sends per combination
// across link l: -bursts, at most -link-bursts across a link that delays.
func (c config) burstsAcross(l linkemu.Profile) int {
	if direct(l) || c.linkBursts == 0 {
		return c.bursts
	}
	return min(c.bursts, c.linkBursts)
}

// sample is one burst as the target saw it.
type sample struct {
	offsets []int64 // arrival offsets from the first, sorted
	release time.Duration
}

type tally struct {
	samples []sample
	loose   int
	failed  int
	lastErr error
	wires   []string // what the requests went out as, each once
}

func (t *tally) wire(w string) {
	if w != "" && !slices.Contains(t.wires, w) {
		t.wires = append(t.wires, w)
	}
}

const (
	product = "idemcheck certify (product path)"
	vegetaN = "vegeta (new Attacker per burst)"
	barrier = "goroutines on a barrier (net/http, warm)"
)

var drivers = []string{product, vegetaN, barrier}

type combo struct {
	link  string
	hold  time.Duration
	proto protocol
	n     int
}

// pass measures every combination once, with loops busy loops running.
func pass(cfg config, loops int, deadline time.Time) (string, error) {
	load0 := bench.LoadAverage()
	began := time.Now()
	// One target process per target and TLS or not, for the whole pass.
	type key struct {
		hold time.Duration
		tls  bool
	}
	addrs := map[key]string{}
	for _, h := range cfg.targets {
		for _, tlsOn := range []bool{false, true} {
			if !slices.ContainsFunc(cfg.protocols, func(p protocol) bool { return p.tls == tlsOn }) {
				continue
			}
			start := bench.StartRaceTargetProcess
			if tlsOn {
				start = bench.StartRaceTargetProcessTLS
			}
			addr, stop, err := start(h)
			if err != nil {
				return "", err
			}
			defer stop()
			addrs[key{h, tlsOn}] = addr
		}
	}
	if loops > 0 {
		stop, err := bench.StartBusyLoops(loops)
		if err != nil {
			return "", err
		}
		defer stop()
		time.Sleep(time.Second) // let the loops take their cores
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(deadline)+time.Minute)
	defer cancel()

	var order []combo
	results := map[combo]map[string]*tally{}
	truncated := false
	// across measures every combination of one target across link l: the
	// drivers send to the link's address, or to the target's when l adds
	// no delay; the arrivals come from the target itself.
	across := func(l linkemu.Profile, h time.Duration) error {
		send := map[bool]string{}
		for k, addr := range addrs {
			if k.hold != h {
				continue
			}
			send[k.tls] = addr
			if direct(l) {
				continue
			}
			link, err := linkemu.Listen(addr, l)
			if err != nil {
				return err
			}
			defer link.Close()
			send[k.tls] = link.Addr()
		}
		for _, n := range cfg.sizes {
			for _, p := range cfg.protocols {
				if time.Now().After(deadline) {
					truncated = true
					return nil
				}
				c := combo{l.Name, h, p, n}
				scheme := "http://"
				if p.tls {
					scheme = "https://"
				}
				t, err := measure(ctx, cfg, send[p.tls], scheme+addrs[key{h, p.tls}], c, cfg.burstsAcross(l))
				if err != nil {
					return fmt.Errorf("%s: %w", c.label(), err)
				}
				order = append(order, c)
				results[c] = t
				fmt.Fprintf(os.Stderr, "productbench: %s, %d busy loops: done after %v\n", c.label(), loops, time.Since(began).Round(time.Second))
			}
		}
		return nil
	}
	for _, l := range cfg.links {
		for _, h := range cfg.targets {
			if err := across(l, h); err != nil {
				return "", err
			}
		}
	}
	return render(cfg, loops, order, results, load0, bench.LoadAverage(), time.Since(began), truncated), nil
}

func targetName(hold time.Duration) string {
	if hold > 0 {
		return fmt.Sprintf("holds %v", hold)
	}
	return "answers at once"
}

func (c combo) label() string {
	return fmt.Sprintf("%s, target %s, %s, N=%d", c.link, targetName(c.hold), c.proto.name, c.n)
}

// productWire is what the product's bursts go out as.
func productWire(p protocol) string {
	switch {
	case p.wire == wire.ProtocolHTTP1 && p.tls:
		return "HTTP/1.1 over TLS (last byte)"
	case p.wire == wire.ProtocolHTTP1:
		return "HTTP/1.1 (last byte)"
	case p.tls:
		return "h2 over TLS (single packet)"
	}
	return "h2c (single packet)"
}

// measure runs one combination: a certification of bursts rounds, with
// one vegeta and one barrier burst sent after each of its bursts, every
// driver sending to send (the target's host:port, or a link's in front of
// it); the arrivals are fetched from target (http:// or https://
// host:port).
func measure(ctx context.Context, cfg config, send, target string, c combo, bursts int) (map[string]*tally, error) {
	newVegeta, newBarrier, productConfig := bench.NewVegeta, bench.NewBarrier, bench.ProductConfig
	if c.proto.tls {
		newVegeta, newBarrier, productConfig = bench.NewVegetaTLS, bench.NewBarrierTLS, bench.ProductConfigTLS
	}
	veg := newVegeta(send, c.n)
	bar, err := newBarrier(ctx, send, c.n)
	if err != nil {
		return nil, err
	}
	defer bar.Close()
	tr := &http.Transport{TLSClientConfig: bench.InsecureTLS()}
	defer tr.CloseIdleConnections()
	fetch := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	out := map[string]*tally{}
	for _, d := range drivers {
		out[d] = &tally{}
	}
	seq := 0
	other := func(d bench.Driver, t *tally) {
		seq++
		key := fmt.Sprintf("other-%d-%d", time.Now().UnixNano(), seq)
		if _, err := d.Burst(ctx, key); err != nil {
			t.failed++
			t.lastErr = err
			return
		}
		if w, ok := d.(bench.Wirer); ok {
			t.wire(w.Wire())
		}
		offs, err := bench.FetchArrivalsFrom(ctx, fetch, target, key)
		if err != nil || len(offs) != c.n {
			t.failed++
			t.lastErr = fmt.Errorf("the target saw %d of %d requests (%v)", len(offs), c.n, err)
			return
		}
		t.samples = append(t.samples, sample{offsets: offs})
		if len(t.samples) <= cfg.dump {
			fmt.Fprintf(os.Stderr, "%s %s: arrivals (us) %v\n", c.label(), d.Name(), micro(offs))
		}
		time.Sleep(cfg.pause)
	}
	run := func(rounds int, record bool) error {
		vt, bt := out[vegetaN], out[barrier]
		if !record {
			vt, bt = &tally{}, &tally{}
		}
		i := 0
		between := func(p runner.Progress) {
			// The product's burst gets the pause the other drivers get
			// after theirs: the target tears its connections down (the
			// harness closes them once it has read the replies) before
			// the next driver's burst, not during it.
			time.Sleep(cfg.pause)
			i++
			if i%2 == 0 {
				other(veg, vt)
				other(bar, bt)
			} else {
				other(bar, bt)
				other(veg, vt)
			}
		}
		res, err := bench.RunProduct(ctx, productConfig(send, c.n, rounds, c.proto.wire), between)
		if err != nil {
			return err
		}
		if !record {
			return nil
		}
		keys, bursts := bench.ProductBursts(res.History)
		pt := out[product]
		pt.wire(productWire(c.proto))
		for j, key := range keys {
			b := bursts[j]
			if b.Protocol != string(c.proto.wire) {
				return fmt.Errorf("burst %d went out over %s, not %s: %s", b.ID, b.Protocol, c.proto.wire, b.Fallback)
			}
			if b.Loose {
				pt.loose++
			}
			offs, err := bench.FetchArrivalsFrom(ctx, fetch, target, key)
			if err != nil || len(offs) != b.Attempts {
				pt.failed++
				pt.lastErr = fmt.Errorf("the target saw %d of %d requests (%v)", len(offs), b.Attempts, err)
				continue
			}
			pt.samples = append(pt.samples, sample{offsets: offs, release: b.Spread})
			if len(pt.samples) <= cfg.dump {
				fmt.Fprintf(os.Stderr, "%s product: release %v, arrivals (us) %v\n", c.label(), b.Spread, micro(offs))
			}
		}
		return nil
	}
	if cfg.warmup > 0 {
		if err := run(cfg.warmup, false); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return out, run(bursts, true)
}

func micro(ns []int64) []int64 {
	out := make([]int64, len(ns))
	for i, v := range ns {
		out[i] = v / 1000
	}
	return out
}

// figures are one driver's in one combination.
type figures struct {
	bursts               int
	gapUS, spreadUS      float64
	releaseUS            float64
	share                []float64 // per window: bursts whose first two arrived less than W apart
	loose, failed        int
	lastErr              error
	p90GapUS, p90Release float64
}

func quantile(ds []float64, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	c := slices.Clone(ds)
	slices.Sort(c)
	return c[min(int(q*float64(len(c))), len(c)-1)]
}

func reduce(t *tally) figures {
	f := figures{bursts: len(t.samples), share: make([]float64, len(windows)), loose: t.loose, failed: t.failed, lastErr: t.lastErr}
	if len(t.samples) == 0 {
		return f
	}
	var gaps, spreads, releases []float64
	for _, s := range t.samples {
		gap := s.offsets[1]
		gaps = append(gaps, float64(gap)/1e3)
		spreads = append(spreads, float64(s.offsets[len(s.offsets)-1])/1e3)
		releases = append(releases, float64(s.release)/1e3)
		for i, w := range windows {
			if gap < int64(w) {
				f.share[i]++
			}
		}
	}
	for i := range f.share {
		f.share[i] /= float64(len(t.samples))
	}
	f.gapUS, f.spreadUS, f.releaseUS = quantile(gaps, 0.5), quantile(spreads, 0.5), quantile(releases, 0.5)
	f.p90GapUS, f.p90Release = quantile(gaps, 0.9), quantile(releases, 0.9)
	return f
}

func render(cfg config, loops int, order []combo, results map[combo]map[string]*tally, load0, load1 string, took time.Duration, truncated bool) string {
	var b strings.Builder
	machine := "the machine as it was (no busy loops)"
	if loops > 0 {
		machine = fmt.Sprintf("with %d busy loops (`sh -c 'while :; do :; done'`) running on the same cores", loops)
	}
	fmt.Fprintf(&b, "\n### Product path, %s\n\n", machine)
	fmt.Fprintf(&b, "Load average (1, 5, 15 min) %s before and %s after; %s.", load0, load1, took.Round(time.Second))
	if truncated {
		b.WriteString(" **The time limit cut the pass short: some combinations are missing.**")
	}
	b.WriteString("\n")
	for _, l := range cfg.links {
		var combos []combo
		for _, c := range order {
			if c.link == l.Name {
				combos = append(combos, c)
			}
		}
		if direct(l) {
			fmt.Fprintf(&b, "\n#### Across %s: no link, every driver sends to the target directly (as before links were measured)\n\n", l.Name)
		} else {
			fmt.Fprintf(&b, "\n#### Across %s: every driver sends through one emulated link (linkemu, in the drivers' process) in front of the target\n\n", l)
		}
		if len(combos) == 0 {
			b.WriteString("Not measured: the time limit came first.\n")
			continue
		}
		fmt.Fprintf(&b, "%d bursts per driver and combination (after %d warm-up bursts each).\n\n", cfg.burstsAcross(l), cfg.warmup)
		if direct(l) {
			renderWindows(&b, combos, results)
		} else {
			renderLink(&b, combos, results)
		}
		var fails []string
		for _, c := range combos {
			for _, d := range drivers {
				if f := reduce(results[c][d]); f.failed > 0 {
					fails = append(fails, fmt.Sprintf("%s, %s: %d bursts failed (last: %v)", c.label(), d, f.failed, f.lastErr))
				}
			}
		}
		if len(fails) > 0 {
			b.WriteString("\nFailed bursts (left out):\n")
			for _, f := range fails {
				fmt.Fprintf(&b, "- %s\n", f)
			}
		}
	}
	renderGoals(&b, order, results)
	return b.String()
}

// renderLink is the table of a link: per combination and driver, the
// arrival spread, the first-two gap and the share of races shown, and the
// product's release spread.
func renderLink(b *strings.Builder, combos []combo, results map[combo]map[string]*tally) {
	b.WriteString(bench.TableHead("target", "protocol", "N", "driver", "sent as", "bursts", "full spread (us, median)",
		"first-two gap (us, median)", "first two < 200 us", "client release spread (us, median)"))
	i200 := slices.Index(windows, 200*time.Microsecond)
	for _, c := range combos {
		for _, d := range drivers {
			t := results[c][d]
			f := reduce(t)
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %d | %.0f | %.1f | %.2f |", targetName(c.hold), c.proto.name, c.n, d, sentAs(t), f.bursts,
				f.spreadUS, f.gapUS, f.share[i200])
			if d == product {
				fmt.Fprintf(b, " %.1f (%d loose) |\n", f.releaseUS, f.loose)
			} else {
				b.WriteString(" – |\n")
			}
		}
	}
}

// renderWindows is the table of the direct pass: every window, and the
// gap's 90th percentile.
func renderWindows(b *strings.Builder, combos []combo, results map[combo]map[string]*tally) {
	cols := []string{"target", "protocol", "N", "driver", "sent as", "bursts", "first-two gap (us, median)", "p90", "full spread (us, median)"}
	for _, w := range windows {
		cols = append(cols, fmt.Sprintf("< %d us", w.Microseconds()))
	}
	b.WriteString(bench.TableHead(append(cols, "client release spread (us, median)")...))
	for _, c := range combos {
		for _, d := range drivers {
			t := results[c][d]
			f := reduce(t)
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %d |", targetName(c.hold), c.proto.name, c.n, d, sentAs(t), f.bursts)
			fmt.Fprintf(b, " %.1f | %.1f | %.0f |", f.gapUS, f.p90GapUS, f.spreadUS)
			for i := range windows {
				fmt.Fprintf(b, " %.2f |", f.share[i])
			}
			if d == product {
				fmt.Fprintf(b, " %.1f (p90 %.1f; %d loose) |\n", f.releaseUS, f.p90Release, f.loose)
			} else {
				b.WriteString(" – |\n")
			}
		}
	}
}

// renderGoals holds the pass against the goals for bursts across a
// network, ratios within the pass: on loopback (a direct link), HTTP/1.1's
// first-two gap no worse than vegeta's and its share within 200 us no
// lower, h2c's gap at most 0.5x vegeta's; across the WAN-like link, h2c's
// race (first two within 200 us) in at least 0.95 of bursts and its whole
// burst's spread at most 0.4x vegeta's, h2 over TLS within 1.5x of the
// same burst's spread on loopback and the race in at least 0.98, HTTP/1.1's
// race at least as often as vegeta's. A goal whose figures this pass did
// not measure is left out.
func renderGoals(b *strings.Builder, order []combo, results map[combo]map[string]*tally) {
	type row struct {
		goal, target string
		n            int
		got, against string
		met          bool
	}
	var rows []row
	i200 := slices.Index(windows, 200*time.Microsecond)
	find := func(link string, hold time.Duration, proto string, n int) (figures, figures, bool) {
		for _, c := range order {
			if c.link == link && c.hold == hold && c.proto.name == proto && c.n == n {
				return reduce(results[c][product]), reduce(results[c][vegetaN]), true
			}
		}
		return figures{}, figures{}, false
	}
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	for _, c := range order {
		p, v, _ := find(c.link, c.hold, c.proto.name, c.n)
		if p.bursts == 0 || v.bursts == 0 {
			continue
		}
		add := func(goal, got, against string, met bool) {
			rows = append(rows, row{fmt.Sprintf("%s, %s: %s", c.link, c.proto.name, goal), targetName(c.hold), c.n, got, against, met})
		}
		switch {
		case c.link == linkemu.Loopback.Name && c.proto.name == "http1":
			add("first-two gap no worse than vegeta's", fmt.Sprintf("%.1f us", p.gapUS),
				fmt.Sprintf("vegeta %.1f us (%.2fx)", v.gapUS, ratio(p.gapUS, v.gapUS)), p.gapUS <= v.gapUS)
			add("share within 200 us no lower than vegeta's", fmt.Sprintf("%.2f", p.share[i200]),
				fmt.Sprintf("vegeta %.2f", v.share[i200]), p.share[i200] >= v.share[i200])
		case c.link == linkemu.Loopback.Name && c.proto.name == "h2":
			r := ratio(p.gapUS, v.gapUS)
			add("first-two gap at most 0.5x vegeta's", fmt.Sprintf("%.1f us", p.gapUS),
				fmt.Sprintf("vegeta %.1f us (%.2fx)", v.gapUS, r), r <= 0.5)
		case c.link == linkemu.WAN.Name && c.proto.name == "h2":
			add("race (first two < 200 us) in at least 0.95 of bursts", fmt.Sprintf("%.2f", p.share[i200]),
				fmt.Sprintf("vegeta %.2f", v.share[i200]), p.share[i200] >= 0.95)
			r := ratio(p.spreadUS, v.spreadUS)
			add("whole-burst spread at most 0.4x vegeta's", fmt.Sprintf("%.0f us", p.spreadUS),
				fmt.Sprintf("vegeta %.0f us (%.2fx)", v.spreadUS, r), r <= 0.4)
		case c.link == linkemu.WAN.Name && c.proto.name == "h2tls":
			if lp, _, ok := find(linkemu.Loopback.Name, c.hold, c.proto.name, c.n); ok && lp.bursts > 0 {
				r := ratio(p.spreadUS, lp.spreadUS)
				add("whole-burst spread within 1.5x of its spread on loopback", fmt.Sprintf("%.0f us", p.spreadUS),
					fmt.Sprintf("loopback %.0f us (%.2fx)", lp.spreadUS, r), r <= 1.5)
			}
			add("race in at least 0.98 of bursts", fmt.Sprintf("%.2f", p.share[i200]),
				fmt.Sprintf("vegeta %.2f", v.share[i200]), p.share[i200] >= 0.98)
		case c.link == linkemu.WAN.Name && c.proto.name == "http1":
			add("race at least as often as vegeta's", fmt.Sprintf("%.2f", p.share[i200]),
				fmt.Sprintf("vegeta %.2f", v.share[i200]), p.share[i200] >= v.share[i200])
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n#### Goals, within this pass (idemcheck's product path against vegeta in the same combination, or against its own burst on loopback)\n\n")
	b.WriteString(bench.TableHead("goal", "target", "N", "idemcheck", "against", "met"))
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s |\n", r.goal, r.target, r.n, r.got, r.against, verdict(r.met))
	}
}

// sentAs is what a driver's requests went out as in one combination.
func sentAs(t *tally) string {
	if len(t.wires) == 0 {
		return "–"
	}
	return strings.Join(t.wires, " / ")
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
