package orders

// CheckThenInsert: the classic idempotency bug, on purpose. DO NOT COPY.
//
// It looks reasonable and passes every sequential test: look the key up;
// if it is finished, replay; otherwise create the order and then remember
// the key with its reply. The flaw is the gap between the look-up and the
// write. Copies of a request that arrive together (a client retrying after
// a timeout while the first attempt is still running, or a proxy and a
// client both retrying) all find the key absent, and each creates an order.
// The key row is written last-writer-wins, so the saved reply names only
// one of them, and every client got a fresh 201: none can tell that a
// duplicate exists.
//
// No sleeps widen the window: the real database round trips between the
// SELECT and the INSERTs are enough. idemcheck's concurrent-burst check
// catches it and reports the anomalies duplicate-effect (more than one
// order for one key) and multiple-created (more than one fresh 201 for one
// key). The reference closes the gap by claiming the key with a single
// atomic INSERT ... ON CONFLICT DO NOTHING before doing any work.

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CheckThenInsert reads the key, does the work, then writes the key, so
// concurrent copies of a request each do the work.
const CheckThenInsert Variant = "check-then-insert"

// checkThenInsert replaces the whole flow after parsing.
func checkThenInsert(st *steps) { st.create = (*Server).createCheckThenInsert }

func (s *Server) createCheckThenInsert(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()

	// 1. Check.
	if s.answerKnownKey(w, r, req) {
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}

	// 2. Act. THE BUG: every copy that passed the check before any copy
	// reached step 3 gets here, and each commits its own order.
	rep, created, err := s.execute(ctx, s.pool, req)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	if created {
		s.commits.Add(1)
	}

	// 3. Remember. Last writer wins, so the saved reply names one of the
	// orders and the others are orphans. (A second bug: if this write
	// fails, the order exists but a retry creates another.)
	_, err = s.pool.Exec(ctx, `
		INSERT INTO idempotency_keys
			(client, key, fingerprint, status, token, locked_until, response_status, content_type, response_body, finished_at)
		VALUES ($1, $2, $3, 'done', $4, now(), $5, $6, $7, now())
		ON CONFLICT (client, key) DO UPDATE SET
			status = 'done', token = excluded.token, response_status = excluded.response_status,
			content_type = excluded.content_type, response_body = excluded.response_body,
			finished_at = excluded.finished_at`,
		req.client, req.key, req.fingerprint, uuid.NewString(), rep.status, rep.contentType, rep.body)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	rep.write(w, false)
}

// answerKnownKey is the check of the check-then-insert variants: a read of
// the key, with no claim. It answers and reports true when the key is
// known: another fingerprint (422), finished (the replay), or a claim left
// running by a reference server on the same database (409).
func (s *Server) answerKnownKey(w http.ResponseWriter, r *http.Request, req request) bool {
	k, err := s.readKey(r.Context(), req)
	switch {
	case err == nil && !bytes.Equal(k.fingerprint, req.fingerprint):
		writeMismatch(w)
	case err == nil && k.status == "done":
		s.st.replay(s, w, r, req, k)
	case err == nil:
		writeConflict(w, k.retryAfter)
	case !errors.Is(err, pgx.ErrNoRows):
		writeInternal(w, r, err)
	default:
		return false
	}
	return true
}
