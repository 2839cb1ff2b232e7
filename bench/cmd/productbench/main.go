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
// It runs every combination of target (one holding its reply -hold after
// its check, one answering at once), protocol (HTTP/1.1, h2c) and burst
// size, first on the machine as it is, then with -busy busy loops (`sh -c
// 'while :; do :; done'`, started and ended by this command) competing for
// the cores. With -write it puts the tables into BENCHMARKS.md between the
// product markers.
//
// Every loop is bounded by -bursts and -max, and traffic goes to the
// loopback targets only.
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
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// windows are the race windows whose share of bursts the tables show: a
// burst opens a window W when its first two requests reached the target
// less than W apart.
var windows = []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond}

func main() {
	var target bench.TargetFlags
	target.Define(200*time.Microsecond, "how long the holding target's handlers hold their replies after their check")
	bursts := flag.Int("bursts", 100, "bursts per driver in each combination")
	sizes := flag.String("n", "8,32", "burst sizes")
	protos := flag.String("protocols", "http1,h2", "the product's burst protocols (--protocol)")
	targetsFlag := flag.String("targets", "hold,now", "race targets: hold (replies held -hold after the check), now (replies at once)")
	busy := flag.Int("busy", 2, "busy loops for the loaded pass (0: no loaded pass)")
	quiet := flag.Bool("quiet", true, "run the pass without busy loops")
	warmup := flag.Int("warmup", 5, "bursts per driver sent before each combination, not counted")
	pause := flag.Duration("pause", 2*time.Millisecond, "pause after every burst of each driver (the product's included), before the next driver's")
	maxTime := flag.Duration("max", 8*time.Minute, "stop measuring after this long, whatever -bursts says")
	write := flag.String("write", "", "Markdown file whose product section is rewritten")
	dump := flag.Int("dump", 0, "print the arrival offsets of this many bursts per driver and combination")
	flag.Parse()
	target.ServeIfAsked("productbench")

	cfg := config{bursts: *bursts, warmup: *warmup, pause: *pause, max: *maxTime, hold: target.Hold, dump: *dump}
	var err error
	if cfg.sizes, err = bench.ParseSizes(*sizes); err != nil {
		fail(err)
	}
	for f := range strings.SplitSeq(*protos, ",") {
		p, err := wire.ParseProtocol(strings.TrimSpace(f))
		if err != nil || p == wire.ProtocolAuto {
			fail(fmt.Errorf("bad protocol %q: http1 or h2", f))
		}
		cfg.protocols = append(cfg.protocols, p)
	}
	for f := range strings.SplitSeq(*targetsFlag, ",") {
		switch f = strings.TrimSpace(f); f {
		case "hold":
			cfg.targets = append(cfg.targets, target.Hold)
		case "now":
			cfg.targets = append(cfg.targets, 0)
		default:
			fail(fmt.Errorf("unknown target %q: hold or now", f))
		}
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "productbench:", err)
	os.Exit(1)
}

type config struct {
	bursts, warmup, dump int
	sizes                []int
	protocols            []wire.Protocol
	targets              []time.Duration
	pause, max, hold     time.Duration
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
}

const (
	product = "idemcheck certify (product path)"
	vegetaN = "vegeta (new Attacker per burst)"
	barrier = "goroutines on a barrier (net/http, warm)"
)

var drivers = []string{product, vegetaN, barrier}

type combo struct {
	hold  time.Duration
	proto wire.Protocol
	n     int
}

