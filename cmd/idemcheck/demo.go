package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/internal/certify"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// demoTarget is one example API the demo certifies, and what it expects.
type demoTarget struct {
	variant  orders.Variant
	label    string
	wantFail bool
}

var demoTargets = []demoTarget{
	{orders.Reference, "orders (reference)", false},
	{orders.CheckThenInsert, "orders (check-then-insert bug)", true},
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
	fmt.Fprintln(stderr, "idemcheck demo: starting PostgreSQL and two example orders APIs on loopback …")
	pools, cleanup, err := demoDatabases(ctx, db, len(demoTargets))
	if err != nil {
		return 0, err
	}
	defer cleanup()

	asExpected := true
	var verdicts []string
	for i, dt := range demoTargets {
		rep, err := demoOne(ctx, pools[i], dt, seed, out, stdout, stderr)
		if err != nil {
			return 0, err
		}
		fmt.Fprintln(stdout)
		ok := rep.Failed() == dt.wantFail
		asExpected = asExpected && ok
		verdicts = append(verdicts, fmt.Sprintf("%s: %s (%s)", dt.label, rep.Verdict, map[bool]string{true: "as expected", false: "NOT as expected"}[ok]))
	}
	fmt.Fprintf(stdout, "demo: %s\n", strings.Join(verdicts, "; "))
	if !asExpected {
		return idemcheck.ExitAnomalies, nil
	}
	return idemcheck.ExitHeld, nil
}

// demoOne serves one variant on a loopback port and certifies it.
func demoOne(ctx context.Context, pool *pgxpool.Pool, dt demoTarget, seed int64, out outputs, stdout, stderr io.Writer) (idemcheck.Report, error) {
	if err := orders.Migrate(ctx, pool); err != nil {
		return idemcheck.Report{}, idemcheck.Unavailablef("demo: migrate the orders schema: %v", err)
	}
	api := orders.New(pool, orders.Config{Variant: dt.variant})
	defer api.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return idemcheck.Report{}, idemcheck.Unavailablef("demo: listen on loopback: %v", err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	cfg := OrdersConfig(&url.URL{Scheme: "http", Host: ln.Addr().String()}, pool)
	cfg.Name, cfg.Seed = dt.label, seed
	res, err := certifyOne(ctx, cfg, out, stdout, stderr)
	if err != nil {
		return idemcheck.Report{}, err
	}
	return res.Report, nil
}

// OrdersConfig is the certification of examples/orders: its request, its
// effect query and its replay marker, with default sizes.
func OrdersConfig(base *url.URL, pool *pgxpool.Pool) certify.Config {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	return certify.Config{
		Endpoint: scenarios.Endpoint{
			Base: base, Method: "POST",
			Path: idemcheck.MustTemplate("/orders"),
			Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`),
		},
		Policy:     p,
		Options:    scenarios.Defaults,
		DB:         pool,
		DBName:     "the example's database",
		EffectSQL:  "SELECT count(*) FROM orders WHERE customer_id = $1",
		EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")},
	}
}

// demoDatabases returns n pools: n fresh databases on a throwaway cluster,
// or, with a DSN, n pools on that one database (every run's keys and
// intents are fresh, so the examples can share its tables).
func demoDatabases(ctx context.Context, dsn string, n int) ([]*pgxpool.Pool, func(), error) {
	var pools []*pgxpool.Pool
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if dsn != "" {
		for range n {
			d, err := targets.OpenDatabase(ctx, dsn)
			if err != nil {
				cleanup()
				return nil, nil, idemcheck.Unavailablef("%v", err)
			}
			closers = append(closers, d.Close)
			pools = append(pools, d.Pool)
		}
		return pools, cleanup, nil
	}
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		if errors.Is(err, targets.ErrNoDatabase) {
			return nil, nil, idemcheck.Unavailablef("%v", err)
		}
		return nil, nil, idemcheck.Unavailablef("demo: %v", err)
	}
	closers = append(closers, func() { _ = pg.Close() })
	for i := range n {
		d, err := pg.CreateDatabase(ctx, fmt.Sprintf("demo_%d", i+1))
		if err == nil {
			var p *pgxpool.Pool
			if p, err = pgxpool.New(ctx, d); err == nil {
				pools = append(pools, p)
				closers = append(closers, p.Close)
				continue
			}
		}
		cleanup()
		return nil, nil, idemcheck.Unavailablef("demo: %v", err)
	}
	return pools, cleanup, nil
}
