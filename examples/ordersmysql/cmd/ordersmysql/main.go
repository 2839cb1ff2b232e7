// Command ordersmysql serves the orders reference on MySQL or MariaDB
// (package ordersmysql), or one of its variants (check-then-insert,
// no-fingerprint, separate-key-store, lease-no-fencing):
//
//	PORT=8080 MYSQL_DSN='user:pw@tcp(127.0.0.1:3306)/shop' ordersmysql [-variant check-then-insert] [-lease 30s]
//
// -lease is how long the leased variants (separate-key-store,
// lease-no-fencing) hold a claim before a retry may take it over.
//
// ORDERS_VARIANT names the variant too (the flag wins), for its container
// image, whose command line idemcheck --image does not set.
//
// It reads MYSQL_DSN (the Go driver's form), else DATABASE_URL (a
// mysql:// URL), both of which idemcheck --cmd --db-engine mysql sets, and
// listens on 127.0.0.1:$PORT until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemcheck/idemcheck/examples/ordersmysql"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ordersmysql:", err)
		os.Exit(1)
	}
}

func run() error {
	def := os.Getenv("ORDERS_VARIANT")
	if def == "" {
		def = ordersmysql.Reference
	}
	variant := flag.String("variant", def, "reference, check-then-insert, no-fingerprint, separate-key-store or lease-no-fencing (default $ORDERS_VARIANT, else reference)")
	lease := flag.Duration("lease", ordersmysql.DefaultLease, "how long a claim of the leased variants is held before a retry may take it over")
	flag.Parse()
	dsn := os.Getenv("MYSQL_DSN")
	if dsn == "" {
		dsn = ordersmysql.GoDSN(os.Getenv("DATABASE_URL"))
	}
	if dsn == "" {
		return errors.New("set MYSQL_DSN or DATABASE_URL")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, cancel := context.WithTimeout(ctx, time.Minute)
	s, err := ordersmysql.NewLeased(start, dsn, *variant, *lease)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("PORT")))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
