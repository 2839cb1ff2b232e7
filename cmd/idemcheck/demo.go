package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/internal/certify"
	"github.com/idemcheck/idemcheck/targets"
)

// demoTarget is one example API the demo certifies, and what it expects.
type demoTarget struct {
	app, variant, label string
	// want is the anomaly that must be found; empty for a reference,
	// which must pass.
	want idemcheck.Kind
}

// demoTargets are a short, telling subset of the zoo (make zoo shows it
// all): the reference, a race, a crash, and a webhook consumer.
var demoTargets = []demoTarget{
	{"orders", "reference", "orders (reference)", ""},
	{"orders", "check-then-insert", "orders (check-then-insert: read the key, do the work, write the key)", idemcheck.DuplicateEffect},
	{"orders", "no-lease", "orders (no lease: a key claimed by a crashed process)", idemcheck.StuckKey},
	{"webhooks", "dedupe-apart", "webhooks (event id recorded apart from the work)", idemcheck.LostEffect},
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var db string
	var seed int64
	var out outputs
	fs.StringVar(&db, "db", "", "PostgreSQL `DSN` for the example APIs (default: $DATABASE_URL, else a throwaway cluster from the local binaries)")
	fs.Int64Var(&seed, "seed", 1, "seed printed in the reports")
	fs.BoolVar(&out.noColour, "no-color", false, "no colour, even on a terminal")
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if db == "" {
		db = os.Getenv("DATABASE_URL")
	}
	self, err := os.Executable()
	if err != nil {
		return 0, idemcheck.Unavailablef("demo: cannot find its own binary to serve the examples: %v", err)
	}
	fmt.Fprintln(stderr, "idemcheck demo: starting PostgreSQL and the example APIs on loopback …")
	dsns, cleanup, err := demoDatabases(ctx, db, len(demoTargets))
	if err != nil {
		return 0, err
	}
	defer cleanup()

	asExpected := true
	var verdicts []string
	for i, dt := range demoTargets {
		rep, err := demoOne(ctx, self, dsns[i], dt, seed, out, stdout, stderr)
		if err != nil {
			return 0, err
		}
		fmt.Fprintln(stdout)
		ok := !rep.Failed()
		if dt.want != "" {
			ok = false
			for _, a := range rep.Anomalies {
				ok = ok || a.Kind == dt.want
			}
		}
		asExpected = asExpected && ok
		verdict := fmt.Sprintf("%s: %s", dt.label, rep.Verdict)
		if dt.want != "" {
			verdict += ", " + string(dt.want)
		}
		verdicts = append(verdicts, verdict+map[bool]string{true: " (as expected)", false: " (NOT as expected)"}[ok])
	}
	fmt.Fprintf(stdout, "demo:\n  %s\n", strings.Join(verdicts, "\n  "))
	if !asExpected {
		return idemcheck.ExitAnomalies, nil
	}
	return idemcheck.ExitHeld, nil
}

// demoOne starts one example as a process target (idemcheck itself, serving
// it) with its database link through the fault proxy, and certifies it.
func demoOne(ctx context.Context, self, dsn string, dt demoTarget, seed int64, out outputs, stdout, stderr io.Writer) (idemcheck.Report, error) {
	command := fmt.Sprintf("%q %s %s -variant %s", self, exampleServerCommand, dt.app, dt.variant)
	if dt.app == "orders" {
		command += " -lease " + zoo.Lease.String()
	}
	pt, err := certify.StartProcessTarget(ctx, certify.ProcessOptions{Command: command, DSN: dsn})
	if err != nil {
		return idemcheck.Report{}, err
	}
	defer pt.Close()
	cfg := zoo.EndpointConfig(dt.app, pt)
	cfg.Name, cfg.Seed = dt.label, seed
	cfg.Options = zoo.Options()
	cfg.Options.BurstRounds, cfg.Options.Rounds, cfg.Options.FaultRounds, cfg.Options.RetryWindow = 5, 2, 1, 0
	res, err := certifyOne(ctx, cfg, out, stdout, stderr)
	if err != nil {
		return idemcheck.Report{}, err
	}
	return res.Report, nil
}

// demoDatabases returns n DSNs: n fresh databases on a throwaway cluster,
// or, with a DSN, that one database n times (every run's keys and intents
// are fresh, so the examples can share its tables).
func demoDatabases(ctx context.Context, dsn string, n int) ([]string, func(), error) {
	if dsn != "" {
		d, err := targets.OpenDatabase(ctx, dsn)
		if err != nil {
			return nil, nil, idemcheck.Unavailablef("%v", err)
		}
		d.Close()
		out := make([]string, n)
		for i := range out {
			out[i] = dsn
		}
		return out, func() {}, nil
	}
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		return nil, nil, idemcheck.Unavailablef("demo: %v", err)
	}
	var out []string
	for i := range n {
		d, err := pg.CreateDatabase(ctx, fmt.Sprintf("demo_%d", i+1))
		if err != nil {
			_ = pg.Close()
			return nil, nil, idemcheck.Unavailablef("demo: %v", err)
		}
		out = append(out, d)
	}
	return out, func() { _ = pg.Close() }, nil
}
