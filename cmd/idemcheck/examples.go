package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/examples/webhooks"
)

// exampleServerCommand is the hidden command that serves one of the
// example APIs. The demo starts idemcheck itself as its target process, so
// that it can crash and restart it with no other binary to build.
const exampleServerCommand = "__example-server"

// runExampleServer serves examples/orders or examples/webhooks on
// 127.0.0.1:$PORT with $DATABASE_URL, until the process is told to stop.
func runExampleServer(ctx context.Context, args []string, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return 0, idemcheck.Usagef("%s: name orders or webhooks", exampleServerCommand)
	}
	app := args[0]
	fs := flag.NewFlagSet(exampleServerCommand, flag.ContinueOnError)
	variant := fs.String("variant", "reference", "the example's variant")
	lease := fs.Duration("lease", 30*time.Second, "orders: the lease on a claimed key")
	exitOnDBError := fs.Bool("exit-on-db-error", false, "exit with status 1 when a database connection fails under the process, as a Node service using pg with no 'error' handler does")
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return 0, err
	}
	port, dsn := os.Getenv("PORT"), os.Getenv("DATABASE_URL")
	if port == "" || dsn == "" {
		return 0, idemcheck.Usagef("%s: PORT and DATABASE_URL are required", exampleServerCommand)
	}
	cfg, err := serve.PoolConfig(dsn)
	if err != nil {
		return 0, idemcheck.Usagef("%s: DATABASE_URL: %v", exampleServerCommand, err)
	}
	if *exitOnDBError {
		serve.ExitOnConnError(&cfg.ConnConfig.Config, app)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, idemcheck.Unavailablef("%s: %v", exampleServerCommand, err)
	}
	defer pool.Close()

	var handler http.Handler
	switch app {
	case "orders":
		v, err := orders.ParseVariant(*variant)
		if err != nil {
			return 0, idemcheck.Usagef("%v", err)
		}
		if err := orders.Migrate(ctx, pool); err != nil {
			return 0, idemcheck.Unavailablef("%v", err)
		}
		api := orders.New(pool, orders.Config{Variant: v, Lease: *lease, SweepEvery: time.Minute})
		defer api.Close()
		handler = api
	case "webhooks":
		v, err := webhooks.ParseVariant(*variant)
		if err != nil {
			return 0, idemcheck.Usagef("%v", err)
		}
		if err := webhooks.Migrate(ctx, pool); err != nil {
			return 0, idemcheck.Unavailablef("%v", err)
		}
		handler = webhooks.New(pool, webhooks.Config{Variant: v})
	default:
		return 0, idemcheck.Usagef("%s: unknown example %q: use orders or webhooks", exampleServerCommand, app)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return 0, idemcheck.Unavailablef("%s: %v", exampleServerCommand, err)
	}
	if err := serve.HTTP(ctx, ln, handler, 5*time.Second); err != nil && ctx.Err() == nil {
		return 0, idemcheck.Unavailablef("%s: %v", exampleServerCommand, err)
	}
	fmt.Fprintf(stderr, "%s %s: stopped\n", exampleServerCommand, app)
	return idemcheck.ExitHeld, nil
}
