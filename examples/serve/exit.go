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
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			// A failed connect is an error the caller gets and handles.
			return nil, err
		}
		return &fatalConn{Conn: conn, who: who}, nil
	}
}

// fatalConn exits the process on the first error of an established
// connection that its owner did not cause by closing it or by a deadline
// (the driver uses deadlines to interrupt reads on cancellation).
type fatalConn struct {
	net.Conn
	who    string
	closed atomic.Bool
}

func (c *fatalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.check(err)
	return n, err
}

func (c *fatalConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.check(err)
	return n, err
}

func (c *fatalConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *fatalConn) check(err error) {
	if err == nil || c.closed.Load() || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: database connection terminated unexpectedly: %v\n", c.who, err)
	fmt.Fprintf(os.Stderr, "%s: exiting: nothing handles a database connection error (-exit-on-db-error)\n", c.who)
	os.Exit(1)
}
