// Command orders serves the example orders API for idemcheck to certify.
//
//	PORT=8080 DATABASE_URL=postgres://... orders [-variant reference|check-then-insert] [-lease 30s]
//
// It listens on 127.0.0.1:$PORT (ADDR overrides the host), creates its
// tables, sweeps expired keys every minute and shuts down gracefully on
// SIGINT or SIGTERM. GET /healthz answers 200 once it is ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	defaultVariant := os.Getenv("ORDERS_VARIANT")
	if defaultVariant == "" {
		defaultVariant = string(orders.Reference)
	}
	variantFlag := flag.String("variant", defaultVariant, "reference or check-then-insert (env ORDERS_VARIANT)")
	lease := flag.Duration("lease", 30*time.Second, "how long a claim is held before a retry may take it over")
	flag.Parse()

	variant, err := orders.ParseVariant(*variantFlag)
	if err != nil {
		return err
	}
	port, dsn := os.Getenv("PORT"), os.Getenv("DATABASE_URL")
	if port == "" || dsn == "" {
		return errors.New("orders: PORT and DATABASE_URL are required")
	}
	host := os.Getenv("ADDR")
	if host == "" {
		host = "127.0.0.1"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	poolCfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("orders: DATABASE_URL: %w", err)
	}
	// pgx defaults to max(4, CPUs) connections; a burst of concurrent
	// requests would mostly queue for one instead of reaching the database.
	if !strings.Contains(dsn, "pool_max_conns") {
		poolCfg.MaxConns = 32
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("orders: %w", err)
	}
	defer pool.Close()
	if err := orders.Migrate(ctx, pool); err != nil {
		return err
	}

	api := orders.New(pool, orders.Config{Variant: variant, Lease: *lease, SweepEvery: time.Minute})
	defer api.Close()

	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("orders: %w", err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	slog.Info("orders: serving", "addr", ln.Addr().String(), "variant", variant, "lease", *lease)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("orders: %w", err)
	case <-ctx.Done():
	}
	// Let requests in flight finish: cutting them off mid-transaction is
	// safe (nothing commits half), but needlessly leaves work to retries.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("orders: shutdown: %w", err)
	}
	slog.Info("orders: stopped", "commits", api.Commits())
	return nil
}
