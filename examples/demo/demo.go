package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/internal/outfile"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/targets"
)

// demoTarget is one zoo entry the demo certifies, with its label; the
// entry says what must be found (nothing, for a reference).
type demoTarget struct {
	app, variant, label string
}

// demoTargets are a short, telling subset of the zoo (make zoo shows it
// all): the reference, a race, a crash, and a webhook consumer.
var demoTargets = []demoTarget{
	{"orders", "reference", "orders (reference)"},
	{"orders", "check-then-insert", "orders (check-then-insert: read the key, do the work, write the key)"},
	{"orders", "no-lease", "orders (no lease: a key claimed by a crashed process)"},
	{"webhooks", "dedupe-apart", "webhooks (event id recorded apart from the work)"},
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var db, htmlDir string
	var noColour bool
	fs.StringVar(&db, "db", "", "PostgreSQL `DSN` for the example APIs (default: $DATABASE_URL, else a throwaway cluster from the local binaries)")
	fs.StringVar(&htmlDir, "html-dir", filepath.Join(os.TempDir(), "idemcheck-demo"), "write each example's HTML report into `DIR`")
	fs.BoolVar(&noColour, "no-color", false, "no colour, even on a terminal")
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if db == "" {
		db = os.Getenv("DATABASE_URL")
	}
	if err := os.MkdirAll(htmlDir, 0o755); err != nil {
		return 0, idemcheck.Usagef("--html-dir %s cannot be made: %v", htmlDir, err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, idemcheck.Unavailablef("demo: cannot find its own binary to serve the examples: %v", err)
	}
	fmt.Fprintln(stderr, "idemcheck-demo: starting PostgreSQL and the example APIs on loopback …")
	dsns, cleanup, err := demoDatabases(ctx, db, len(demoTargets))
	if err != nil {
		return 0, err
	}
	defer cleanup()

	colour := render.Colour(noColour, stdout, os.Getenv)
	asExpected := true
	var verdicts []string
	for i, dt := range demoTargets {
		e, found := zoo.Lookup(dt.app, dt.variant)
		if !found {
			return 0, fmt.Errorf("demo: %s/%s is not in the zoo", dt.app, dt.variant)
		}
		res, err := demoOne(ctx, self, dsns[i], e, dt.label, stderr)
		if err != nil {
			return 0, err
		}
		rep := res.Report
		render.WriteText(stdout, rep, colour)
		page := filepath.Join(htmlDir, dt.app+"-"+dt.variant+".html")
		err = outfile.WriteAtomic(page, func(w io.Writer) error {
			return render.WriteHTML(w, []*render.HTMLPage{render.NewHTMLPage(rep, res.History)})
		})
		if err != nil {
			return 0, idemcheck.Unavailablef("demo: %v", err)
		}
		fmt.Fprintf(stdout, "  HTML report: %s\n\n", page)
		ok := zoo.NewRow(e, rep).Caught()
		asExpected = asExpected && ok
		verdict := fmt.Sprintf("%s: %s", dt.label, rep.Verdict)
		if !e.Reference() {
			verdict += ", " + e.Anomaly
		}
		verdicts = append(verdicts, verdict+map[bool]string{true: " (as expected)", false: " (NOT as expected)"}[ok])
	}
	fmt.Fprintf(stdout, "demo:\n  %s\n", strings.Join(verdicts, "\n  "))
	if !asExpected {
		return idemcheck.ExitAnomalies, nil
	}
	return idemcheck.ExitHeld, nil
}

// demoOne starts one example as a process target (this program itself,
// serving it) with its database link through the fault proxy, and
// certifies it, with a progress line on stderr.
func demoOne(ctx context.Context, self, dsn string, e zoo.Entry, label string, stderr io.Writer) (*certify.Result, error) {
	command := fmt.Sprintf("%q %s %s %s", self, serve.ExampleCommand, e.App, e.Args())
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: command, DSN: dsn})
	if err != nil {
		return nil, err
	}
	defer pt.Close()
	cfg := zoo.EndpointConfig(e.App, pt)
	cfg.Name = label
	cfg.Options = zoo.Options()
	cfg.Options.BurstRounds, cfg.Options.Rounds, cfg.Options.FaultRounds, cfg.Options.RetryWindow = 5, 2, 1, 0
	prog := &render.Progress{W: stderr, TTY: render.IsTerminal(stderr), Label: label}
	cfg.Progress = func(s runner.Progress) { prog.Update(render.Step(s)) }
	started := time.Now()
	res, err := certify.Run(ctx, cfg)
	prog.Done()
	if err != nil {
		return nil, err
	}
	res.Report.Stamp(idemcheck.BuildTool(), started)
	return res, nil
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
