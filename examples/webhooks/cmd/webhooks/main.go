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
	"flag"
	"fmt"
	"net/http"
	"os"

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
	variantFlag := serve.VariantFlag("WEBHOOKS_VARIANT", webhooks.Variants())
	flag.Parse()
	variant, err := webhooks.ParseVariant(*variantFlag)
	if err != nil {
		return err
	}

	return serve.Command{
		Name:    "webhooks",
		Migrate: webhooks.Migrate,
		Log:     []any{"variant", variant},
		Handler: func(pool *pgxpool.Pool) (http.Handler, func() []any) {
			api := webhooks.New(pool, webhooks.Config{Variant: variant})
			return api, func() []any { return []any{"commits", api.Commits()} }
		},
	}.Run()
}
