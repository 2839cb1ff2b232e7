// Command zoo certifies every example API of the zoo, references and
// buggy variants, and prints the detection matrix: `make zoo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets"
)

func main() {
	var o options
	flag.StringVar(&o.only, "only", "", "certify only the entries whose name contains this text")
	flag.IntVar(&o.runs, "runs", 1, "certify each entry this many times; an entry counts as expected only when every run was")
	flag.BoolVar(&o.expectedOnly, "expected-only", false, "run only each buggy variant's expected check (references still run every check)")
	flag.Parse()
	if o.runs < 1 {
		fmt.Fprintln(os.Stderr, "zoo: -runs must be 1 or more")
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
		if o.only != "" && !strings.Contains(e.Name(), o.only) {
			continue
		}
		var checks []string
		if o.expectedOnly && !e.Reference() {
			checks = []string{e.Check}
		}
		good := 0
		var last zoo.Row
		for r := range o.runs {
			fmt.Fprintf(os.Stderr, "zoo: %s, run %d of %d …\n", e.Name(), r+1, o.runs)
			dsn, err := pg.CreateDatabase(ctx, fmt.Sprintf("zoo_%d_%d", i, r))
			if err != nil {
				return err
			}
			res, err := bins.Certify(ctx, e, zoo.Config{Checks: checks, Options: zoo.Options(), DSN: dsn})
			if err != nil {
				return fmt.Errorf("%s: %w", e.Name(), err)
			}
			last = zoo.NewRow(e, res.Report)
			if last.Caught() {
				good++
			} else {
				fmt.Fprintf(os.Stderr, "zoo: %s, run %d: NOT as expected: found %v, inconclusive %v\n", e.Name(), r+1, last.Found, last.Inconclusive)
			}
		}
		if good < o.runs {
			missed++
		}
		rows = append(rows, last)
		tallies = append(tallies, fmt.Sprintf("  %-40s %d of %d runs as expected", e.Name(), good, o.runs))
	}
	fmt.Println()
	zoo.WriteMatrix(os.Stdout, rows)
	if o.runs > 1 {
		fmt.Printf("\nRuns (%d each):\n%s\n", o.runs, strings.Join(tallies, "\n"))
	}
	if missed > 0 {
		os.Exit(1)
	}
	return nil
}
