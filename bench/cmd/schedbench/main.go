// Command schedbench measures what scheduling a burst's writes at the
// database link does: for every race variant of the zoo, the share of
// concurrent rounds that caught its bug with the write barrier on
// (scheduled) and off (timed, --timed-bursts); for the references, the
// anomalies of full certifications with scheduling on and how long a
// default certification takes each way.
//
//	go run ./bench/cmd/schedbench [-rounds 20] [-runs 3] [-busy 0] [-only races|references] [-variants orders/check-then-insert,...] [-references orders/reference,...]
//
// The orders API on MariaDB is measured by naming it: -variants
// ordersmysql/check-then-insert -references ordersmysql/reference (on a
// throwaway MariaDB of its own, behind the link that reads the MySQL
// protocol).
//
// Every target is an example binary in a process of its own, on a database
// of its own, certified through certify exactly as `idemcheck
// certify --cmd` does (two instances behind the round-robin balancer, as
// `make zoo` runs them). -busy N starts N busy loops (sh -c 'while :; do
// :; done') for the duration and stops them after. It prints a Markdown
// table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

// raceVariants are the zoo's variants whose bug is a race a burst exposes,
// with the check whose bursts expose it.
var raceVariants = []struct{ app, variant, check string }{
	{"orders", "check-then-insert", idemcheck.CheckConcurrentBurst},
	{"orders", "narrow-check-then-insert", idemcheck.CheckConcurrentBurst},
	{"orders", "check-in-transaction", idemcheck.CheckConcurrentBurst},
	{"orders", "unique-violation-500", idemcheck.CheckConcurrentBurst},
	{"orders", "in-memory-lock", idemcheck.CheckConcurrentBurst},
	{"orders", "upsert-claim", idemcheck.CheckConcurrentBurst},
	{"webhooks", "check-then-insert", idemcheck.CheckWebhookRedeliver},
	{"ordersmysql", "check-then-insert", idemcheck.CheckConcurrentBurst},
}