// pass measures every combination once, with loops busy loops running.
func pass(cfg config, loops int, deadline time.Time) (string, error) {
	load0 := bench.LoadAverage()
	began := time.Now()
	addrs := map[time.Duration]string{}
	for _, h := range cfg.targets {
		addr, stop, err := bench.StartRaceTargetProcess(h)
		if err != nil {
			return "", err
		}
		defer stop()
		addrs[h] = addr
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
	for _, h := range cfg.targets {
		for _, n := range cfg.sizes {
			for _, p := range cfg.protocols {
				if time.Now().After(deadline) {
					truncated = true
					break
				}
				c := combo{h, p, n}
				order = append(order, c)
				t, err := measure(ctx, cfg, addrs[h], c)
				if err != nil {
					return "", fmt.Errorf("%s: %w", c.label(), err)
				}
				results[c] = t
				fmt.Fprintf(os.Stderr, "productbench: %s, %d busy loops: done after %v\n", c.label(), loops, time.Since(began).Round(time.Second))
			}
		}
	}
	return render(cfg, loops, order, results, load0, bench.LoadAverage(), time.Since(began), truncated), nil
}

func (c combo) label() string {
	t := "answers at once"
	if c.hold > 0 {
		t = fmt.Sprintf("holds %v", c.hold)
	}
	return fmt.Sprintf("target %s, %s, N=%d", t, c.proto, c.n)
}

// measure runs one combination: a certification of cfg.bursts rounds,
// with one vegeta and one barrier burst sent after each of its bursts.
func measure(ctx context.Context, cfg config, addr string, c combo) (map[string]*tally, error) {
	veg := bench.NewVegeta(addr, c.n)
	bar, err := bench.NewBarrier(ctx, addr, c.n)
	if err != nil {
		return nil, err
	}
	defer bar.Close()
	fetch := &http.Client{Timeout: 10 * time.Second}
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
		offs, err := bench.FetchArrivals(ctx, fetch, addr, key)
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
		between := func(p scenarios.Progress) {
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
		res, err := bench.RunProduct(ctx, bench.ProductConfig(addr, c.n, rounds, c.proto), between)
		if err != nil {
			return err
		}
		if !record {
			return nil
		}
		keys, bursts := bench.ProductBursts(res.History)
		pt := out[product]
		for j, key := range keys {
			b := bursts[j]
			if b.Protocol != string(c.proto) {
				return fmt.Errorf("burst %d went out over %s, not %s: %s", b.ID, b.Protocol, c.proto, b.Fallback)
			}
			if b.Loose {
				pt.loose++
			}
			offs, err := bench.FetchArrivals(ctx, fetch, addr, key)
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
	return out, run(cfg.bursts, true)
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
	fmt.Fprintf(&b, "Load average (1, 5, 15 min) %s before and %s after; %d bursts per driver and combination (after %d warm-up bursts each), %s.",
		load0, load1, cfg.bursts, cfg.warmup, took.Round(time.Second))
	if truncated {
		b.WriteString(" **The time limit cut the pass short: some combinations are missing.**")
	}
	b.WriteString("\n\n")
	cols := []string{"target", "protocol", "N", "driver", "bursts", "first-two gap (us, median)", "p90", "full spread (us, median)"}
	for _, w := range windows {
		cols = append(cols, fmt.Sprintf("< %d us", w.Microseconds()))
	}
	b.WriteString(bench.TableHead(append(cols, "client release spread (us, median)")...))
	var fails []string
	for _, c := range order {
		for _, d := range drivers {
			f := reduce(results[c][d])
			tgt := "answers at once"
			if c.hold > 0 {
				tgt = fmt.Sprintf("holds %v", c.hold)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %d |", tgt, c.proto, c.n, d, f.bursts)
			fmt.Fprintf(&b, " %.1f | %.1f | %.0f |", f.gapUS, f.p90GapUS, f.spreadUS)
			for i := range windows {
				fmt.Fprintf(&b, " %.2f |", f.share[i])
			}
			if d == product {
				fmt.Fprintf(&b, " %.1f (p90 %.1f; %d loose) |\n", f.releaseUS, f.p90Release, f.loose)
			} else {
				b.WriteString(" – |\n")
			}
			if f.failed > 0 {
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

	b.WriteString("\nTargets, within this pass (idemcheck's product path against vegeta in the same combination):\n\n")
	b.WriteString("| target | protocol | N | first-two gap, idemcheck / vegeta | bar | share < 50 us | bar | windows where idemcheck's share is below vegeta's |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range order {
		p, v := reduce(results[c][product]), reduce(results[c][vegetaN])
		gapBar, shareBar := 0.5, 0.7
		if c.proto == wire.ProtocolH2 {
			gapBar, shareBar = 0.3, 0.9
		}
		ratio := 0.0
		if v.gapUS > 0 {
			ratio = p.gapUS / v.gapUS
		}
		var worse []string
		for i, w := range windows {
			if p.share[i] < v.share[i] {
				worse = append(worse, fmt.Sprintf("%d us (%.2f < %.2f)", w.Microseconds(), p.share[i], v.share[i]))
			}
		}
		worseText := "none"
		if len(worse) > 0 {
			worseText = strings.Join(worse, ", ")
		}
		tgt := "answers at once"
		if c.hold > 0 {
			tgt = fmt.Sprintf("holds %v", c.hold)
		}
		s50 := p.share[slices.Index(windows, 50*time.Microsecond)]
		fmt.Fprintf(&b, "| %s | %s | %d | %.2fx | %s | %.2f | %s | %s |\n", tgt, c.proto, c.n,
			ratio, verdict(ratio <= gapBar, fmt.Sprintf("≤ %.1fx", gapBar)), s50, verdict(s50 >= shareBar, fmt.Sprintf("≥ %.1f", shareBar)), worseText)
	}
	return b.String()
}

func verdict(ok bool, bar string) string {
	if ok {
		return bar + " met"
	}
	return bar + " **missed**"
}
