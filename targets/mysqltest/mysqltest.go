// Package mysqltest gives tests a fresh, empty database each on a real
// MariaDB server, never a mock, as targets/pgtest does for PostgreSQL.
//
// A test package shares one throwaway server (targets.LocalMariaDB),
// started on first use and stopped when its tests end:
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		dsn := mysqltest.DSN(t) // mysql://root@127.0.0.1:port/t_1_…, dropped after the test
//		...
//	}
//
// Where the MariaDB server binary is missing, a test that asks for a
// database is skipped with the reason, except in CI (CI=true) or with
// IDEMCHECK_REQUIRE_MARIADB=1, where it fails: `make test` installs the
// server, so a skip there would only hide a broken setup.
//
// It is for tests only: nothing the module ships imports it.
package mysqltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/targets"
)

const (
	startTimeout = 2 * time.Minute
	sqlTimeout   = time.Minute
)

var (
	mu         sync.Mutex
	started    bool
	startErr   error
	missing    bool // the binary is not installed: a skip outside CI
	server     *targets.LocalMariaDB
	mainCalled atomic.Bool
	counter    atomic.Uint64
)

// Main runs a package's tests with one shared throwaway server, started
// lazily, and stops it after m.Run. It does not return.
func Main(m *testing.M, cleanups ...func()) {
	mainCalled.Store(true)
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if err := closeServer(); err != nil {
		fmt.Fprintf(os.Stderr, "mysqltest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Close stops the shared server, for a package whose TestMain is another
// one's (pgtest.Main(m, mysqltest.Close)); it marks the server as one
// that will be stopped, as Main does.
func Close() {
	if err := closeServer(); err != nil {
		fmt.Fprintf(os.Stderr, "mysqltest: %v\n", err)
	}
}

// Use declares that the package's TestMain stops the server (with Close):
// call it from that TestMain before m.Run.
func Use() { mainCalled.Store(true) }

func closeServer() error {
	mu.Lock()
	defer mu.Unlock()
	if server == nil {
		return nil
	}
	err := server.Close()
	server, started, startErr = nil, false, nil
	return err
}

// Required reports whether a missing MariaDB must fail the tests rather
// than skip them: in CI, or when IDEMCHECK_REQUIRE_MARIADB=1.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("IDEMCHECK_REQUIRE_MARIADB") == "1"
}

// NeedBinary skips the test where the MariaDB server binary is missing
// (fails it where Required), for a test that starts MariaDB by other
// means (a target idemcheck starts on a throwaway one).
func NeedBinary(tb testing.TB) {
	tb.Helper()
	if _, err := targets.FindMariaDB(); err != nil {
		if !Required() {
			tb.Skipf("mysqltest: %v (make mariadb installs it)", err)
		}
		tb.Fatalf("mysqltest: %v", err)
	}
}

// Server returns the shared server, starting it on first use; a missing
// binary skips the test (fails it where Required).
func Server(tb testing.TB) *targets.LocalMariaDB {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("mysqltest: the shared MariaDB server is stopped by mysqltest.Main; add func TestMain(m *testing.M) { mysqltest.Main(m) } to this package's tests")
	}
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		if _, err := targets.FindMariaDB(); err != nil {
			missing, startErr = true, err
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			server, startErr = targets.StartLocalMariaDB(ctx)
			cancel()
		}
	}
	if startErr != nil {
		if missing && !Required() {
			tb.Skipf("mysqltest: %v (make mariadb installs it)", startErr)
		}
		tb.Fatalf("mysqltest: no MariaDB server for this test: %v", startErr)
	}
	return server
}

// DSN returns the mysql:// URL of a fresh, empty database for this test,
// dropped in tb.Cleanup.
func DSN(tb testing.TB) string {
	tb.Helper()
	s := Server(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("t_%d_%s", counter.Add(1), hex.EncodeToString(b[:]))
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	dsn, err := s.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("mysqltest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		if err := s.DropDatabase(ctx, name); err != nil {
			tb.Errorf("mysqltest: %v", err)
		}
	})
	return dsn
}
