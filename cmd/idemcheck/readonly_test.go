package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
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
