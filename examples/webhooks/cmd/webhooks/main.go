// Command webhooks serves the example webhook consumer (POST /webhooks) for
// idemcheck to certify: the reference, or a variant with one bug.
//
//	PORT=8080 DATABASE_URL=postgres://... [WEBHOOK_SECRET=whsec_... [WEBHOOK_SIGNING=SCHEME]] webhooks [-variant NAME]
//
// With WEBHOOK_SECRET set, every delivery must carry a valid signature
// made with it, or it is refused with 401 before any work. WEBHOOK_SIGNING
// names the scheme, verified as its provider documents it:
// standard-webhooks (the default), stripe, github, shopify or slack; a
// scheme that signs a timestamp must be within five minutes.
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
	scheme, err := webhooks.ParseScheme(os.Getenv(webhooks.SchemeEnv))
	if err != nil {
		return err
	}
	secret := os.Getenv(webhooks.SecretEnv)
	log := []any{"variant", variant}
	if secret != "" {
		log = append(log, "signing", scheme)
	}

	return serve.Command{
		Name:    "webhooks",
		Migrate: webhooks.Migrate,
		Log:     log,
		Handler: func(pool *pgxpool.Pool) (http.Handler, func() []any) {
			// With a signing secret every delivery must be signed
			// under the scheme.
			api := webhooks.New(pool, webhooks.Config{Variant: variant, Secret: secret, Scheme: scheme})
			return api, func() []any { return []any{"commits", api.Commits()} }
		},
	}.Run()
}
