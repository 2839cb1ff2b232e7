package pgtest

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func currentDatabase(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var name string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&name))
	return name
}

func databaseExists(t *testing.T, dsn, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	return n == 1
}

var namePattern = regexp.MustCompile(`^t_\d+_[0-9a-f]{12}$`)

func TestDSNGivesIsolatedDatabases(t *testing.T) {
	start := time.Now()
	a := DSN(t)
	t.Logf("first DSN (server start + CREATE DATABASE) in %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	b := DSN(t)
	t.Logf("second DSN (CREATE DATABASE) in %v", time.Since(start).Round(time.Millisecond))
	require.NotEqual(t, a, b)
	nameA, nameB := currentDatabase(t, a), currentDatabase(t, b)
	assert.NotEqual(t, nameA, nameB)
	assert.Regexp(t, namePattern, nameA)
	assert.Regexp(t, namePattern, nameB)

	ctx := context.Background()
	connA, err := pgx.Connect(ctx, a)
	require.NoError(t, err)
	defer connA.Close(ctx)
	_, err = connA.Exec(ctx, "CREATE TABLE effects (k text PRIMARY KEY); INSERT INTO effects VALUES ('x')")
	require.NoError(t, err)

	connB, err := pgx.Connect(ctx, b)
	require.NoError(t, err)
	defer connB.Close(ctx)
	var exists bool
	require.NoError(t, connB.QueryRow(ctx, "SELECT to_regclass('effects') IS NOT NULL").Scan(&exists))
	assert.False(t, exists, "a table made in one test database is not visible in another")
}

func TestDatabaseIsDroppedAfterTheTest(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		dsn := DSN(t)
		name = currentDatabase(t, dsn)
		// Left open on purpose: the drop must not wait for it.
		conn, err := pgx.Connect(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
	})
	require.NotEmpty(t, name)
	assert.False(t, databaseExists(t, DSN(t), name), "database %s still exists after its test", name)
}

func TestPool(t *testing.T) {
	pool := Pool(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, "CREATE TABLE effects (n int)")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "INSERT INTO effects SELECT generate_series(1, 10)")
	require.NoError(t, err)
	var sum int
	require.NoError(t, pool.QueryRow(ctx, "SELECT sum(n) FROM effects").Scan(&sum))
	assert.Equal(t, 55, sum)
}

func TestParallelTestsGetTheirOwnDatabases(t *testing.T) {
	var (
		mu    sync.Mutex
		names = map[string]bool{}
	)
	t.Run("group", func(t *testing.T) {
		for i := range 8 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				pool := Pool(t)
				ctx := context.Background()
				_, err := pool.Exec(ctx, "CREATE TABLE effects (n int)")
				require.NoError(t, err, "every test may create the same table")
				var name string
				require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&name))
				mu.Lock()
				names[name] = true
				mu.Unlock()
			})
		}
	})
	assert.Len(t, names, 8)
}

func TestExternalServer(t *testing.T) {
	// Any database the test user may connect to stands in for the server
	// IDEMCHECK_TEST_DATABASE_URL would name.
	server := DSN(t)
	ext := &provider{externalURL: func() string { return server }}
	t.Cleanup(func() { assert.NoError(t, ext.close()) })

	var name string
	t.Run("inner", func(t *testing.T) {
		dsn := ext.dsn(t)
		name = currentDatabase(t, dsn)
		assert.Regexp(t, namePattern, name)
		assert.True(t, databaseExists(t, server, name))
	})
	assert.False(t, databaseExists(t, server, name), "dropped after the test")
}

// fakeTB records a Fatal instead of ending the real test.
type fakeTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	panic(f)
}

func TestNoServerFailsTheTestWithTheReason(t *testing.T) {
	ext := &provider{externalURL: func() string { return "postgres://u:secret@127.0.0.1:1/x" }}
	t.Cleanup(func() { _ = ext.close() })
	tb := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != tb {
				panic(r)
			}
		}()
		ext.dsn(tb)
		t.Fatal("dsn returned without a server")
	}()
	t.Log(tb.fatal)
	assert.Contains(t, tb.fatal, "no PostgreSQL server for this test")
	assert.Contains(t, tb.fatal, "IDEMCHECK_TEST_DATABASE_URL")
	assert.Contains(t, tb.fatal, "postgres://u:xxxxx@127.0.0.1:1/x")
	assert.NotContains(t, tb.fatal, "secret")
}

func TestDSNWithDatabase(t *testing.T) {
	tests := []struct{ base, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/t_1?sslmode=disable"},
		{"postgres://u:p@h:5432", "postgres://u:p@h:5432/t_1"},
		{"postgresql://u@h1:5432,h2:5433/db", "postgresql://u@h1:5432,h2:5433/t_1"},
		{"postgres://h?sslmode=disable", "postgres://h/t_1?sslmode=disable"},
		{"postgres://u:p%2Fx@h/db", "postgres://u:p%2Fx@h/t_1"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname='t_1'"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, dsnWithDatabase(tt.base, "t_1"), tt.base)
	}
}
