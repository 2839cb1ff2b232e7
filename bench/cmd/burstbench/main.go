// Command burstbench measures same-key bursts side by side: idemcheck's
// burst engines (HTTP/1.1 last-byte synchronisation, h2c single-packet
// release), vegeta, and goroutines on a barrier, all against the loopback
// race target of package bench running in a process of its own. It prints
// the figures and, with -write, puts them into BENCHMARKS.md between the
// figure markers, together with the Go benchmark results given by -gobench.
//
// Every request loop is bounded by -bursts and by -max, and traffic goes to
// the loopback target only.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// windows are the check-then-insert visibility windows the figures show.
var windows = []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond, 200 * time.Microsecond}

func main() {
	var target bench.TargetFlags
	target.Define(windows[len(windows)-1], "how long the race target's handlers hold their replies after their check (at least the largest window)")
	bursts := flag.Int("bursts", 200, "bursts per driver, size and run")
	runs := flag.Int("runs", 3, "runs; each figure is reported as the median of the runs and their range")
	sizes := flag.String("n", "8,32", "burst sizes")
	warmup := flag.Int("warmup", 20, "bursts per driver and size sent before measuring, not counted")
	pause := flag.Duration("pause", 2*time.Millisecond, "pause between bursts, so that one burst's closing connections do not disturb the next")
	maxTime := flag.Duration("max", 4*time.Minute, "stop measuring after this long, whatever -bursts says")
	write := flag.String("write", "", "Markdown file whose figures section is rewritten")
	only := flag.String("drivers", "h1,h2,h1-2,h2-2,vegeta,barrier", "drivers to run: h1 and h2 (idemcheck's engines, default lanes: one), h1-2 and h2-2 (the same with two release lanes), vegeta, barrier")
	dump := flag.Int("dump", 0, "print the arrival offsets of this many bursts per driver and size, for a closer look")
	gotest := flag.String("gotest", "", "after the bursts, run the Go benchmarks of this package pattern (go test -bench, -runs repetitions) and include them")
	gobench := flag.String("gobench", "", "include this saved output of `go test -bench` instead of running -gotest")
	flag.Parse()
	target.ServeIfAsked("burstbench")

	ns, err := bench.ParseSizes(*sizes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "burstbench:", err)
		os.Exit(2)
	}
	cfg := config{bursts: *bursts, runs: *runs, sizes: ns, warmup: *warmup, pause: *pause, max: *maxTime, dump: *dump, hold: target.Hold}
	for f := range strings.SplitSeq(*only, ",") {
		switch f = strings.TrimSpace(f); f {
		case "h1", "h2", "h1-2", "h2-2", "vegeta", "barrier":
			cfg.drivers = append(cfg.drivers, f)
		default:
			fmt.Fprintf(os.Stderr, "burstbench: unknown driver %q (known: h1, h2, h1-2, h2-2, vegeta, barrier)\n", f)
			os.Exit(2)
		}
	}
	md, err := measure(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "burstbench:", err)
		os.Exit(1)
	}
	switch {
	case *gobench != "":
		out, err := os.ReadFile(*gobench)
		if err != nil {
			fmt.Fprintln(os.Stderr, "burstbench:", err)
			os.Exit(1)
		}
		md += goBenchSection(string(out), "saved output of go test -bench")
	case *gotest != "":
		args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(*runs), "-timeout", "20m", *gotest}
		out, err := runGo(args)
		if err != nil {
			fmt.Fprintln(os.Stderr, "burstbench: go", strings.Join(args, " ")+":", err)
			os.Exit(1)
		}
		md += goBenchSection(out, fmt.Sprintf("`go test -run '^$' -bench . -benchmem -count %d %s`, run after the bursts; load average %s when it ended",
			*runs, *gotest, bench.LoadAverage()))
	}
	fmt.Print(md)
	if *write != "" {
		if err := bench.RewriteSection(*write, "figures", md); err != nil {
			fmt.Fprintln(os.Stderr, "burstbench:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "burstbench: figures written to %s\n", *write)
	}
}

type config struct {
	bursts, runs, warmup, dump int
	sizes                      []int
	drivers                    []string
	pause, max, hold           time.Duration
}

// sample is one burst as the race target saw it.
type sample struct {
	offsets []int64       // arrival offsets from the first, sorted
	release time.Duration // the client's release spread, when measured
}

func (s sample) gap() time.Duration    { return time.Duration(s.offsets[1]) }
func (s sample) spread() time.Duration { return time.Duration(s.offsets[len(s.offsets)-1]) }

// cell is one driver at one burst size.
type cell struct {
	driver string
	n      int
}

// tally is what one run measured for one cell.
type tally struct {
	samples []sample
	failed  int
	lastErr error
}

func measure(cfg config) (string, error) {
	load0 := bench.LoadAverage()
	began := time.Now()
	addr, stop, err := bench.StartRaceTargetProcess(cfg.hold)
	if err != nil {
		return "", err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.max+time.Minute)
	defer cancel()

	all, err := newDrivers(ctx, addr, cfg)
	defer func() {
		for i := len(all) - 1; i >= 0; i-- {
			for _, d := range all[i].drivers {
				d.Close()
			}
		}
	}()
	if err != nil {
		return "", err
	}
	bu := &burster{ctx: ctx, addr: addr, pause: cfg.pause, fetch: &http.Client{Timeout: 10 * time.Second}}
	for _, s := range all {
		for _, d := range s.drivers {
			for range cfg.warmup {
				if _, err := bu.one(d, s.n); err != nil {
					return "", fmt.Errorf("warm-up of %s, N=%d: %w", d.Name(), s.n, err)
				}
			}
		}
	}
	runs, truncated, err := bu.runs(cfg, all, began)
	if err != nil {
		return "", err
	}

	var order []cell
	for _, s := range all {
		for _, d := range s.drivers {
			order = append(order, cell{d.Name(), s.n})
		}
	}
	var cold []string
	for _, s := range all {
		for _, d := range s.drivers {
			if cd, ok := d.(bench.ColdDialer); ok {
				cold = append(cold, fmt.Sprintf("N=%d: %d", s.n, cd.ColdDials()))
			}
		}
	}
	return render(cfg, runs, order, renderFacts{
		load0: load0, load1: bench.LoadAverage(), took: time.Since(began), truncated: truncated, coldDials: cold,
	}), nil
}

// sized are the drivers of one burst size.
type sized struct {
	n       int
	drivers []bench.Driver
}

// newDrivers makes the drivers cfg names for each burst size. On an error
// it returns those of the sizes it completed, for the caller to close.
func newDrivers(ctx context.Context, addr string, cfg config) ([]sized, error) {
	var all []sized
	for _, n := range cfg.sizes {
		var ds []bench.Driver
		for _, name := range cfg.drivers {
			switch name {
			case "h1":
				ds = append(ds, bench.NewWire(addr, n, wire.ProtocolHTTP1, 0))
			case "h2":
				ds = append(ds, bench.NewWire(addr, n, wire.ProtocolH2, 0))
			case "h1-2":
				ds = append(ds, bench.NewWire(addr, n, wire.ProtocolHTTP1, 2))
			case "h2-2":
				ds = append(ds, bench.NewWire(addr, n, wire.ProtocolH2, 2))
			case "vegeta":
				ds = append(ds, bench.NewVegeta(addr, n))
			case "barrier":
				barrier, err := bench.NewBarrier(ctx, addr, n)
				if err != nil {
					return all, err
				}
				ds = append(ds, barrier)
			}
		}
		all = append(all, sized{n, ds})
	}
	return all, nil
}

// burster sends bursts to the race target and reads back their arrivals.
type burster struct {
	ctx   context.Context
	addr  string
	pause time.Duration
	fetch *http.Client
	seq   int
}

// one sends one burst of n with d, under a fresh key, and returns it as
// the target saw it.
func (bu *burster) one(d bench.Driver, n int) (sample, error) {
	bu.seq++
	key := fmt.Sprintf("burst-%d", bu.seq)
	release, err := d.Burst(bu.ctx, key)
	if err != nil {
		return sample{}, err
	}
	offs, err := bench.FetchArrivals(bu.ctx, bu.fetch, bu.addr, key)
	if err != nil {
		return sample{}, err
	}
	if len(offs) != n {
		return sample{}, fmt.Errorf("the target saw %d of %d requests", len(offs), n)
	}
	time.Sleep(bu.pause)
	return sample{offsets: offs, release: release}, nil
}

// runs sends cfg.runs runs of cfg.bursts bursts with every driver at every
// size, until cfg.max after began (then it reports truncated).
func (bu *burster) runs(cfg config, all []sized, began time.Time) (runs []map[cell]*tally, truncated bool, err error) {
	runs = make([]map[cell]*tally, cfg.runs)
	deadline := began.Add(cfg.max)
	for r := range runs {
		runs[r] = map[cell]*tally{}
		for i := 0; i < cfg.bursts && !truncated; i++ {
			for _, s := range all {
				// Rotate the order, so that no driver always follows the same one.
				for k := range s.drivers {
					d := s.drivers[(i+k)%len(s.drivers)]
					c := cell{d.Name(), s.n}
					t := runs[r][c]
					if t == nil {
						t = &tally{}
						runs[r][c] = t
					}
					smp, err := bu.one(d, s.n)
					if err != nil {
						if bu.ctx.Err() != nil {
							return nil, false, bu.ctx.Err()
						}
						t.failed++
						t.lastErr = err
						continue
					}
					t.samples = append(t.samples, smp)
					if len(t.samples) <= cfg.dump {
						fmt.Fprintf(os.Stderr, "%s N=%d: release %v, arrivals (us) %v\n", d.Name(), s.n, smp.release, microseconds(smp.offsets))
					}
				}
			}
			if time.Now().After(deadline) {
				truncated = true
			}
		}
		fmt.Fprintf(os.Stderr, "burstbench: run %d of %d done after %v\n", r+1, cfg.runs, time.Since(began).Round(time.Second))
	}
	return runs, truncated, nil
}

type renderFacts struct {
	load0, load1 string
	took         time.Duration
	truncated    bool
	coldDials    []string
}

func medianDur(ds []time.Duration) time.Duration {
	c := slices.Clone(ds)
	slices.Sort(c)
	return c[len(c)/2]
}

// figures reduces one run of one cell to its figures.
type figures struct {
	gapUS, spreadUS, releaseUS float64
	share                      []float64 // share of bursts with a duplicate, per window
	dups                       []float64 // mean duplicates per burst, per window
	bursts                     int
}

func reduce(t *tally) (figures, bool) {
	if t == nil || len(t.samples) == 0 {
		return figures{}, false
	}
	var gaps, spreads, releases []time.Duration
	f := figures{share: make([]float64, len(windows)), dups: make([]float64, len(windows)), bursts: len(t.samples)}
	for _, s := range t.samples {
		gaps = append(gaps, s.gap())
		spreads = append(spreads, s.spread())
		releases = append(releases, s.release)
		for i, w := range windows {
			d := bench.Duplicates(s.offsets, w)
			if d > 0 {
				f.share[i]++
			}
			f.dups[i] += float64(d)
		}
	}
	for i := range windows {
		f.share[i] /= float64(len(t.samples))
		f.dups[i] /= float64(len(t.samples))
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	f.gapUS, f.spreadUS, f.releaseUS = us(medianDur(gaps)), us(medianDur(spreads)), us(medianDur(releases))
	return f, true
}

const (
	nameH1     = "idemcheck HTTP/1.1 (last byte)"
	nameH2     = "idemcheck h2c (single packet)"
	nameVegeta = "vegeta (new Attacker per burst)"
)

func render(cfg config, runs []map[cell]*tally, order []cell, facts renderFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s with %s %s/%s, %d CPUs; load average (1, 5, 15 min) %s before and %s after; "+
		"%d runs of %d bursts per driver and size (after %d warm-up bursts each), %d ms pause between bursts, replies held %v after the check, %s in all.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		facts.load0, facts.load1, cfg.runs, cfg.bursts, cfg.warmup, cfg.pause.Milliseconds(), cfg.hold, facts.took.Round(time.Second))
	if cfg.hold < windows[len(windows)-1] {
		fmt.Fprintf(&b, " **The hold (%v) is shorter than the largest window: the shares at windows above it are those of a target that replies before its insert is visible.**", cfg.hold)
	}
	if facts.truncated {
		b.WriteString(" **The time limit cut the runs short: see the burst counts.**")
	}
	b.WriteString("\nEach cell is the median of the runs' values, with their range in brackets.\n\n")

	b.WriteString("### Same-key bursts on the race target\n\n")
	cols := []string{"driver", "N", "bursts", "first-two gap (us)", "full burst spread (us)"}
	for _, w := range windows {
		cols = append(cols, fmt.Sprintf("duplicate share W=%d us", w.Microseconds()))
	}
	b.WriteString(bench.TableHead(append(cols, "client release spread (us)")...))

	per := renderBursts(&b, runs, order)
	if len(facts.coldDials) > 0 {
		fmt.Fprintf(&b, "\nConnections the barrier driver had to open during its bursts (0: every request went on a pre-opened one): %s.\n",
			strings.Join(facts.coldDials, ", "))
	}

	// Duplicates per burst say how much a race is exercised, not only whether.
	b.WriteString("\nMean duplicate inserts per burst (of N-1 possible):\n\n")
	cols = []string{"driver", "N"}
	for _, w := range windows {
		cols = append(cols, fmt.Sprintf("W=%d us", w.Microseconds()))
	}
	b.WriteString(bench.TableHead(cols...))
	for _, c := range order {
		fmt.Fprintf(&b, "| %s | %d |", c.driver, c.n)
		for i := range windows {
			var s bench.Stat
			for _, f := range per[c] {
				s = append(s, f.dups[i])
			}
			fmt.Fprintf(&b, " %s |", s.Format("%.1f"))
		}
		b.WriteString("\n")
	}

	b.WriteString("\n### Targets\n\n")
	b.WriteString("Ratios are taken within each run (engine over vegeta, same run), then the median and range over the runs.\n\n")
	b.WriteString("| target | engine | N | measured | verdict |\n|---|---|---|---|---|\n")
	for _, n := range cfg.sizes {
		for _, eng := range []string{nameH2, nameH1} {
			renderTargets(&b, runs, per, eng, n)
		}
	}
	return b.String()
}

// renderBursts writes a row of figures for each cell, then the bursts that
// failed, and returns each cell's figures, a run's each.
func renderBursts(b *strings.Builder, runs []map[cell]*tally, order []cell) map[cell][]figures {
	per := map[cell][]figures{}
	var failures []string
	for _, c := range order {
		failed := 0
		var lastErr error
		for _, run := range runs {
			if f, ok := reduce(run[c]); ok {
				per[c] = append(per[c], f)
			}
			if t := run[c]; t != nil {
				failed += t.failed
				if t.lastErr != nil {
					lastErr = t.lastErr
				}
			}
		}
		if failed > 0 {
			failures = append(failures, fmt.Sprintf("%s, N=%d: %d bursts failed (last: %v)", c.driver, c.n, failed, lastErr))
		}
		fs := per[c]
		pick := func(get func(figures) float64) bench.Stat {
			var s bench.Stat
			for _, f := range fs {
				s = append(s, get(f))
			}
			return s
		}
		bursts := pick(func(f figures) float64 { return float64(f.bursts) })
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s |", c.driver, c.n, bursts.Format("%.0f"),
			pick(func(f figures) float64 { return f.gapUS }).Format("%.1f"),
			pick(func(f figures) float64 { return f.spreadUS }).Format("%.0f"))
		for i := range windows {
			fmt.Fprintf(b, " %s |", pick(func(f figures) float64 { return f.share[i] }).Format("%.2f"))
		}
		if strings.HasPrefix(c.driver, "idemcheck") {
			fmt.Fprintf(b, " %s |\n", pick(func(f figures) float64 { return f.releaseUS }).Format("%.1f"))
		} else {
			b.WriteString(" not measured |\n")
		}
	}
	b.WriteString("\nFirst-two gap: the median time between the first and the second arrival of a burst's key; " +
		"full burst spread: the median time between the first and the last. A burst produces a duplicate at window W when " +
		"its second request arrived less than W after the first (the first's insert not yet visible). " +
		"Client release spread: the engine's own measure, as recorded in a history's bursts.\n")
	if len(failures) > 0 {
		b.WriteString("\nFailed bursts (left out of the figures):\n")
		for _, f := range failures {
			fmt.Fprintf(b, "- %s\n", f)
		}
	}
	return per
}

// renderTargets writes the rows of the targets for engine eng at size n,
// each with whether the runs met it.
func renderTargets(b *strings.Builder, runs []map[cell]*tally, per map[cell][]figures, eng string, n int) {
	ratio := func(get func(figures) float64) bench.Stat {
		var s bench.Stat
		for _, run := range runs {
			e, ok1 := reduce(run[cell{eng, n}])
			v, ok2 := reduce(run[cell{nameVegeta, n}])
			if ok1 && ok2 && get(v) > 0 {
				s = append(s, get(e)/get(v))
			}
		}
		return s
	}
	share := func(w time.Duration) bench.Stat {
		i := slices.Index(windows, w)
		var s bench.Stat
		for _, f := range per[cell{eng, n}] {
			s = append(s, f.share[i])
		}
		return s
	}
	row := func(target string, s bench.Stat, limit float64, atMost bool) {
		verdict := "n/a"
		if len(s) > 0 {
			m := s.Median()
			switch {
			case atMost && m <= limit, !atMost && m >= limit:
				verdict = "met"
			case atMost:
				verdict = fmt.Sprintf("missed by %.2f (%.0f%% over the limit)", m-limit, 100*(m/limit-1))
			default:
				verdict = fmt.Sprintf("missed by %.2f", limit-m)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s |\n", target, eng, n, s.Format("%.2f"), verdict)
	}
	row("first-two gap ≤ 0.3x vegeta's", ratio(func(f figures) float64 { return f.gapUS }), 0.3, true)
	row("full burst spread ≤ 0.5x vegeta's", ratio(func(f figures) float64 { return f.spreadUS }), 0.5, true)
	row("duplicate share at W=20 us ≥ 0.5", share(20*time.Microsecond), 0.5, false)
	row("duplicate share at W=50 us ≥ 0.9", share(50*time.Microsecond), 0.9, false)
}

// runGo runs the go command with args, its output shown as it comes and
// returned.
func runGo(args []string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.Command(goCmd, args...)
	cmd.Stdout = io.MultiWriter(&out, os.Stderr)
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	return out.String(), err
}

// goBenchSection turns `go test -bench` output into a table: per benchmark
// and unit, the median over the -count repetitions and their range.
func goBenchSection(out, how string) string {
	type metric struct {
		unit string
		vals bench.Stat
	}
	var names []string
	metrics := map[string][]*metric{}
	var header []string
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		for _, p := range []string{"goos:", "goarch:", "cpu:", "pkg:"} {
			if strings.HasPrefix(line, p) && !slices.Contains(header, line) {
				header = append(header, line)
			}
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i]
		}
		if _, ok := metrics[name]; !ok {
			names = append(names, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			var m *metric
			for _, x := range metrics[name] {
				if x.unit == unit {
					m = x
				}
			}
			if m == nil {
				m = &metric{unit: unit}
				metrics[name] = append(metrics[name], m)
			}
			m.vals = append(m.vals, v)
		}
	}
	var b strings.Builder
	b.WriteString("\n### Go benchmarks of the hot paths\n\n")
	if len(names) == 0 {
		b.WriteString("No benchmark results were given.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "From %s (%s); median of the repetitions, range in brackets.\n\n", how, strings.Join(header, ", "))
	units := []string{"ns/op", "ns/attempt", "MB/s", "B/op", "allocs/op"}
	b.WriteString(bench.TableHead("benchmark", "time/op", "ns/attempt", "MB/s", "bytes/op", "allocs/op"))
	for _, name := range names {
		fmt.Fprintf(&b, "| %s |", name)
		for _, u := range units {
			cellText := "–"
			for _, m := range metrics[name] {
				if m.unit == u {
					cellText = scaled(m.vals, u)
				}
			}
			fmt.Fprintf(&b, " %s |", cellText)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func numberFormat(v float64) string {
	if v >= 100 {
		return "%.0f"
	}
	return "%.1f"
}

// scaled formats a benchmark metric, times and sizes in a unit that keeps
// the figures short (12.0 s rather than 12035550563 ns/op).
func scaled(vals bench.Stat, unit string) string {
	type step struct {
		div  float64
		name string
	}
	var steps []step
	switch unit {
	case "ns/op":
		steps = []step{{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}}
	case "B/op":
		steps = []step{{1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}, {1, "B"}}
	default:
		return vals.Format(numberFormat(vals.Median()))
	}
	m := vals.Median()
	for _, st := range steps {
		if m >= st.div || st.div == 1 {
			var v bench.Stat
			for _, x := range vals {
				v = append(v, x/st.div)
			}
			return v.Format(numberFormat(m/st.div)) + " " + st.name
		}
	}
	return ""
}

func microseconds(ns []int64) []int64 {
	out := make([]int64, len(ns))
	for i, v := range ns {
		out[i] = v / 1000
	}
	return out
}
