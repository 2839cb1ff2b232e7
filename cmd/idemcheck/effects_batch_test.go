package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/runner"
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

func countQuery(pool *pgxpool.Pool, sql string) *runner.Effects {
	tpl, err := idemcheck.ParseTemplate("{{intent}}")
	if err != nil {
		panic(err)
	}
	return &runner.Effects{Pool: pool, SQL: sql, Args: []idemcheck.Template{tpl}}
}

// A batch counts each intent's effects as the query run for that intent
// alone does, in order.
func TestEffectsCountBatch(t *testing.T) {
	pool, ins := effectsDB(t, 700)
	e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
	ctx := context.Background()
	for start := 0; start < len(ins); start += runner.EffectBatch {
		batch := ins[start:min(start+runner.EffectBatch, len(ins))]
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

// Intents counted per second, one query per intent, in pipelined batches
// and with the batch form, on the test PostgreSQL (go test -run '^$' -bench EffectsCount ./cmd/idemcheck).
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
			start := (n * runner.EffectBatch) % (len(ins) - runner.EffectBatch)
			_, err := e.CountBatch(ctx, ins[start:start+runner.EffectBatch])
			require.NoError(b, err)
			n++
		}
		b.ReportMetric(float64(n*runner.EffectBatch)/b.Elapsed().Seconds(), "intents/s")
	})
	// The batch form (--effect-batch-sql): the same batch as one query
	// taking an array, with the query for the batch's first intent beside
	// it, in one READ ONLY transaction.
	b.Run("batch-sql", func(b *testing.B) {
		e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
		e.BatchSQL = arraySQL
		n := 0
		for b.Loop() {
			start := (n * runner.EffectBatch) % (len(ins) - runner.EffectBatch)
			_, err := e.CountBatch(ctx, ins[start:start+runner.EffectBatch])
			require.NoError(b, err)
			n++
		}
		b.ReportMetric(float64(n*runner.EffectBatch)/b.Elapsed().Seconds(), "intents/s")
	})
}

const arraySQL = "SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"

// The batch form counts each intent's effects as the query run for that
// intent alone does, in order, intents without effects 0; a batch form
// that counts otherwise is caught on the batch's first intent.
func TestEffectsCountBatchSQL(t *testing.T) {
	pool, ins := effectsDB(t, 700)
	e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
	e.BatchSQL = arraySQL
	ctx := context.Background()
	require.NoError(t, e.TryBatch(ctx))
	for start := 0; start < len(ins); start += runner.EffectBatch {
		batch := ins[start:min(start+runner.EffectBatch, len(ins))]
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

	e.BatchSQL = "SELECT customer_id::text, count(*) + 1 FROM orders WHERE customer_id = ANY($1) GROUP BY 1"
	_, err := e.CountBatch(ctx, ins[:10])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "counted 2 for intent ic-t-1 (ic-t-1) where the effect query")
	assert.Contains(t, err.Error(), "counts 1: the two must count the same")
}

// The batch form is as read-only as the query: one that writes fails, and
// the database is left as it was.
func TestEffectsCountBatchSQLNeverWrites(t *testing.T) {
	pool, ins := effectsDB(t, 10)
	ctx := context.Background()
	e := countQuery(pool, "SELECT count(*) FROM orders WHERE customer_id = $1")
	e.BatchSQL = "WITH d AS (DELETE FROM canary RETURNING 1) SELECT k::text, count(*) FROM d, unnest($1::text[]) k GROUP BY 1"
	for _, try := range []func() error{
		func() error { return e.TryBatch(ctx) },
		func() error { _, err := e.CountBatch(ctx, ins); return err },
	} {
		err := try()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "read-only transaction")
	}
	var canary int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM canary").Scan(&canary))
	assert.Equal(t, 3, canary)
}
