// Command zoo certifies every example API of the zoo, references and
// buggy variants, and prints the detection matrix: `make zoo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets"
)

func main() {
	var o options
	flag.StringVar(&o.only, "only", "", "certify only the entries whose name contains this text (several, comma-separated: any of them)")
	flag.IntVar(&o.runs, "runs", 1, "certify each entry this many times; an entry counts as expected only when every run was")
	flag.BoolVar(&o.expectedOnly, "expected-only", false, "run only each buggy variant's expected check (references still run every check)")
	flag.StringVar(&o.mode, "mode", "process", "process: idemcheck holds the target's processes and links (--cmd); url: it is given the address and database only (--url --db); both: each run in both modes")
	flag.StringVar(&o.checks, "checks", "", "certify every entry with these checks (comma-separated) instead of its own list")
	flag.StringVar(&o.histories, "histories", "", "write the history of every run not as expected to this directory, a JSON Lines file each (idemcheck check reads it)")
	flag.Parse()
	if o.runs < 1 {
		fmt.Fprintln(os.Stderr, "zoo: -runs must be 1 or more")
		os.Exit(2)
	}
	switch o.mode {
	case "process", "url", "both":
	default:
		fmt.Fprintf(os.Stderr, "zoo: -mode %q: process, url or both\n", o.mode)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "zoo: %v\n", err)
		os.Exit(3)
	}
}

type options struct {
	only         string
	runs         int
	expectedOnly bool
	histories    string
	mode         string
	checks       string
}

// selects reports whether -only keeps the entry: it is empty, or the name
// contains one of its comma-separated texts.
func (o options) selects(name string) bool {
	if o.only == "" {
		return true
	}
	for _, t := range strings.Split(o.only, ",") {
		if t != "" && strings.Contains(name, t) {
			return true
		}
	}
	return false
}

// modes are the modes each entry is certified in.
func (o options) modes() []bool {
	switch o.mode {
	case "url":
		return []bool{true}
	case "both":
		return []bool{false, true}
	}
	return []bool{false}
}

func modeName(byURL bool) string {
	if byURL {
		return "url"
	}
	return "process"
}

func run(ctx context.Context, o options) error {
	fmt.Fprintln(os.Stderr, "zoo: building the example APIs and starting PostgreSQL …")
	bins, err := zoo.BuildTemp(ctx)
	if err != nil {
		return err
	}
	defer bins.Remove()
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		return err
	}
	defer pg.Close()

	var rows []zoo.Row
	var tallies []string
	missed := 0
	for i, e := range zoo.Entries() {
		if !o.selects(e.Name()) {
			continue
		}
		var checks []string
		switch {
		case o.checks != "":
			checks = strings.Split(o.checks, ",")
		case o.expectedOnly && !e.Reference():
			checks = []string{e.Check}
		}
		for _, byURL := range o.modes() {
			name := e.Name()
			if o.mode == "both" {
				name += " (" + modeName(byURL) + ")"
			}
			// Runs made, runs that caught the bug (or left a reference
			// clean), runs it was out of reach in.
			ran, good, out := 0, 0, 0
			unreachable := ""
			var last zoo.Row
			for r := range o.runs {
				fmt.Fprintf(os.Stderr, "zoo: %s, run %d of %d …\n", name, r+1, o.runs)
				dsn, err := pg.CreateDatabase(ctx, fmt.Sprintf("zoo_%d_%s_%d", i, modeName(byURL), r))
				if err != nil {
					return err
				}
				res, err := bins.Certify(ctx, e, zoo.Config{Checks: checks, Options: zoo.Options(), DSN: dsn, ByURL: byURL})
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				last, ran = zoo.NewRow(e, res.Report), ran+1
				switch {
				case last.Caught():
					good++
				case last.Unreachable() != "":
					// The bug needs a hold on the target this mode does
					// not give: the run is neither a catch nor a miss.
					unreachable, out = last.Unreachable(), out+1
				default:
					fmt.Fprintf(os.Stderr, "zoo: %s, run %d: NOT as expected: found %v, inconclusive %v\n", name, r+1, last.Found, last.Inconclusive)
					if o.histories != "" {
						if err := keepHistory(o.histories, name, r+1, res.History); err != nil {
							return err
						}
					}
				}
				if last.Skipped[e.Check] != "" && !e.Reference() {
					break // skipped in every run alike
				}
			}
			rows = append(rows, last)
			switch {
			case out > 0 && good == 0:
				tallies = append(tallies, fmt.Sprintf("  %-48s not reachable in this mode: %s", name, unreachable))
			case out > 0:
				tallies = append(tallies, fmt.Sprintf("  %-48s %d of %d runs as expected, the other %d out of reach in this mode: %s", name, good, ran, out, unreachable))
			default:
				tallies = append(tallies, fmt.Sprintf("  %-48s %d of %d runs as expected", name, good, ran))
			}
			if good+out < ran {
				missed++
			}
		}
	}
	fmt.Println()
	zoo.WriteMatrix(os.Stdout, rows)
	if o.runs > 1 || o.mode != "process" {
		fmt.Printf("\nRuns (%d each, %s mode):\n%s\n", o.runs, o.mode, strings.Join(tallies, "\n"))
	}
	if missed > 0 {
		os.Exit(1)
	}
	return nil
}

// keepHistory writes the history of an entry's run to dir, for a run not
// as expected to be read again (idemcheck check, idemcheck report).
func keepHistory(dir, name string, run int, h *idemcheck.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := strings.NewReplacer("/", "_", " ", "_", "(", "", ")", "").Replace(name)
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-run%d.jsonl", file, run)))
	if err != nil {
		return err
	}
	if err := history.Write(f, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
