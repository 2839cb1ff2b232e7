// Package serve holds what the example APIs' servers share: a database
// pool sized for bursts, and an HTTP server that speaks HTTP/1.1 and h2c
// and shuts down gracefully. The orders and webhooks binaries are a
// Command each, and Example serves either of them by name: the demo program (examples/demo)
// and idemcheck's own tests start themselves with it as a target process.
// It is example code: the idemcheck command never imports it.
package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig parses dsn and sizes the pool for bursts: pgx defaults to
// max(4, CPUs) connections, and a burst of concurrent requests would
// mostly queue for one instead of reaching the database. A pool_max_conns
// in the DSN is kept.
func PoolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 32
	}
	return cfg, nil
}

// HTTP serves h on ln until ctx is done, then shuts down, letting requests
// in flight finish for up to grace: cutting them off mid-transaction is
// safe (nothing commits half), but needlessly leaves work to retries. It
// speaks HTTP/1.1 and HTTP/2 without TLS (h2c), as many services behind a
// proxy do, so a client may release a burst in one packet.
func HTTP(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return srv.Shutdown(shutdown)
}
