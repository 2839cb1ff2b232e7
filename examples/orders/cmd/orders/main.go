// Command orders serves the example orders API (POST /orders and
// POST /payments) for idemcheck to certify: the reference, or one of the
// zoo's variants, each with one bug.
//
//	PORT=8080 DATABASE_URL=postgres://... orders [-variant NAME] [-autocommit] [-lease 30s] [-retention 24h] [-instances 1] [-exit-on-db-error] [-fail-after-db-error] [-rate-limit N] [-provider-tries N]
//
// It listens on 127.0.0.1:$PORT (ADDR overrides the host), creates its
// tables, sweeps expired keys every minute and shuts down gracefully on
// SIGINT or SIGTERM. GET /healthz answers 200 once it is ready.
//
// -instances N serves N independent instances of the API on the one port,
// requests dealt in turn, as N replicas behind a load balancer: they share
// the database and nothing else, which is what the in-memory-lock variant
// needs to show its bug.
//
// With PROVIDER_URL set, an approved order or payment is charged at that
// payment provider (POST $PROVIDER_URL/v1/charges), under an idempotency
// key derived from the client's; idemcheck --provider-env PROVIDER_URL
// serves a provider double there and checks the calls.
//
// -exit-on-db-error makes the process exit with status 1 when a database
// connection fails under it (a link cut at COMMIT, say), as a Node service
// using pg without an 'error' handler does. It is not a variant of the
// idempotency logic, which stays the chosen variant's, but a robustness
// flaw that combines with any of them: idemcheck must see the target die,
// restart it, and go on.
//
// -fail-after-db-error keeps the process up and answers 500 to every
// request but GET /healthz once a database connection has failed under it,
// as a Flask or Django worker on one global psycopg2 connection opened at
// import does: idemcheck must see that it did not recover, and not take
// the retries' 500s for saved errors.
//
// -rate-limit N puts a rate limiter in front of the API, as a gateway
// does on a staging endpoint: each client (its Authorization header) may
// have N requests in the handler at once, and the rest are refused with
// 429 and Retry-After: 1 before they reach it. It combines with any
// variant: idemcheck must tell those refusals from conflicts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/serve"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	variantFlag := serve.VariantFlag("ORDERS_VARIANT", orders.Variants())
	defaultLease := 30 * time.Second
	if v := os.Getenv("ORDERS_LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("orders: ORDERS_LEASE %q is not a positive duration such as 2s", v)
		}
		defaultLease = d
	}
	lease := flag.Duration("lease", defaultLease, "how long a claim is held before a retry may take it over (env ORDERS_LEASE)")
	retention := flag.Duration("retention", 0, "how long finished keys are kept (0: the variant's default, 24h for the reference)")
	autocommit := flag.Bool("autocommit", os.Getenv("ORDERS_AUTOCOMMIT") == "1",
		"do the work in one autocommitted statement, with no BEGIN or COMMIT (env ORDERS_AUTOCOMMIT=1)")
	instances := flag.Int("instances", 1, "independent instances of the API served on the port, requests dealt in turn")
	exitOnDBError := flag.Bool("exit-on-db-error", os.Getenv("ORDERS_EXIT_ON_DB_ERROR") != "",
		"exit with status 1 when a database connection fails under the process, as a Node service using pg with no 'error' handler does (env ORDERS_EXIT_ON_DB_ERROR)")
	failAfterDBError := flag.Bool("fail-after-db-error", os.Getenv("ORDERS_FAIL_AFTER_DB_ERROR") != "",
		"answer 500 to every request but GET /healthz once a database connection has failed under the process, as a Python worker on one global psycopg2 connection does (env ORDERS_FAIL_AFTER_DB_ERROR)")
	rateLimit := flag.Int("rate-limit", 0,
		"put a rate limiter in front of the API: at most N requests of one client (its Authorization header) in the handler at once, the rest refused with 429 and Retry-After: 1 (0: none)")
	providerTries := flag.Int("provider-tries", 0,
		"calls to the payment provider one attempt makes before it fails with 500 (0: 3; 1 passes a provider failure to the client at once)")
	flag.Parse()
	if *rateLimit < 0 {
		return errors.New("orders: -rate-limit must not be negative")
	}
	if *instances < 1 {
		return errors.New("orders: -instances must be at least 1")
	}
	variant, err := orders.ParseVariant(*variantFlag)
	if err != nil {
		return err
	}

	return serve.Command{
		Name:             "orders",
		ExitOnDBError:    *exitOnDBError,
		FailAfterDBError: *failAfterDBError,
		RateLimit:        *rateLimit,
		Migrate:          orders.Migrate,
		Log:              []any{"variant", variant, "autocommit", *autocommit, "lease", *lease, "instances", *instances, "rate-limit", *rateLimit, "provider", os.Getenv(orders.ProviderEnv) != ""},
		Handler: func(pool *pgxpool.Pool) (http.Handler, func() []any) {
			var apis []*orders.Server
			var handlers []http.Handler
			for range *instances {
				api := orders.New(pool, orders.Config{Variant: variant, Lease: *lease, Retention: *retention, SweepEvery: time.Minute, Autocommit: *autocommit,
					Provider: os.Getenv(orders.ProviderEnv), ProviderTries: *providerTries})
				apis = append(apis, api)
				handlers = append(handlers, api)
			}
			return orders.RoundRobin(handlers...), func() []any {
				var commits int64
				for _, api := range apis {
					commits += api.Commits()
					api.Close()
				}
				return []any{"commits", commits}
			}
		},
	}.Run()
}
