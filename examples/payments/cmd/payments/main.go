// Command payments serves the example queue-backed payments API (POST
// /payments, answered 202 while a River worker makes the payment later)
// for idemcheck to certify: the reference, or a variant with one bug.
//
//	PORT=8080 DATABASE_URL=postgres://... payments [-variant NAME]
//
// It listens on 127.0.0.1:$PORT (ADDR overrides the host), runs River's
// migrations and creates its tables, works its jobs in the same process,
// and shuts down gracefully on SIGINT or SIGTERM. GET /healthz answers 200
// once it is ready.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/payments"
	"github.com/idemcheck/idemcheck/examples/serve"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	variantFlag := serve.VariantFlag("PAYMENTS_VARIANT", payments.Variants())
	flag.Parse()
	variant, err := payments.ParseVariant(*variantFlag)
	if err != nil {
		return err
	}
	return serve.Command{
		Name:    "payments",
		Migrate: payments.Migrate,
		Log:     []any{"variant", variant},
		Handler: func(pool *pgxpool.Pool) (http.Handler, func() []any) {
			api, err := payments.New(context.Background(), pool, payments.Config{Variant: variant})
			if err != nil {
				// River could not start: nothing would ever make a
				// payment, so the process does not serve at all.
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return api, func() []any {
				api.Close()
				return []any{"writes", api.Writes()}
			}
		},
	}.Run()
}
