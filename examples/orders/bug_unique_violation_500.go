package orders

// UniqueViolation500: the claim reads the key first and then INSERTs it
// plainly, so a concurrent copy that loses the race gets the database's
// unique violation as a 500.
//
// How it happens: the key table has the right primary key, so duplicates
// are impossible, and the handler reads "if the key exists, replay or 409;
// else INSERT it and work". Two copies that read "absent" together both
// INSERT; the primary key stops the second (no duplicate order: the
// constraint did its job), and the error handler turns SQLSTATE 23505 into
// 500 like any other database error. The client was due a 409 or the
// replay; a 500 tells it the server failed, and a client that does not
// retry 5xx (or an alert on the 5xx rate) reacts to a request that
// succeeded.
//
// The rest is the reference's (the held-key answers, the takeover, the
// work). idemcheck's concurrent-burst check releases same-key attempts
// together and reports server-error-under-retry.

import (
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"
)

// UniqueViolation500 answers a lost claim race with 500.
const UniqueViolation500 Variant = "unique-violation-500"

// uniqueViolation500 replaces the claim.
func uniqueViolation500(st *steps) { st.claim = (*Server).claimReadThenInsert }

func (s *Server) claimReadThenInsert(w http.ResponseWriter, r *http.Request, req request, token string) bool {
	ctx := r.Context()
	for range 5 {
		k, err := s.readKey(ctx, req)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// THE BUG: a copy that read "absent" at the same time may
			// INSERT first; our INSERT then fails and that is a 500.
			_, err := s.pool.Exec(ctx, `
				INSERT INTO idempotency_keys (client, key, fingerprint, status, token, locked_until)
				VALUES ($1, $2, $3, 'running', $4, now() + make_interval(secs => $5))`,
				req.client, req.key, req.fingerprint, token, s.cfg.Lease.Seconds())
			if err != nil {
				writeInternal(w, r, err)
				return false
			}
			return true
		case err != nil:
			writeInternal(w, r, err)
			return false
		}
		if claimed, answered := s.answerHeld(w, r, req, token, k); claimed || answered {
			return claimed
		}
	}
	writeConflict(w, 1)
	return false
}
