package orders_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
)

// paymentReply is a 201 from POST /payments.
type paymentReply struct {
	PaymentID   string
	OrderRef    string
	CustomerID  string
	AmountCents int64
	CreatedAt   string
}

func payment(t *testing.T, r result) paymentReply {
	t.Helper()
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var p paymentReply
	require.NoError(t, json.Unmarshal(r.body, &p), string(r.body))
	require.NotEmpty(t, p.PaymentID)
	require.NotEmpty(t, p.CreatedAt)
	return p
}

func TestPayments(t *testing.T) {
	f := newFixture(t, orders.Config{})

	key := newKey()
	first := f.postAt("/payments", key, `{"orderRef":"ord-7","amountCents":4000}`, "")
	p := payment(t, first)
	require.Equal(t, "ord-7", p.OrderRef)
	require.Empty(t, p.CustomerID)
	require.Equal(t, int64(4000), p.AmountCents)
	require.False(t, first.replayed())

	again := f.postAt("/payments", key, `{"amountCents":4000,"orderRef":"ord-7"}`, "")
	require.Equal(t, string(first.body), string(again.body))
	require.True(t, again.replayed())
	require.Equal(t, 1, f.paymentsFor(key))

	// A payment on account takes an order's shape.
	onAccount := newKey()
	q := payment(t, f.postAt("/payments", onAccount, orderBody, ""))
	require.Equal(t, "cust-42", q.CustomerID)
	require.Empty(t, q.OrderRef)
	require.Equal(t, int64(1999), q.AmountCents)
	require.Equal(t, 1, f.paymentsFor(onAccount))
	require.Zero(t, f.ordersFor(onAccount))

	requireProblem(t, f.postAt("/payments", key, `{"orderRef":"ord-7","amountCents":4001}`, ""), http.StatusUnprocessableEntity)
	require.Equal(t, int64(2), f.api.Commits())
}

func TestPaymentBadRequests(t *testing.T) {
	f := newFixture(t, orders.Config{})
	requireProblem(t, f.postAt("/payments", "", `{"orderRef":"o","amountCents":1}`, ""), http.StatusBadRequest)
	for _, body := range []string{
		`{}`,
		`{"orderRef":"o"}`,
		`{"amountCents":1}`,
		`{"orderRef":"","amountCents":1}`,
		`{"orderRef":"o","amountCents":0}`,
		`{"orderRef":"o","amountCents":"1"}`,
		`{"orderRef":"o","totalCents":1}`,
		`{"customerId":"c","amountCents":1}`,
		`{"orderRef":"o","amountCents":1,"customerId":"c"}`,
		`{"customerId":"c"}`,
		`{"customerId":"c","totalCents":1,"note":"x"}`,
		`[]`,
	} {
		key := newKey()
		requireProblem(t, f.postAt("/payments", key, body, ""), http.StatusBadRequest)
		require.Zero(t, f.keyRows(key), "body %q", body)
	}
	// A list needs its filter: never the whole table.
	resp, err := client.Get(f.url + "/payments")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	del, err := http.NewRequest(http.MethodDelete, f.url+"/payments", nil)
	require.NoError(t, err)
	resp, err = client.Do(del)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Zero(t, f.api.Commits())
}

// One key table serves both endpoints, and the fingerprint tells them
// apart: an order's key sent to /payments is a different request, whatever
// its body, and the order's reply never answers it.
func TestKeyScopedByEndpoint(t *testing.T) {
	f := newFixture(t, orders.Config{})
	key := newKey()
	order := f.post(key, orderBody)
	require.Equal(t, http.StatusCreated, order.status, string(order.body))

	requireProblem(t, f.postAt("/payments", key, orderBody, ""), http.StatusUnprocessableEntity)
	requireProblem(t, f.postAt("/payments", key, `{"orderRef":"ord-1","amountCents":1999}`, ""), http.StatusUnprocessableEntity)
	require.Zero(t, f.paymentsFor(key))

	// And the other way round.
	payKey := newKey()
	payment(t, f.postAt("/payments", payKey, orderBody, ""))
	requireProblem(t, f.post(payKey, orderBody), http.StatusUnprocessableEntity)
	require.Zero(t, f.ordersFor(payKey))

	again := f.post(key, orderBody)
	require.Equal(t, string(order.body), string(again.body), "the order's key is untouched")
	require.True(t, again.replayed())
}

// Keys belong to the client that sent them (the Authorization header): the
// same key from another client is that client's own request.
func TestKeysScopedPerClient(t *testing.T) {
	f := newFixture(t, orders.Config{})
	key := newKey()
	ids := map[string]string{}
	for _, auth := range []string{"Bearer alice", "Bearer bob", ""} {
		r := f.postAt("/orders", key, orderBody, auth)
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		require.False(t, r.replayed(), "client %q", auth)
		ids[auth] = r.orderID(t)
	}
	require.Len(t, map[string]bool{ids["Bearer alice"]: true, ids["Bearer bob"]: true, ids[""]: true}, 3)
	require.Equal(t, 3, f.ordersFor(key))

	// Each client's retry replays its own order.
	for auth, id := range ids {
		r := f.postAt("/orders", key, orderBody, auth)
		require.True(t, r.replayed(), "client %q", auth)
		require.Equal(t, id, r.orderID(t), "client %q", auth)
	}
	// A different body is judged against the client's own key only.
	requireProblem(t, f.postAt("/orders", key, `{"customerId":"x","totalCents":1}`, "Bearer alice"), http.StatusUnprocessableEntity)
	r := f.postAt("/orders", key, `{"customerId":"x","totalCents":1}`, "Bearer carol")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	// The credential itself is never stored, only its hash.
	var stored int
	require.NoError(t, f.pool.QueryRow(t.Context(),
		`SELECT count(*) FROM idempotency_keys WHERE position('alice'::bytea IN client) > 0`).Scan(&stored))
	require.Zero(t, stored)
	require.Equal(t, int64(4), f.api.Commits())
}

// A declined charge is an outcome of executing the request: it is saved
// and replayed, and only a new key charges again.
func TestDeclineSavedAndReplayed(t *testing.T) {
	f := newFixture(t, orders.Config{})
	body := fmt.Sprintf(`{"customerId":"cust-soft","totalCents":%d}`, orders.DeclineOnceCents)
	key := newKey()
	first := f.post(key, body)
	requireProblem(t, first, http.StatusPaymentRequired)
	require.False(t, first.replayed())

	again := f.post(key, body)
	require.Equal(t, http.StatusPaymentRequired, again.status)
	require.Equal(t, string(first.body), string(again.body))
	require.True(t, again.replayed())
	require.Zero(t, f.ordersFor(key))

	// The soft decline has cleared: a new intent is approved.
	other := newKey()
	r := f.post(other, body)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Equal(t, 1, f.ordersFor(other))

	// Payments go through the same processor.
	payKey := newKey()
	pay := f.postAt("/payments", payKey, fmt.Sprintf(`{"orderRef":"ord-soft","amountCents":%d}`, orders.DeclineOnceCents), "")
	requireProblem(t, pay, http.StatusPaymentRequired)
	require.Zero(t, f.paymentsFor(payKey))
	require.Equal(t, int64(1), f.api.Commits(), "a decline is not an effect")
}
