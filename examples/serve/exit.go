package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// ExitOnConnError makes every database connection of cfg fatal to the
// process: when one fails (the link dropped, the server reset it) and the
// pool did not close it itself, the process says so on stderr, each line
// starting with who, and exits with status 1. That is what a Node service using the pg driver does when
// no 'error' handler is attached to its pool or client: the driver emits
// 'error' ("Connection terminated unexpectedly"), nothing handles it, and
// the process dies. Every later request is refused until it is restarted.
func ExitOnConnError(cfg *pgconn.Config, who string) {
	onConnError(cfg, func(err error) {
		fmt.Fprintf(os.Stderr, "%s: database connection terminated unexpectedly: %v\n", who, err)
		fmt.Fprintf(os.Stderr, "%s: exiting: nothing handles a database connection error (-exit-on-db-error)\n", who)
		os.Exit(1)
	})
}

// onConnError wraps every database connection of cfg so that failed is
// called on each error of an established connection that its owner did
// not cause by closing it or by a deadline (the driver uses deadlines to
// interrupt reads on cancellation). A failed connect is an error the
// caller gets and handles, and is not reported.
func onConnError(cfg *pgconn.Config, failed func(error)) {
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, failed: failed}, nil
	}
}

// watchedConn reports the errors of an established connection (onConnError).
type watchedConn struct {
	net.Conn
	failed func(error)
	closed atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.check(err)
	return n, err
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.check(err)
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *watchedConn) check(err error) {
	if err == nil || c.closed.Load() || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return
	}
	c.failed(err)
}
