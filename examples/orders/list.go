package orders

import (
	"encoding/json"
	"net/http"
	"time"
)

// MaxListed bounds a list's answer: a list filtered by one customer or
// order reference is short.
const MaxListed = 1000

// The list endpoints read back what the create endpoints wrote, so a
// client without database access can count an intent's effects through the
// API itself (idemcheck's --effect-http):
//
//	GET /orders?customerId=C      {"data": [{"orderId", "customerId", "totalCents", "createdAt"}, ...]}
//	GET /payments?orderRef=R      {"data": [{"paymentId", "orderRef", "amountCents", "createdAt"}, ...]}
//	GET /payments?customerId=C    payments on account
//
// The filter is required, so a list is never the whole table. Lists are
// not scoped to the client (the Authorization header): this example has no
// accounts to keep apart, and every variant, whatever its key store, writes
// its effects to these tables, so a list counts what the database holds.
func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) {
	customer := r.URL.Query().Get("customerId")
	if customer == "" {
		writeProblem(w, http.StatusBadRequest, "the customerId query parameter is required")
		return
	}
	rows, err := s.pool.Query(r.Context(), `SELECT id::text, customer_id, total_cents, created_at FROM orders
		WHERE customer_id = $1 ORDER BY created_at, id LIMIT $2`, customer, MaxListed)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	defer rows.Close()
	type order struct {
		OrderID    string `json:"orderId"`
		CustomerID string `json:"customerId"`
		TotalCents int64  `json:"totalCents"`
		CreatedAt  string `json:"createdAt"`
	}
	out := []order{}
	for rows.Next() {
		var o order
		var at time.Time
		if err := rows.Scan(&o.OrderID, &o.CustomerID, &o.TotalCents, &at); err != nil {
			writeInternal(w, r, err)
			return
		}
		o.CreatedAt = at.UTC().Format(time.RFC3339Nano)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		writeInternal(w, r, err)
		return
	}
	writeList(w, out)
}

func (s *Server) listPayments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref, customer := q.Get("orderRef"), q.Get("customerId")
	if (ref == "") == (customer == "") {
		writeProblem(w, http.StatusBadRequest, "exactly one of the orderRef and customerId query parameters is required")
		return
	}
	rows, err := s.pool.Query(r.Context(), `SELECT id::text, coalesce(order_ref, ''), coalesce(customer_id, ''), amount_cents, created_at FROM payments
		WHERE ($1 <> '' AND order_ref = $1) OR ($2 <> '' AND customer_id = $2) ORDER BY created_at, id LIMIT $3`, ref, customer, MaxListed)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	defer rows.Close()
	type payment struct {
		PaymentID   string `json:"paymentId"`
		OrderRef    string `json:"orderRef,omitempty"`
		CustomerID  string `json:"customerId,omitempty"`
		AmountCents int64  `json:"amountCents"`
		CreatedAt   string `json:"createdAt"`
	}
	out := []payment{}
	for rows.Next() {
		var p payment
		var at time.Time
		if err := rows.Scan(&p.PaymentID, &p.OrderRef, &p.CustomerID, &p.AmountCents, &at); err != nil {
			writeInternal(w, r, err)
			return
		}
		p.CreatedAt = at.UTC().Format(time.RFC3339Nano)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		writeInternal(w, r, err)
		return
	}
	writeList(w, out)
}

func writeList[T any](w http.ResponseWriter, items []T) {
	body, _ := json.Marshal(struct {
		Data []T `json:"data"`
	}{items})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
