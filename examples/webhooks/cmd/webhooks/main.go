// Command webhooks serves the example webhook consumer (POST /webhooks) for
// idemcheck to certify: the reference, or a variant with one bug.
//
//	PORT=8080 DATABASE_URL=postgres://... [WEBHOOK_SECRET=whsec_...] webhooks [-variant NAME]
//
// With WEBHOOK_SECRET set, every delivery must carry a valid Standard
// Webhooks signature made with it, timestamped within five minutes, or it
// is refused with 401 before any work.
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
			// With a signing secret every delivery must be signed
			// (Standard Webhooks, 5-minute tolerance).
			api := webhooks.New(pool, webhooks.Config{Variant: variant, Secret: os.Getenv(webhooks.SecretEnv)})
			return api, func() []any { return []any{"commits", api.Commits()} }
		},
	}.Run()
}
