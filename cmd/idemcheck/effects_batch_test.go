package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// effectsDB is a database with n intents' orders: intent i has i%3 orders.
func effectsDB(tb testing.TB, n int) (*pgxpool.Pool, []idemcheck.Intent) {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.DSN(tb))
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id text NOT NULL);
		CREATE INDEX ON orders (customer_id);
		CREATE TABLE canary (id int); INSERT INTO canary VALUES (1), (2), (3)`)
	require.NoError(tb, err)
	_, err = pool.Exec(ctx, `INSERT INTO orders (customer_id) SELECT 'ic-t-' || i FROM generate_series(1, $1) i, generate_series(1, 2) k WHERE k <= i % 3`, n)
	require.NoError(tb, err)
	ins := make([]idemcheck.Intent, n)
	for i := range ins {
		ins[i] = idemcheck.Intent{ID: fmt.Sprintf("ic-t-%d", i+1), Seq: i + 1, Check: idemcheck.CheckSoak}
	}
	return pool, ins
}

func countQuery(pool *pgxpool.Pool, sql string) *scenarios.Effects {
	tpl, err := idemcheck.ParseTemplate("{{intent}}")
	if err != nil {
		panic(err)
	}
	return &scenarios.Effects{Pool: pool, SQL: sql, Args: []idemcheck.Template{tpl}}
}

// A batch counts each intent's effects as the query run for that intent
// alone does, in order.
func TestEffectsCountBatch(t *testing.T) {
	pool, ins := effectsDB(t, 700)
	e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
	ctx := context.Background()
	for start := 0; start < len(ins); start += scenarios.EffectBatch {
		batch := ins[start:min(start+scenarios.EffectBatch, len(ins))]
		obs, err := e.CountBatch(ctx, batch)
		require.NoError(t, err)
		require.Len(t, obs, len(batch))
		for i, o := range obs {
			one, err := e.Count(ctx, batch[i])
			require.NoError(t, err)
			assert.Equal(t, one, o)
			assert.EqualValues(t, batch[i].Seq%3, o.Effects, batch[i].ID)
		}
	}
}

// A batch is as read-only as one query: a query that writes fails, and the
// database is left as it was.
func TestEffectsCountBatchNeverWrites(t *testing.T) {
	pool, ins := effectsDB(t, 10)
	ctx := context.Background()
	e := countQuery(pool, "WITH d AS (DELETE FROM canary RETURNING 1) SELECT count(*) FROM d WHERE $1::text IS NOT NULL")
	_, err := e.CountBatch(ctx, ins)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read-only transaction")
	var canary int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM canary").Scan(&canary))
	assert.Equal(t, 3, canary)
}

// Intents counted per second, one query per intent and in batches, on the
// test PostgreSQL (go test -run '^$' -bench EffectsCount ./cmd/idemcheck).
func BenchmarkEffectsCount(b *testing.B) {
	pool, ins := effectsDB(b, 20000)
	e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
	ctx := context.Background()
	b.Run("one-by-one", func(b *testing.B) {
		n := 0
		for b.Loop() {
			_, err := e.Count(ctx, ins[n%len(ins)])
			require.NoError(b, err)
			n++
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "intents/s")
	})
	b.Run("batch", func(b *testing.B) {
		n := 0
		for b.Loop() {
			start := (n * scenarios.EffectBatch) % (len(ins) - scenarios.EffectBatch)
			_, err := e.CountBatch(ctx, ins[start:start+scenarios.EffectBatch])
			require.NoError(b, err)
			n++
		}
		b.ReportMetric(float64(n*scenarios.EffectBatch)/b.Elapsed().Seconds(), "intents/s")
	})
}
