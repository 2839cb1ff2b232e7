package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/runner"
)

// An effect query runs read-only: a query that tries to write is refused
// with a usage error naming --effect-sql before any traffic is sent, in
// certify and soak alike, and the database is left as it was.
func TestEffectQueriesNeverWrite(t *testing.T) {
	_, dsn := ordersAPI(t, orders.Reference)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `CREATE TABLE canary (id int); INSERT INTO canary VALUES (1), (2), (3);
		INSERT INTO orders (customer_id, total_cents, idempotency_key) VALUES ('ic-preflight-1', 1, 'k-canary')`)
	require.NoError(t, err)

	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	writes := []string{
		"DELETE FROM orders WHERE customer_id = $1 RETURNING 1",
		"WITH d AS (DELETE FROM canary RETURNING 1) SELECT count(*) FROM d WHERE $1::text IS NOT NULL",
		"UPDATE orders SET total_cents = 2 WHERE customer_id = $1 RETURNING 1",
		"INSERT INTO canary SELECT 9 WHERE $1::text IS NOT NULL RETURNING 1",
	}
	for _, q := range writes {
		for _, cmd := range []string{"certify", "soak"} {
			args := []string{cmd, "--url", srv.URL, "--path", "/orders", "--body", `{"customerId":"{{intent}}"}`,
				"--db", dsn, "--effect-sql", q, "--effect-arg", "{{intent}}"}
			if cmd == "soak" {
				args = append(args, "--duration", "1s", "--rate", "10")
			}
			code, out, errOut := cli(t, args...)
			assert.Equal(t, idemcheck.ExitUsage, code, "%s %q\nstdout:\n%s\nstderr:\n%s", cmd, q, out, errOut)
			assert.Contains(t, errOut, "--effect-sql must only read", "%s %q", cmd, q)
		}
	}
	assert.Zero(t, sent.Load(), "nothing sent")
	var canary, kept int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM canary").Scan(&canary))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE idempotency_key = 'k-canary' AND total_cents = 1").Scan(&kept))
	assert.Equal(t, 3, canary, "the unrelated table is untouched")
	assert.Equal(t, 1, kept, "the order is neither deleted nor changed")
}

