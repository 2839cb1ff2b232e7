// Command soakbench measures idemcheck's soak and certification beside raw
// vegeta, for BENCHMARKS.md:
//
//   - soak throughput against the reference orders API on PostgreSQL,
//     idemcheck's soak (every intent's effects counted, a share of replies
//     cut and retried) vs raw vegeta at the same worker count;
//   - the peak memory of a soak of -attempts attempts against a loopback
//     target that answers at once, its history streamed to a file;
//   - the wall time of a full default certification of the reference,
//     fault checks included, with the time spent waiting out leases
//     reported apart.
//
// Every figure is measured -runs times; the median and the range are
// printed. Traffic stays on loopback and every loop is bounded.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

func main() {
	runs := flag.Int("runs", 3, "repetitions of every measurement")
	duration := flag.Duration("duration", 10*time.Second, "length of each throughput run")
	workers := flag.Int("workers", 64, "concurrent requests, for both soak and raw vegeta")
	attempts := flag.Int("attempts", 1_000_000, "attempts in the memory run")
	what := flag.String("only", "throughput,memory,certify", "which measurements")
	flag.BoolVar(&noCount, "no-count", false, "throughput: leave effect counting out of the soak, to see its cost")
	memChild := flag.Bool("memory-child", false, "internal: run one memory soak in this process and print its peak RSS")
	write := flag.String("write", "", "Markdown file whose soak section is rewritten with the figures")
	flag.Parse()
	ctx := context.Background()
	if *memChild {
		if err := memoryChild(ctx, *attempts, *workers); err != nil {
			fmt.Fprintln(os.Stderr, "soakbench:", err)
			os.Exit(1)
		}
		return
	}
	began, loadBefore := time.Now(), bench.LoadAverage()
	fmt.Printf("soakbench: %d runs, load average %s\n", *runs, loadBefore)
	var doc figures
	if strings.Contains(*what, "throughput") {
		must(throughput(ctx, &doc, *runs, *duration, *workers))
	}
	if strings.Contains(*what, "memory") {
		must(memory(&doc, *runs, *attempts, *workers))
	}
	if strings.Contains(*what, "certify") {
		must(certification(ctx, &doc, *runs))
	}
	loadAfter := bench.LoadAverage()
	fmt.Printf("soakbench: done, load average %s\n", loadAfter)
	if *write != "" {
		head := fmt.Sprintf("Measured %s UTC with %s %s/%s, %d CPUs; load average (1, 5, 15 min) %s before and %s after; %d runs of each measurement, %s in all.\n"+
			"Each figure is the median of the runs, with their range in brackets.",
			began.UTC().Format("2006-01-02 15:04"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			loadBefore, loadAfter, *runs, time.Since(began).Round(time.Second))
		must(bench.RewriteSection(*write, "soak", doc.markdown(head)))
		fmt.Printf("soakbench: figures written to %s\n", *write)
	}
}

// figures collects what the measurements found, for the soak section of
// BENCHMARKS.md: one row per figure against its target, and every run.
type figures struct {
	rows []string
	runs []string
}

func (f *figures) row(figure, measured, target string, met bool, by string) {
	verdict := "met"
	if !met {
		verdict = "**missed** by " + by
	}
	f.rows = append(f.rows, fmt.Sprintf("| %s | %s | %s | %s |", figure, measured, target, verdict))
}

func (f *figures) run(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	fmt.Println("  " + line)
	f.runs = append(f.runs, "- "+line)
}

func (f *figures) markdown(head string) string {
	var b strings.Builder
	b.WriteString(head + "\n\n| figure | measured | target | verdict |\n|---|---|---|---|\n")
	for _, r := range f.rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\nEvery run:\n\n")
	for _, r := range f.runs {
		b.WriteString(r + "\n")
	}
	return b.String()
}

var noCount bool

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "soakbench:", err)
		os.Exit(1)
	}
}

// ordersTarget builds and starts the reference orders API as a process on a
// fresh database of pg.
func ordersTarget(ctx context.Context, pg *targets.LocalPostgres, bins *zoo.Bins, name string) (*targets.ProcessTarget, error) {
	dsn, err := pg.CreateDatabase(ctx, name)
	if err != nil {
		return nil, err
	}
	return targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command: filepath.Join(bins.Dir, "orders") + " -lease " + zoo.Lease.String(), DSN: dsn,
	})
}

func setup(ctx context.Context) (*targets.LocalPostgres, *zoo.Bins, func(), error) {
	bins, err := zoo.BuildTemp(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		_ = bins.Remove()
		return nil, nil, nil, err
	}
	return pg, bins, func() { _ = pg.Close(); _ = bins.Remove() }, nil
}

const body = `{"customerId":"{{intent}}","totalCents":4000}`

