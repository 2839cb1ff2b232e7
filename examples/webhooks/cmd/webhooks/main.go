// Command webhooks serves the example webhook consumer (POST /webhooks) for
// idemcheck to certify: the reference, or a variant with one bug.
//
//	PORT=8080 DATABASE_URL=postgres://... webhooks [-variant NAME]
//
// It listens on 127.0.0.1:$PORT (ADDR overrides the host), creates its
// tables and shuts down gracefully on SIGINT or SIGTERM. GET /healthz
// answers 200 once it is ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/examples/webhooks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	defaultVariant := os.Getenv("WEBHOOKS_VARIANT")
	if defaultVariant == "" {
		defaultVariant = string(webhooks.Reference)
	}
	var names []string
	for _, v := range webhooks.Variants() {
		names = append(names, string(v))
	}
	variantFlag := flag.String("variant", defaultVariant, "one of "+strings.Join(names, ", ")+" (env WEBHOOKS_VARIANT)")
	flag.Parse()

	variant, err := webhooks.ParseVariant(*variantFlag)
	if err != nil {
		return err
	}
	port, dsn := os.Getenv("PORT"), os.Getenv("DATABASE_URL")
	if port == "" || dsn == "" {
		return errors.New("webhooks: PORT and DATABASE_URL are required")
	}
	host := os.Getenv("ADDR")
	if host == "" {
		host = "127.0.0.1"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	poolCfg, err := serve.PoolConfig(dsn)
	if err != nil {
		return fmt.Errorf("webhooks: DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	defer pool.Close()
	if err := webhooks.Migrate(ctx, pool); err != nil {
		return err
	}
	api := webhooks.New(pool, webhooks.Config{Variant: variant})

	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	slog.Info("webhooks: serving", "addr", ln.Addr().String(), "variant", variant)
	if err := serve.HTTP(ctx, ln, api, 10*time.Second); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	slog.Info("webhooks: stopped", "commits", api.Commits())
	return nil
}
