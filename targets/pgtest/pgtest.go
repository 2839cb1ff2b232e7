// Package pgtest gives tests a fresh, empty database each on a real
// PostgreSQL server, never a mock: idemcheck counts effects in PostgreSQL,
// and only the real server shows its locking, isolation and error codes.
//
// A test package shares one throwaway server, started on first use from the
// local binaries and stopped when its tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		pool := pgtest.Pool(t) // a fresh database, dropped after the test
//		...
//	}
//
// Set IDEMCHECK_TEST_DATABASE_URL to a server's DSN (its user must be
// allowed to create databases) to create the databases there instead, for
// example in CI without the PostgreSQL binaries.
//
// It is for tests only: it imports targets, and nothing the module ships
// imports it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/targets"
)

// envServerURL names the variable that points the tests at an existing
// server instead of a local throwaway one.
const envServerURL = "IDEMCHECK_TEST_DATABASE_URL"

// Time limits: generous, because a loaded CI machine is slow, but finite,
// so a hung server fails the test instead of the whole test binary.
const (
	startTimeout = 2 * time.Minute
	sqlTimeout   = time.Minute
)

var (
	// shared is the server of this test binary.
	shared = &provider{externalURL: func() string { return os.Getenv(envServerURL) }}
	// mainCalled records that Main runs the tests, so the server is sure
	// to be stopped.
	mainCalled atomic.Bool
	// counter numbers the databases, so names show creation order.
	counter atomic.Uint64
)

// Main runs a package's tests with one shared throwaway server, started
// lazily on first use (packages whose tests never ask pay nothing) and
// stopped after m.Run. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Main does not return: it exits with the tests' status, or 1 if the
// server could not be stopped and cleaned up, since a leak is a bug too.
//
// cleanups run after the tests and before the server stops, since Main
// exits the process and a deferred call in TestMain would never run.
func Main(m *testing.M, cleanups ...func()) {
	mainCalled.Store(true)
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if err := shared.close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// DSN returns the DSN of a fresh, empty database for this test, dropped in
// tb.Cleanup (open connections are ended: the drop uses WITH (FORCE)).
// Names are unique per test (t_<counter>_<random hex>), so parallel tests
// and test binaries sharing a server never meet.
//
// If IDEMCHECK_TEST_DATABASE_URL is set, databases are created on that
// server instead of a local one. If no server can be had, DSN fails the
// test (tb.Fatal) with the reason: tests never silently skip real behaviour.
func DSN(tb testing.TB) string {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("pgtest: the shared PostgreSQL server is stopped by pgtest.Main; add func TestMain(m *testing.M) { pgtest.Main(m) } to this package's tests")
	}
	return shared.dsn(tb)
}

// Pool returns a pgxpool on a fresh database (see DSN), closed in cleanup
// before the database is dropped.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	dsn := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	// The test server may be anywhere IDEMCHECK_TEST_DATABASE_URL says:
	// the loopback rule is for the databases users hand idemcheck.
	db, err := targets.OpenRemoteDatabase(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(db.Close)
	return db.Pool
}

// provider creates and drops test databases on one server: a local
// throwaway cluster, or the server named by externalURL.
type provider struct {
	externalURL func() string // read at first use, so tests may set it

	mu      sync.Mutex
	started bool  // a start was tried; err holds its outcome
	err     error // why there is no server, returned to every later caller

	local *targets.LocalPostgres // the local server, if that is the source

	// The external server, if that is the source: its DSN and a pool on the
	// database it names, used to create and drop the test databases.
	baseDSN string
	admin   *targets.Database
}

// start gets the server on first call; later calls return the first
// outcome, so a missing server costs one attempt, not one per test.
func (p *provider) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return p.err
	}
	p.started = true
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if base := p.externalURL(); base != "" {
		p.admin, p.err = targets.OpenDatabase(ctx, base)
		if p.err != nil {
			p.err = fmt.Errorf("%s is set but unusable: %w", envServerURL, p.err)
			return p.err
		}
		p.baseDSN = base
		return nil
	}
	p.local, p.err = targets.StartLocalPostgres(ctx)
	if p.err != nil {
		p.err = fmt.Errorf("%w (or set %s to a server where tests may create databases)", p.err, envServerURL)
	}
	return p.err
}

// dsn is DSN without the check for Main, so tests of this package can use
// their own provider.
func (p *provider) dsn(tb testing.TB) string {
	tb.Helper()
	if err := p.start(); err != nil {
		tb.Fatalf("pgtest: no PostgreSQL server for this test: %v", err)
	}
	name := newDatabaseName()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	dsn, err := p.create(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		// Not the test's context: it is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		if err := p.drop(ctx, name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

func (p *provider) create(ctx context.Context, name string) (string, error) {
	if p.local != nil {
		return p.local.CreateDatabase(ctx, name)
	}
	if _, err := p.admin.Pool.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("cannot create database %s on %s: %v", name, targets.RedactDSN(p.baseDSN), err)
	}
	return dsnWithDatabase(p.baseDSN, name), nil
}

func (p *provider) drop(ctx context.Context, name string) error {
	if p.local != nil {
		return p.local.DropDatabase(ctx, name)
	}
	if _, err := p.admin.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("cannot drop database %s on %s: %v", name, targets.RedactDSN(p.baseDSN), err)
	}
	return nil
}

// close stops the local server or disconnects from the external one. The
// provider can start again afterwards, which only tests of this package do.
func (p *provider) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	if p.local != nil {
		err = p.local.Close()
	}
	p.admin.Close()
	p.started, p.err, p.local, p.admin, p.baseDSN = false, nil, nil, nil, ""
	return err
}

// newDatabaseName returns t_<counter>_<random hex>: the counter orders a
// binary's databases, the random part keeps binaries sharing an external
// server (and reruns after a crash) from colliding.
func newDatabaseName() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("t_%d_%s", counter.Add(1), hex.EncodeToString(b[:]))
}

// dsnWithDatabase returns base pointing at database instead. URLs get their
// path replaced (by hand: multi-host URLs are not valid for net/url);
// key=value DSNs get a dbname setting appended, which wins because later
// settings override earlier ones.
func dsnWithDatabase(base, database string) string {
	for _, scheme := range []string{"postgresql://", "postgres://"} {
		rest, ok := strings.CutPrefix(base, scheme)
		if !ok {
			continue
		}
		hostStart := 0
		// The user info ends at an '@' before any '/', as pgx parses it.
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			hostStart = i + 1
		}
		head, query, hasQuery := strings.Cut(rest, "?")
		if hostStart > len(head) {
			hostStart = len(head)
		}
		if slash := strings.IndexByte(head[hostStart:], '/'); slash >= 0 {
			head = head[:hostStart+slash]
		}
		out := scheme + head + "/" + url.PathEscape(database)
		if hasQuery {
			out += "?" + query
		}
		return out
	}
	return base + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(database) + "'"
}
