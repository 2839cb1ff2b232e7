package orders_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
)

// The broken variant must really be broken, or idemcheck's burst check
// proves nothing when it flags it. No sleeps help it along: the database
// round trips between its SELECT and its INSERTs are the whole window.
func TestCheckThenInsertCreatesDuplicates(t *testing.T) {
	f := newFixture(t, orders.Config{Variant: orders.CheckThenInsert})
	for round := range burstRounds {
		key := newKey()
		results := f.burst(burstSize, key, orderBody)
		fresh := 0
		for _, r := range results {
			require.Less(t, r.status, 500, "round %d: %s", round, r.body)
			if r.status == http.StatusCreated && !r.replayed() {
				fresh++
			}
		}
		if n := f.ordersFor(key); n > 1 {
			t.Logf("round %d: %d orders for one key, %d fresh 201s (duplicate-effect, multiple-created)", round, n, fresh)
			var total int64
			require.NoError(t, f.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders`).Scan(&total))
			require.Equal(t, total, f.api.Commits(), "every order inserted is counted")
			return
		}
	}
	t.Fatalf("no duplicate in %d rounds of %d concurrent requests", burstRounds, burstSize)
}

// It behaves like the reference when requests do not overlap, which is why
// sequential tests never catch it.
func TestCheckThenInsertSequentialLooksFine(t *testing.T) {
	f := newFixture(t, orders.Config{Variant: orders.CheckThenInsert})
	key := newKey()
	first := f.post(key, orderBody)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	again := f.post(key, orderBody)
	require.Equal(t, string(first.body), string(again.body))
	require.True(t, again.replayed())
	requireProblem(t, f.post(key, `{"customerId":"other","totalCents":1}`), http.StatusUnprocessableEntity)
	require.Equal(t, 1, f.ordersFor(key))
}
