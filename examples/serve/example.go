package serve

import (
	"context"
	"errors"
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
	"github.com/idemcheck/idemcheck/examples/webhooks"
)

// ExampleCommand is the hidden command by which a program that carries the
// examples serves one of them as a target process: the demo starts itself
// with it, so that idemcheck can crash and restart the example with no
// other binary to build, and idemcheck's own tests start their test binary
// with it.
const ExampleCommand = "__example-server"

// Example serves examples/orders or examples/webhooks on 127.0.0.1:$PORT
// with $DATABASE_URL until ctx ends. args are what follows ExampleCommand:
// the example's name, then its flags (-variant, -lease,
// -exit-on-db-error, -rate-limit, -provider-tries). Its errors carry
// idemcheck's exit codes (idemcheck.ExitCode).
func Example(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return idemcheck.Usagef("%s: name orders or webhooks", ExampleCommand)
	}
	app := args[0]
	fs := flag.NewFlagSet(ExampleCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	variant := fs.String("variant", "reference", "the example's variant")
	lease := fs.Duration("lease", 30*time.Second, "orders: the lease on a claimed key")
	exitOnDBError := fs.Bool("exit-on-db-error", false, "exit with status 1 when a database connection fails under the process, as a Node service using pg with no 'error' handler does")
	rateLimit := fs.Int("rate-limit", 0, "at most N requests of one client in the handler at once, the rest refused with 429 and Retry-After: 1 (0: none)")
	providerTries := fs.Int("provider-tries", 0, "orders: calls to the payment provider one attempt makes before it fails (0: 3)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintf(stderr, "Usage of %s orders|webhooks:\n", ExampleCommand)
			fs.PrintDefaults()
		}
		return idemcheck.Usagef("%s: %v", ExampleCommand, err)
	}
	if fs.NArg() > 0 {
		return idemcheck.Usagef("%s: unexpected argument %q", ExampleCommand, fs.Arg(0))
	}
	if *rateLimit < 0 || *providerTries < 0 {
		return idemcheck.Usagef("%s: -rate-limit and -provider-tries must not be negative", ExampleCommand)
	}
	port, dsn := os.Getenv("PORT"), os.Getenv("DATABASE_URL")
	if port == "" || dsn == "" {
		return idemcheck.Usagef("%s: PORT and DATABASE_URL are required", ExampleCommand)
	}
	cfg, err := PoolConfig(dsn)
	if err != nil {
		return idemcheck.Usagef("%s: DATABASE_URL: %v", ExampleCommand, err)
	}
	if *exitOnDBError {
		ExitOnConnError(&cfg.ConnConfig.Config, app)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return idemcheck.Unavailablef("%s: %v", ExampleCommand, err)
	}
	defer pool.Close()

	var handler http.Handler
	switch app {
	case "orders":
		v, err := orders.ParseVariant(*variant)
		if err != nil {
			return idemcheck.Usagef("%v", err)
		}
		if err := orders.Migrate(ctx, pool); err != nil {
			return idemcheck.Unavailablef("%v", err)
		}
		// Like the orders command, it charges the provider whose
		// URL it is handed in PROVIDER_URL, when it is.
		api := orders.New(pool, orders.Config{Variant: v, Lease: *lease, SweepEvery: time.Minute, Provider: os.Getenv(orders.ProviderEnv),
			ProviderTries: *providerTries})
		defer api.Close()
		handler = api
	case "webhooks":
		v, err := webhooks.ParseVariant(*variant)
		if err != nil {
			return idemcheck.Usagef("%v", err)
		}
		if err := webhooks.Migrate(ctx, pool); err != nil {
			return idemcheck.Unavailablef("%v", err)
		}
		handler = webhooks.New(pool, webhooks.Config{Variant: v})
	default:
		return idemcheck.Usagef("%s: unknown example %q: use orders or webhooks", ExampleCommand, app)
	}
	if *rateLimit > 0 {
		handler = RateLimit(*rateLimit)(handler)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return idemcheck.Unavailablef("%s: %v", ExampleCommand, err)
	}
	if err := HTTP(ctx, ln, handler, 5*time.Second); err != nil && ctx.Err() == nil {
		return idemcheck.Unavailablef("%s: %v", ExampleCommand, err)
	}
	fmt.Fprintf(stderr, "%s %s: stopped\n", ExampleCommand, app)
	return nil
}