// throughput: as fast as the target goes, idemcheck's soak vs raw vegeta.
func throughput(ctx context.Context, doc *figures, runs int, d time.Duration, workers int) error {
	pg, bins, done, err := setup(ctx)
	if err != nil {
		return err
	}
	defer done()
	// A rate above what the target can take: both are then limited by the
	// target and the worker count, which is the comparison asked for.
	const rate = 20000
	var soak, raw, ratios []float64
	for i := range runs {
		pt, err := ordersTarget(ctx, pg, bins, fmt.Sprintf("tp_%d", i))
		if err != nil {
			return err
		}
		cfg := zoo.EndpointConfig("orders", pt)
		sk := &runner.Soak{
			Endpoint: cfg.Endpoint, Policy: cfg.Policy, Rate: rate, Duration: d, Seed: int64(i + 1), Workers: workers,
			Faults:  []runner.SoakFault{{Fault: faults.CutReply, Share: 0.01}},
			Effects: &runner.Effects{Pool: pt.DB.Pool, SQL: cfg.EffectSQL, Args: cfg.EffectArgs},
		}
		if noCount {
			sk.Effects = nil
		}
		tally := &assert.SoakTally{Policy: cfg.Policy}
		sk.Counter = tally
		// A fresh target is cold (connections, pools, caches): a short
		// raw load warms it first, and the two drivers take turns going
		// first, so that neither always meets the target cold or after
		// the other's load (the soak counts effects once its load is
		// over, which keeps PostgreSQL busy for a moment).
		rawVegeta(pt.URL.Host, rate, 2*time.Second, workers)
		var load *idemcheck.SoakResult
		var r float64
		var n int
		var el time.Duration
		runSoak := func() { load, err = sk.Run(ctx) }
		runRaw := func() { r, n, el = rawVegeta(pt.URL.Host, rate, d, workers) }
		order := "soak first"
		if i%2 == 0 {
			runSoak()
			runRaw()
		} else {
			order = "raw vegeta first"
			runRaw()
			runSoak()
		}
		if err != nil {
			pt.Close()
			return err
		}
		res := tally.Result(*load)
		soak = append(soak, float64(res.Intents)/res.Duration.Seconds())
		soakLine := fmt.Sprintf("soak %d intents in %.1f s (%.0f/s), %d cut and retried, %d duplicates, p50 %v, p99 %v",
			res.Intents, res.Duration.Seconds(), soak[i], res.Cut, res.Duplicates, res.P50.Round(time.Microsecond), res.P99.Round(time.Microsecond))
		raw = append(raw, r)
		ratios = append(ratios, soak[i]/r)
		doc.run("throughput run %d (%s): %s; raw vegeta %d requests in %.1f s (%.0f/s); %.2fx", i+1, order, soakLine, n, el.Seconds(), r, ratios[i])
		pt.Close()
	}
	fmt.Printf("THROUGHPUT soak %s/s, raw vegeta %s/s, ratio %s (workers %d, %v runs)\n",
		bench.Stat(soak).Format("%.0f"), bench.Stat(raw).Format("%.0f"), bench.Stat(ratios).Format("%.2f"), workers, d)
	doc.row(fmt.Sprintf("soak throughput over raw vegeta's, same run (reference orders API on PostgreSQL, %d workers, %v per run at a rate it cannot reach, 1%% of replies cut after commit and retried, every intent's effects counted)", workers, d),
		fmt.Sprintf("%sx (soak %s intents/s, raw vegeta %s requests/s)", bench.Stat(ratios).Format("%.2f"), bench.Stat(soak).Format("%.0f"), bench.Stat(raw).Format("%.0f")),
		"≥ 0.9x", bench.Stat(ratios).Median() >= 0.9, fmt.Sprintf("%.2f", 0.9-bench.Stat(ratios).Median()))
	return nil
}

// rawVegeta attacks the same endpoint with fresh bodies and keys, the way a
// load test with vegeta alone would: nothing recorded, nothing counted.
func rawVegeta(host string, rate int, d time.Duration, workers int) (float64, int, time.Duration) {
	// vegeta calls the targeter from every worker at once.
	var next atomic.Int64
	targeter := func(t *vegeta.Target) error {
		seq := next.Add(1)
		t.Method, t.URL = "POST", "http://"+host+"/orders"
		t.Body = []byte(fmt.Sprintf(`{"customerId":"raw-%d-%d","totalCents":4000}`, time.Now().UnixNano(), seq))
		t.Header = http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {fmt.Sprintf("raw-%d-%d", time.Now().UnixNano(), seq)}}
		return nil
	}
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: workers}
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
		vegeta.Workers(uint64(min(workers, 8))), vegeta.MaxWorkers(uint64(workers)))
	start := time.Now()
	n := 0
	for range atk.Attack(targeter, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, d, "raw") {
		n++
	}
	el := time.Since(start)
	return float64(n) / el.Seconds(), n, el
}

