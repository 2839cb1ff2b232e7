package orders_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
)

// ordersOf counts the orders of a customer, whatever key they were stored under.
func (f *fixture) ordersOf(customer string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM orders WHERE customer_id = $1`, customer).Scan(&n))
	return n
}

func TestZooSavesValidationErrors(t *testing.T) {
	zooCase(t, orders.SavesValidationErrors, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		bad := f.post(key, `{"customerId":"cust-7","totalCents":"lots"}`)
		requireProblem(t, bad, http.StatusBadRequest)
		fixed := f.post(key, `{"customerId":"cust-7","totalCents":1999}`)
		if fixed.status != http.StatusCreated {
			require.Zero(t, f.ordersOf("cust-7"))
			return fmt.Sprintf("the corrected order under the rejected request's key got %d %s", fixed.status, fixed.body)
		}
		require.Equal(t, 1, f.ordersOf("cust-7"))
		again := f.post(key, `{"customerId":"cust-7","totalCents":1999}`)
		require.Equal(t, fixed.orderID(t), again.orderID(t), "the correction is the key's request from then on")
		require.True(t, again.replayed())
		return ""
	})
}

func TestZooTruncatesKeys(t *testing.T) {
	zooCase(t, orders.TruncatesKeys, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		prefix := newKey() + "-" + strings.Repeat("0123456789", 20)[:199-37]
		keyA, keyB := prefix+"a", prefix+"b"
		require.Len(t, keyA, 200)
		body := `{"customerId":"cust-long","totalCents":1999}`
		a := f.post(keyA, body)
		require.Equal(t, http.StatusCreated, a.status, string(a.body))
		b := f.post(keyB, body)
		require.Equal(t, http.StatusCreated, b.status, string(b.body))
		if a.orderID(t) == b.orderID(t) {
			require.Equal(t, 1, f.ordersOf("cust-long"))
			return fmt.Sprintf("a second key equal to the first in its first 199 characters got the first key's order %s (replayed: %v)", a.orderID(t), b.replayed())
		}
		require.Equal(t, 2, f.ordersOf("cust-long"))
		return ""
	})
}

// The reference refuses every key that is not one key of printable ASCII,
// at most 255 characters, and executes nothing for it; it takes the
// longest valid key whole.
func TestReferenceKeySyntax(t *testing.T) {
	f := newFixture(t, orders.Config{})
	for _, key := range []string{"", newKey() + "," + newKey(), strings.Repeat("k", 256), "caf\u00e9-" + newKey(), "tab\there"} {
		requireProblem(t, f.post(key, `{"customerId":"cust-bad-key","totalCents":1999}`), http.StatusBadRequest)
	}
	require.Zero(t, f.ordersOf("cust-bad-key"))

	longest := strings.Repeat("k", 254)
	for _, last := range []string{"a", "b"} {
		r := f.post(longest+last, `{"customerId":"cust-255","totalCents":1999}`)
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
	}
	require.Equal(t, 2, f.ordersOf("cust-255"))
}
