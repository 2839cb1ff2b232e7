package serve

import (
	"context"
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

	"github.com/jackc/pgx/v5/pgxpool"
)

// VariantFlag defines the -variant flag of an example API's own program
// on the command line's flag set: its default is $env, or else the first
// of variants (the reference), and its usage lists them all.
func VariantFlag[V ~string](env string, variants []V) *string {
	def := os.Getenv(env)
	if def == "" {
		def = string(variants[0])
	}
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = string(v)
	}
	return flag.String("variant", def, "one of "+strings.Join(names, ", ")+" (env "+env+")")
}

// Command is what an example API's own program (examples/orders/cmd/orders,
// examples/webhooks/cmd/webhooks) does once its flags are read: Run.
type Command struct {
	// Name names the API ("orders") in errors and log lines.
	Name string
	// ExitOnDBError makes every database connection fatal to the process
	// when it fails (ExitOnConnError).
	ExitOnDBError bool
	// FailAfterDBError makes the process answer 500 to every request but
	// GET /healthz once a database connection has failed under it
	// (FailAfterConnError).
	FailAfterDBError bool
	// RateLimit, when above 0, puts a rate limiter in front of the API
	// that lets each client have that many requests in the handler at
	// once and refuses the rest with 429 and Retry-After: 1 (RateLimit).
	RateLimit int
	// Migrate creates the API's tables.
	Migrate func(context.Context, *pgxpool.Pool) error
	// Handler makes the API on the migrated pool. stopped is called once
	// the server has shut down: it frees what the API holds and returns
	// what the "stopped" log line says (its commits, say).
	Handler func(pool *pgxpool.Pool) (h http.Handler, stopped func() []any)
	// Log is what the "serving" log line says besides the address.
	Log []any
}

// Run serves the API on $ADDR:$PORT (ADDR defaults to 127.0.0.1) with the
// database at $DATABASE_URL, both of PORT and DATABASE_URL required: it
// opens a pool sized for bursts (PoolConfig), migrates, and serves until
// SIGINT or SIGTERM, then shuts down gracefully.
func (c Command) Run() error {
	port, dsn := os.Getenv("PORT"), os.Getenv("DATABASE_URL")
	if port == "" || dsn == "" {
		return fmt.Errorf("%s: PORT and DATABASE_URL are required", c.Name)
	}
	host := os.Getenv("ADDR")
	if host == "" {
		host = "127.0.0.1"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	poolCfg, err := PoolConfig(dsn)
	if err != nil {
		return fmt.Errorf("%s: DATABASE_URL: %w", c.Name, err)
	}
	if c.ExitOnDBError {
		ExitOnConnError(&poolCfg.ConnConfig.Config, c.Name)
	}
	wrap := func(h http.Handler) http.Handler { return h }
	if c.FailAfterDBError {
		wrap = FailAfterConnError(&poolCfg.ConnConfig.Config, c.Name)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	defer pool.Close()
	if err := c.Migrate(ctx, pool); err != nil {
		return err
	}
	h, stopped := c.Handler(pool)
	h = wrap(h)
	if c.RateLimit > 0 {
		h = RateLimit(c.RateLimit)(h)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err == nil {
		slog.Info(c.Name+": serving", append([]any{"addr", ln.Addr().String()}, c.Log...)...)
		err = HTTP(ctx, ln, h, 10*time.Second)
	}
	said := stopped()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	slog.Info(c.Name+": stopped", said...)
	return nil
}