func run() error {
	rounds := flag.Int("rounds", 20, "concurrent rounds per variant and mode")
	runs := flag.Int("runs", 3, "full certifications of each reference per mode")
	busy := flag.Int("busy", 0, "busy loops to run meanwhile")
	only := flag.String("only", "", "measure only: races or references")
	variants := flag.String("variants", "", "comma-separated race variants to measure (app/variant; default: all)")
	references := flag.String("references", "orders/reference,webhooks/reference", "comma-separated references to certify in full (app/variant)")
	flag.Parse()

	ctx := context.Background()
	bins, err := zoo.BuildTemp(ctx)
	if err != nil {
		return err
	}
	defer bins.Remove()
	stopBusy, err := bench.StartBusyLoops(*busy)
	if err != nil {
		return err
	}
	defer stopBusy()
	fmt.Printf("load before: %s; %d busy loops\n\n", bench.LoadAverage(), *busy)

	if *only != "references" {
		// concurrent-burst has two halves where idemcheck holds the
		// database link: bursts released together, then bursts of up to
		// scenarios.InTurnAttempts released in turn. Timed, the second half
		// is timed bursts of that size.
		fmt.Println("| variant | check | scheduled: rounds caught | held writes per round | released because | timed: rounds caught | scheduled in turn: rounds caught | timed, bursts of the second half: rounds caught |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
		for _, rv := range raceVariants {
			if *variants != "" && !slices.Contains(strings.Split(*variants, ","), rv.app+"/"+rv.variant) {
				continue
			}
			e, ok := zoo.Lookup(rv.app, rv.variant)
			if !ok {
				return fmt.Errorf("no zoo entry %s/%s", rv.app, rv.variant)
			}
			var cells, second []string
			var held, why string
			for _, timed := range []bool{false, true} {
				res, err := certifyEntry(ctx, bins, e, rv.check, *rounds, timed)
				if err != nil {
					return fmt.Errorf("%s: %w", e.Name(), err)
				}
				caught, total := caughtRounds(res, rv.check, idemcheck.Kind(e.Anomaly), false)
				cells = append(cells, fmt.Sprintf("%d of %d", caught, total))
				if caught, total := caughtRounds(res, rv.check, idemcheck.Kind(e.Anomaly), true); total > 0 {
					second = append(second, fmt.Sprintf("%d of %d", caught, total))
				} else {
					second = append(second, "-")
				}
				if !timed {
					held, why = schedule(res.History, rv.check)
				}
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", e.Name(), rv.check, cells[0], held, why, cells[1], second[0], second[1])
		}
		fmt.Println()
	}
	if *only != "races" {
		fmt.Println("| reference | mode | certifications | anomalies | inconclusive checks | wall time per certification (median, range) | bursts per certification (median, range) | writes held per certification (median, range) | released because |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
		for _, name := range strings.Split(*references, ",") {
			app, variant, _ := strings.Cut(name, "/")
			e, ok := zoo.Lookup(app, variant)
			if !ok {
				return fmt.Errorf("no zoo entry %s", name)
			}
			walls, holds, bursts := map[bool][]time.Duration{}, map[bool][]time.Duration{}, map[bool][]time.Duration{}
			why := map[bool][]string{}
			anomalies, inconclusive := map[bool]int{}, map[bool]int{}
			for range *runs {
				for _, timed := range []bool{false, true} {
					start := time.Now()
					res, err := certifyFull(ctx, bins, e, timed)
					if err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					walls[timed] = append(walls[timed], time.Since(start))
					holds[timed] = append(holds[timed], heldTime(res.History))
					bursts[timed] = append(bursts[timed], burstTime(res.History))
					why[timed] = append(why[timed], reasons(res.History))
					anomalies[timed] += len(res.Report.Anomalies)
					for _, c := range res.Report.Checks {
						if c.Status == idemcheck.Inconclusive {
							inconclusive[timed]++
						}
					}
				}
			}
			for _, timed := range []bool{false, true} {
				mode := "scheduled"
				if timed {
					mode = "timed"
				}
				fmt.Printf("| %s | %s | %d | %d | %d | %s | %s | %s | %s |\n", name, mode, *runs, anomalies[timed], inconclusive[timed], stat(walls[timed]), stat(bursts[timed]), stat(holds[timed]), strings.Join(why[timed], "; "))
			}
		}
		fmt.Println()
	}
	fmt.Printf("load after: %s\n", bench.LoadAverage())
	return nil
}

// certifyEntry certifies e with check alone, rounds rounds.
func certifyEntry(ctx context.Context, bins *zoo.Bins, e zoo.Entry, check string, rounds int, timed bool) (*certify.Result, error) {
	o := zoo.Options()
	o.BurstRounds = rounds
	if check == idemcheck.CheckWebhookRedeliver {
		o.Rounds = rounds
	}
	return certifyWith(ctx, bins, e, []string{check}, o, timed)
}

// certifyFull is a default certification: every check, default sizes.
func certifyFull(ctx context.Context, bins *zoo.Bins, e zoo.Entry, timed bool) (*certify.Result, error) {
	o := scenarios.Defaults
	o.RetryWindow = zoo.Options().RetryWindow
	return certifyWith(ctx, bins, e, nil, o, timed)
}

func certifyWith(ctx context.Context, bins *zoo.Bins, e zoo.Entry, checks []string, o scenarios.Options, timed bool) (*certify.Result, error) {
	command := filepath.Join(bins.Dir, e.App) + " " + e.Args()
	po := targets.ProcessOptions{Command: command, Instances: 2}
	if e.App == "ordersmysql" {
		po.Engine = targets.EngineMySQL
	}
	pt, err := targets.StartProcessTarget(ctx, po)
	if err != nil {
		return nil, err
	}
	defer pt.Close()
	cfg := zoo.EndpointConfig(e.App, pt)
	cfg.Name, cfg.Checks, cfg.Options, cfg.Timed = e.Name(), checks, o, timed
	return certify.Run(ctx, cfg)
}

// caughtRounds counts the check's bursts of its first half (second false)
// or its second half whose intent has the anomaly (a loose burst repeated
// in timed mode counts as a burst of its own). The second half's rounds
// are numbered from 1 again: a burst whose round is lower than the one
// before starts it.
func caughtRounds(res *certify.Result, check string, kind idemcheck.Kind, second bool) (caught, total int) {
	hit := map[string]bool{}
	for _, a := range res.Report.Anomalies {
		if a.Check == check && a.Kind == kind {
			hit[a.Intent] = true
		}
	}
	inSecond, last := false, 0
	for _, b := range res.History.Bursts {
		if b.Check != check {
			continue
		}
		inSecond = inSecond || b.InTurn || b.Round < last
		last = b.Round
		if inSecond == second {
			total++
			if hit[b.Intent] {
				caught++
			}
		}
	}
	return caught, total
}

// schedule sums up the scheduled bursts: held writes (min-max) and the
// release reasons.
func schedule(h *idemcheck.History, check string) (held, why string) {
	lo, hi := -1, 0
	reasons := map[string]int{}
	for _, b := range h.Bursts {
		if b.Check != check || !b.Scheduled || b.InTurn {
			continue
		}
		if lo < 0 || b.Held < lo {
			lo = b.Held
		}
		hi = max(hi, b.Held)
		reasons[b.Release]++
	}
	if lo < 0 {
		return "-", "-"
	}
	held = fmt.Sprint(lo)
	if hi != lo {
		held = fmt.Sprintf("%d-%d", lo, hi)
	}
	var parts []string
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%s x%d", r, n))
	}
	sort.Strings(parts)
	return held, strings.Join(parts, ", ")
}

// reasons lists the release reasons of a run's scheduled bursts, in
// order, with the time each held its writes ("-" for none).
func reasons(h *idemcheck.History) string {
	first := map[string]time.Time{}
	var out []string
	for _, e := range h.Events {
		switch e.Kind {
		case idemcheck.WriteHeld:
			if t, ok := first[e.Intent]; !ok || e.Time.Before(t) {
				first[e.Intent] = e.Time
			}
		case idemcheck.WritesReleased:
			if t, ok := first[e.Intent]; ok {
				out = append(out, fmt.Sprintf("%s %s", e.Reason, e.Time.Sub(t).Round(time.Millisecond)))
			}
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// burstTime is how long a run's bursts took: for each, from its first
// attempt's start to its last attempt's end. The certification's other
// steps take the same time whether bursts are scheduled or timed, and vary
// far more from run to run on a busy machine; this is where scheduling
// adds time.
func burstTime(h *idemcheck.History) time.Duration {
	start, end := map[int]time.Time{}, map[int]time.Time{}
	for _, a := range h.Attempts {
		if a.Burst == 0 || a.Start.IsZero() {
			continue
		}
		if t, ok := start[a.Burst]; !ok || a.Start.Before(t) {
			start[a.Burst] = a.Start
		}
		if a.End.After(end[a.Burst]) {
			end[a.Burst] = a.End
		}
	}
	var total time.Duration
	for id, s := range start {
		if e := end[id]; e.After(s) {
			total += e.Sub(s)
		}
	}
	return total
}

// heldTime is how long the target's writes were held in a run: for each
// scheduled burst, from its first held write to the release.
func heldTime(h *idemcheck.History) time.Duration {
	first := map[string]time.Time{}
	var total time.Duration
	for _, e := range h.Events {
		switch e.Kind {
		case idemcheck.WriteHeld:
			if t, ok := first[e.Intent]; !ok || e.Time.Before(t) {
				first[e.Intent] = e.Time
			}
		case idemcheck.WritesReleased:
			if t, ok := first[e.Intent]; ok {
				total += e.Time.Sub(t)
			}
		}
	}
	return total
}

func stat(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	r := func(x time.Duration) string {
		if x < time.Second {
			return x.Round(time.Millisecond).String()
		}
		return x.Round(10 * time.Millisecond).String()
	}
	return fmt.Sprintf("%s (%s-%s)", r(s[len(s)/2]), r(s[0]), r(s[len(s)-1]))
}
