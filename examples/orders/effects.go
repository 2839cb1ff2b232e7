package orders

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// DeclineOnceCents is the amount the example's card processor stand-in
// declines the first time a payer is charged it, and approves after: a soft
// decline ("try again"), which card networks really send. The example has
// no card network, so, as payment sandboxes decline by magic amount, this
// amount makes an honest, deterministic failed first attempt: the request
// was executed and its outcome is a 402 that a retry with the same key must
// be told again, not a new charge. Every other amount is approved.
const DeclineOnceCents = 402

// execute carries the request out in q: it charges the payer and, when the
// charge is approved, writes the order or payment. It returns the reply:
// 201 with the new resource (created), or the 402 of a declined charge.
func (s *Server) execute(ctx context.Context, q db, req request) (rep reply, created bool, err error) {
	approved, err := charge(ctx, q, req.op)
	if err != nil {
		return reply{}, false, err
	}
	if !approved {
		return problem(http.StatusPaymentRequired,
			"the charge was declined; a new attempt needs a new Idempotency-Key"), false, nil
	}
	var chargeID string
	if s.cfg.Provider != "" && !s.st.chargeAfterCommit {
		if chargeID, err = s.pay(ctx, req, s.st.providerKey(ctx, req)); err != nil {
			return reply{}, false, err
		}
	}
	rep, err = insertEffect(ctx, q, req, chargeID)
	return rep, err == nil, err
}

// charge asks the processor stand-in. It keeps what it has declined in the
// example's database, written through q, so the decline commits or rolls
// back with the outcome that reports it: a failed transaction leaves no
// trace anywhere, and a saved 402 is always backed by a recorded decline.
func charge(ctx context.Context, q db, op operation) (approved bool, err error) {
	if op.cents != DeclineOnceCents {
		return true, nil
	}
	tag, err := q.Exec(ctx, `INSERT INTO processor_declines (payer) VALUES ($1) ON CONFLICT DO NOTHING`, op.payer())
	if err != nil {
		return false, fmt.Errorf("orders: processor: %w", err)
	}
	return tag.RowsAffected() == 0, nil // declined if this is the first time
}

// insertEffect writes the order or payment and builds the 201 reply for it.
// chargeID, the provider's charge, is stored with it ("" stores NULL).
func insertEffect(ctx context.Context, q db, req request, chargeID string) (reply, error) {
	op := req.op
	var id string
	var createdAt time.Time
	var err error
	switch op.kind {
	case orderKind:
		err = q.QueryRow(ctx, `
			INSERT INTO orders (client, customer_id, total_cents, idempotency_key, provider_charge_id)
			VALUES ($1, $2, $3, $4, nullif($5, ''))
			RETURNING id, created_at`,
			req.client, op.customerID, op.cents, req.key, chargeID).Scan(&id, &createdAt)
	case paymentKind:
		err = q.QueryRow(ctx, `
			INSERT INTO payments (client, order_ref, customer_id, amount_cents, idempotency_key, provider_charge_id)
			VALUES ($1, nullif($2, ''), nullif($3, ''), $4, $5, nullif($6, ''))
			RETURNING id, created_at`,
			req.client, op.orderRef, op.customerID, op.cents, req.key, chargeID).Scan(&id, &createdAt)
	default:
		panic("orders: unknown operation kind " + op.kind)
	}
	if err != nil {
		return reply{}, err
	}
	return render(op, id, createdAt, http.StatusCreated)
}

// render is the JSON of an order or payment.
func render(op operation, id string, createdAt time.Time, status int) (reply, error) {
	at := createdAt.UTC().Format(time.RFC3339Nano)
	var v any
	switch op.kind {
	case orderKind:
		v = struct {
			OrderID    string `json:"orderId"`
			CustomerID string `json:"customerId"`
			TotalCents int64  `json:"totalCents"`
			CreatedAt  string `json:"createdAt"`
		}{id, op.customerID, op.cents, at}
	default:
		v = struct {
			PaymentID   string `json:"paymentId"`
			OrderRef    string `json:"orderRef,omitempty"`
			CustomerID  string `json:"customerId,omitempty"`
			AmountCents int64  `json:"amountCents"`
			CreatedAt   string `json:"createdAt"`
		}{id, op.orderRef, op.customerID, op.cents, at}
	}
	body, err := json.Marshal(v)
	if err != nil {
		return reply{}, err
	}
	return reply{status, "application/json", body}, nil
}
