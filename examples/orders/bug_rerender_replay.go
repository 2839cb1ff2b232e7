package orders

// RerenderReplay: a replay re-reads the order and renders it as it is now,
// 200 OK like a GET, instead of returning the saved status and body.
//
// How it happens: the key table saves only the created id, not the reply
// ("we can always render the order again"), and the replay path calls the
// same code as GET /orders/{id}, which answers 200. Every field the first
// reply had is there, yet it is not the first reply: the status says
// "nothing was created" to a client that branches on 201, and any field
// that changed since (a status a background job moved on, a price
// recomputed, a timestamp of the response) tells the retrying client about
// a different moment than its first attempt would have. RFC 9110's rule
// for a retry is the same effect and the same answer.
//
// Here the rendering is the reference's own (same members, same values,
// read back from the row); only the status differs, the smallest honest
// form of the bug. idemcheck's sequential-replay check sends an intent
// twice, one after the other, and reports replay-mismatch: the same
// resource, another status.

import (
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// RerenderReplay answers a replay with a fresh 200 rendering of the row.
const RerenderReplay Variant = "rerender-replay"

// rerenderReplay replaces the replay.
func rerenderReplay(st *steps) { st.replay = (*Server).replayRerendered }

func (s *Server) replayRerendered(w http.ResponseWriter, r *http.Request, req request, k keyRow) {
	// THE BUG: what exists now, rendered now, instead of k.reply.
	op := operation{kind: req.op.kind}
	var id string
	var createdAt time.Time
	var err error
	if op.kind == orderKind {
		err = s.pool.QueryRow(r.Context(), `
			SELECT id, customer_id, total_cents, created_at FROM orders
			WHERE client = $1 AND idempotency_key = $2 ORDER BY created_at LIMIT 1`,
			req.client, req.key).Scan(&id, &op.customerID, &op.cents, &createdAt)
	} else {
		err = s.pool.QueryRow(r.Context(), `
			SELECT id, coalesce(order_ref, ''), coalesce(customer_id, ''), amount_cents, created_at FROM payments
			WHERE client = $1 AND idempotency_key = $2 ORDER BY created_at LIMIT 1`,
			req.client, req.key).Scan(&id, &op.orderRef, &op.customerID, &op.cents, &createdAt)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		k.reply.write(w, true) // nothing to re-read: a saved decline
		return
	}
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	rep, err := render(op, id, createdAt, http.StatusOK)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	rep.write(w, true)
}