// Writes that pass a read-only transaction by: dblink_exec commits through
// a connection of its own, a replication slot outlives the rollback,
// pg_terminate_backend ends another session, and a user's volatile
// function may do anything. Each is refused by name before the query ever
// runs (PostgreSQL is asked which functions it calls), through certify,
// soak (--effect-sql and --effect-batch-sql) and a suite (blamed on its
// file and line), and nothing changes. The dblink extension must be there:
// without it the test fails, it does not skip.
func TestEffectQueriesCallNoWritingFunction(t *testing.T) {
	_, dsn := ordersAPI(t, orders.Reference)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, "CREATE EXTENSION dblink")
	require.NoError(t, err, "the dblink extension ships with PostgreSQL (Debian: postgresql-contrib); make postgres installs it")
	_, err = pool.Exec(ctx, `CREATE TABLE canary (id int); INSERT INTO canary VALUES (1);
		CREATE FUNCTION bump() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE canary SET id = id + 100; RETURN 1; END $$`)
	require.NoError(t, err)
	var port, db string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('port'), current_database()").Scan(&port, &db))
	victim, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer victim.Close()
	vc, err := victim.Acquire(ctx)
	require.NoError(t, err)
	defer vc.Release()
	var pid int
	require.NoError(t, vc.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	remote := fmt.Sprintf("host=127.0.0.1 port=%s dbname=%s user=postgres", port, db)
	cases := []struct{ sql, batch, name string }{
		{"SELECT count(*) FROM canary WHERE $1::text IS NOT NULL AND dblink_exec('" + remote + "', 'UPDATE canary SET id = 7') IS NOT NULL",
			"SELECT $1::text[]::text, count(*) FROM canary WHERE dblink_exec('" + remote + "', 'UPDATE canary SET id = 7') IS NOT NULL",
			"dblink_exec(text,text), which is from the extension dblink"},
		{"SELECT count(*) FROM (SELECT * FROM pg_create_physical_replication_slot('idemcheck_slot', true)) s WHERE $1::text IS NOT NULL",
			"SELECT $1::text[]::text, count(*) FROM pg_create_physical_replication_slot('idemcheck_slot', true)",
			"pg_create_physical_replication_slot(name,boolean,boolean), which is volatile"},
		{fmt.Sprintf("SELECT count(*) FROM orders WHERE customer_id = $1 OR pg_terminate_backend(%d)", pid),
			fmt.Sprintf("SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) OR pg_terminate_backend(%d) GROUP BY 1", pid),
			"pg_terminate_backend(integer,bigint), which is volatile"},
		{"WITH b AS (SELECT bump() AS n) SELECT count(*) FROM b WHERE $1::text IS NOT NULL",
			"SELECT x::text, count(*) FROM unnest($1::text[]) x WHERE x IN (SELECT bump()::text) GROUP BY 1",
			"bump(), which is volatile"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		base := []string{"--url", srv.URL, "--path", "/orders", "--body", `{"customerId":"{{intent}}"}`, "--db", dsn, "--effect-arg", "{{intent}}"}
		soak := []string{"soak", "--duration", "1s", "--rate", "10"}
		runs := []struct {
			args []string
			want string
		}{
			{append(append([]string{"certify"}, base...), "--effect-sql", c.sql), "--effect-sql must only read, and it calls " + c.name},
			{append(append(soak, base...), "--effect-sql", c.sql), "--effect-sql must only read, and it calls " + c.name},
			{append(append(soak, base...), "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-batch-sql", c.batch),
				"--effect-batch-sql must only read, and it calls " + c.name},
		}
		suite := filepath.Join(dir, fmt.Sprintf("suite%d.yaml", i))
		require.NoError(t, os.WriteFile(suite, []byte(fmt.Sprintf(`version: 1
target:
  url: %s
  db: %s
endpoints:
  - name: create order
    method: POST
    path: /orders
    body: '{"customerId":"{{intent}}"}'
    effect:
      sql: %q
      args: ["{{intent}}"]
`, srv.URL, dsn, c.sql)), 0o600))
		runs = append(runs, struct {
			args []string
			want string
		}{[]string{"run", "-f", suite}, suite + ":11"})
		for _, r := range runs {
			code, out, errOut := cli(t, r.args...)
			assert.Equal(t, idemcheck.ExitUsage, code, "%q\nstdout:\n%s\nstderr:\n%s", r.args, out, errOut)
			assert.Contains(t, errOut, r.want, "%q", r.args)
			assert.Contains(t, errOut, c.name, "%q", r.args)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		}
	}
	assert.Zero(t, sent.Load(), "nothing sent")
	var id, slots int
	require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM canary").Scan(&id))
	assert.Equal(t, 1, id, "the row is unchanged")
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&slots))
	assert.Zero(t, slots, "no replication slot made")
	assert.NoError(t, vc.Ping(ctx), "the other session is alive")
}

// Reading functions, operators, casts, CTEs, subqueries, ORDER BY and
// aggregates are no writes: a query made of them passes.
func TestEffectQueriesMayCallReadingFunctions(t *testing.T) {
	_, dsn := ordersAPI(t, orders.Reference)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	for _, q := range []string{
		"SELECT count(*) FROM orders WHERE customer_id = $1",
		"SELECT count(*) FROM orders WHERE lower(customer_id) = lower($1) AND created_at <= now() + interval '1 day' AND coalesce(total_cents, 0)::text <> 'x'",
		`SELECT count(*) FROM orders WHERE customer_id = $1 AND '{"a":1}'::jsonb->>'a' = '1' AND upper(customer_id) IN (SELECT DISTINCT upper(c) FROM unnest(ARRAY[$1]) c ORDER BY 1)`,
		"WITH o AS (SELECT customer_id, row_number() OVER (ORDER BY created_at) n FROM orders) SELECT count(*)::int FROM o WHERE customer_id = $1 AND (n, 1) > (0, 0)",
		"SELECT sum(length(customer_id))::bigint FROM orders WHERE customer_id = $1 AND id::text LIKE '%' AND NULLIF(customer_id, '') IS NOT NULL",
	} {
		assert.NoError(t, runner.CheckFunctions(ctx, pool, q), q)
	}
}