// memory runs each memory soak in a child process, so that its peak RSS is
// the soak's and its small in-process target's, not this program's.
func memory(doc *figures, runs, attempts, workers int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var peaks, done []float64
	for i := range runs {
		cmd := exec.Command(self, "-memory-child", "-attempts", fmt.Sprint(attempts), "-workers", fmt.Sprint(workers))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("memory run %d: %w", i+1, err)
		}
		var r struct {
			Attempts int64   `json:"attempts"`
			Seconds  float64 `json:"seconds"`
			PeakMB   float64 `json:"peak_mb"`
			HistMB   float64 `json:"history_mb"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("memory run %d: %v: %s", i+1, err, out)
		}
		peaks = append(peaks, r.PeakMB)
		done = append(done, float64(r.Attempts))
		doc.run("memory run %d: %d attempts in %.0f s, peak RSS %.1f MB, history %.0f MB on disk", i+1, r.Attempts, r.Seconds, r.PeakMB, r.HistMB)
	}
	fmt.Printf("MEMORY peak RSS %s MB for a soak of %d attempts\n", bench.Stat(peaks).Format("%.1f"), attempts)
	doc.row(fmt.Sprintf("peak memory (RSS) of a soak of %d attempts, its history streamed to disk (a loopback target that answers at once, 12,000 intents/s, 1%% cut)", attempts),
		fmt.Sprintf("%s MB over runs of %s attempts", bench.Stat(peaks).Format("%.1f"), bench.Stat(done).Format("%.0f")),
		"< 150 MB", bench.Stat(peaks).Median() < 150, fmt.Sprintf("%.1f MB", bench.Stat(peaks).Median()-150))
	return nil
}

func memoryChild(ctx context.Context, attempts, workers int) error {
	// A target that answers at once: the soak's own cost is what is measured.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"orderId":"o-1","totalCents":4000}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	hist, err := os.CreateTemp("", "idemcheck-soakbench-history-")
	if err != nil {
		return err
	}
	defer os.Remove(hist.Name())
	defer hist.Close()
	const rate, cutShare = 12000, 0.01
	// The soak ends after enough intents for the attempts (each cut intent
	// makes two); its duration only bounds a machine that cannot keep up
	// with the rate.
	intents := int64(math.Ceil(float64(attempts) / (1 + cutShare)))
	d := time.Duration(float64(attempts) / rate * 3 * float64(time.Second))
	base := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	e := scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/orders"), Body: idemcheck.MustTemplate(body)}
	tally := &assert.SoakTally{Policy: idemcheck.IETF()}
	sk := &runner.Soak{Endpoint: e, Policy: idemcheck.IETF(), Rate: rate, Duration: d, Intents: intents, Seed: 1, Workers: workers,
		Faults:  []runner.SoakFault{{Fault: faults.CutReply, Share: cutShare}},
		History: history.NewEncoder(hist), Counter: tally}
	start := time.Now()
	load, err := sk.Run(ctx)
	if err != nil {
		return err
	}
	res := tally.Result(*load)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fi, err := hist.Stat()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"attempts": res.Attempts, "seconds": time.Since(start).Seconds(),
		"peak_mb": float64(ru.Maxrss) / 1024, "history_mb": float64(fi.Size()) / (1 << 20),
	})
}

// certification: a full default certification of the reference as a
// process target, every check, with the lease waits counted apart.
func certification(ctx context.Context, doc *figures, runs int) error {
	pg, bins, done, err := setup(ctx)
	if err != nil {
		return err
	}
	defer done()
	var walls, nets []float64
	for i := range runs {
		pt, err := ordersTarget(ctx, pg, bins, fmt.Sprintf("cert_%d", i))
		if err != nil {
			return err
		}
		cfg := zoo.EndpointConfig("orders", pt)
		cfg.Options = scenarios.Defaults
		start := time.Now()
		res, err := certify.Run(ctx, cfg)
		wall := time.Since(start)
		pt.Close()
		if err != nil {
			return err
		}
		waits := leaseWaits(res.History)
		walls = append(walls, wall.Seconds())
		nets = append(nets, (wall - waits).Seconds())
		doc.run("certification run %d: %d attempts, %d anomalies, %.1f s wall, %.1f s of it waiting out leases",
			i+1, res.Report.Stats.Attempts, len(res.Report.Anomalies), wall.Seconds(), waits.Seconds())
	}
	fmt.Printf("CERTIFY default certification of the reference: %s s wall, %s s without lease waits\n",
		bench.Stat(walls).Format("%.1f"), bench.Stat(nets).Format("%.1f"))
	doc.row("wall time of a full default certification of the reference (every check, fault checks included, started as a process, 1 s lease), lease waits excluded",
		fmt.Sprintf("%s s (%s s with the lease waits)", bench.Stat(nets).Format("%.1f"), bench.Stat(walls).Format("%.1f")),
		"< 15 s", bench.Stat(nets).Median() < 15, fmt.Sprintf("%.1f s", bench.Stat(nets).Median()-15))
	return nil
}

// leaseWaits sums the time the fault checks spent waiting on purpose: from
// the start of each intent's first attempt to the start of its last, in
// crash-lease and lease-fencing (the first attempt's stall and the
// retries past the lease).
func leaseWaits(h *idemcheck.History) time.Duration {
	var total time.Duration
	for _, atts := range h.ByIntent() {
		if len(atts) < 2 || (atts[0].Check != idemcheck.CheckCrashLease && atts[0].Check != idemcheck.CheckLeaseFencing) {
			continue
		}
		total += atts[len(atts)-1].Start.Sub(atts[0].Start)
	}
	return total
}
