package orders

// NarrowCheckThenInsert: check-then-insert with the narrowest window a
// handler can have between two statements, on purpose. DO NOT COPY.
//
// It reads the key and, finding it absent, writes the order and the key
// with its saved reply in one statement, sent at once: the handler does
// nothing between learning that the key is absent and sending the write
// (about a microsecond of Go), and the database runs the write one round
// trip after the read. Copies that arrive together must both read before
// either's single write commits; a burst whose attempts reach the handler
// further apart than that round trip misses it, which on a busy machine is
// most bursts.
//
// idemcheck schedules the race at the database link for a target it
// starts: every copy's write is held until every copy has read, so the
// duplicate shows in every round whatever the width of the window. The
// anomalies are those of check-then-insert: duplicate-effect and
// multiple-created. The reference closes the gap the same way: a claim by
// a unique constraint before any work.

import (
	"net/http"
	"time"

	"github.com/google/uuid"
)

// NarrowCheckThenInsert reads the key, then writes the order and the key
// in one statement.
const NarrowCheckThenInsert Variant = "narrow-check-then-insert"

// narrowCheckThenInsert replaces the whole flow after parsing.
func narrowCheckThenInsert(st *steps) { st.create = (*Server).createNarrowCheckThenInsert }

func (s *Server) createNarrowCheckThenInsert(w http.ResponseWriter, r *http.Request, req request) {
	if req.op.kind != orderKind {
		s.createCheckThenInsert(w, r, req)
		return
	}
	ctx := r.Context()

	// 1. Check.
	if s.answerKnownKey(w, r, req) {
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}
	// 2. Act and remember in one write. THE BUG: the read above is one
	// statement and this write another; every copy that read before any
	// copy's write committed gets here.
	id, at := uuid.NewString(), time.Now()
	rep, err := render(req.op, id, at, http.StatusCreated)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	_, err = s.pool.Exec(ctx, `
		WITH o AS (
			INSERT INTO orders (id, client, customer_id, total_cents, idempotency_key, created_at)
			VALUES ($1, $2, $3, $4, $5, $6))
		INSERT INTO idempotency_keys
			(client, key, fingerprint, status, token, locked_until, response_status, content_type, response_body, finished_at)
		VALUES ($2, $5, $7, 'done', $8, now(), $9, $10, $11, now())
		ON CONFLICT (client, key) DO UPDATE SET
			status = 'done', token = excluded.token, response_status = excluded.response_status,
			content_type = excluded.content_type, response_body = excluded.response_body,
			finished_at = excluded.finished_at`,
		id, req.client, req.op.customerID, req.op.cents, req.key, at,
		req.fingerprint, uuid.NewString(), rep.status, rep.contentType, rep.body)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	s.commits.Add(1)
	rep.write(w, false)
}
