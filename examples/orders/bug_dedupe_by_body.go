package orders

// DedupeByBody: a finished request's reply is found by the body's hash, not
// only by the key, so a second intent with the same body and a new key is
// answered with the first intent's result.
//
// How it happens: users double-click "Buy", each click gets its own key,
// and two orders appear; someone adds a "double-submit guard" on top of the
// keys: the same client sending the same body again is the same request.
// But the same body is not the same intent: a customer who really orders
// the same thing twice, a monthly top-up of the same amount, two payments
// of one invoice split in equal halves. The second intent, sent with a
// fresh key as the contract demands, gets the first one's 201 back and
// nothing is created: the client believes it has two orders and has one.
//
// The key claim stays exactly the reference's (a reused key with another
// body still gets 422); the guard runs first. idemcheck's distinct-keys
// check sends an intent, then the same body under a new key, and reports
// over-deduplication.

import (
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"
)

// DedupeByBody replays a finished request with the same body whatever its key.
const DedupeByBody Variant = "dedupe-by-body"

// dedupeByBody puts the guard before the reference flow.
func dedupeByBody(st *steps) {
	next := st.create
	st.create = func(s *Server, w http.ResponseWriter, r *http.Request, req request) {
		// THE BUG: looked up by (client, body), not by (client, key).
		k, err := scanKey(s.pool.QueryRow(r.Context(), `
			SELECT `+keyColumns+` FROM idempotency_keys
			WHERE client = $1 AND fingerprint = $2 AND status = 'done'
			ORDER BY finished_at DESC LIMIT 1`, req.client, req.fingerprint))
		switch {
		case err == nil:
			s.st.replay(s, w, r, req, k)
		case errors.Is(err, pgx.ErrNoRows):
			next(s, w, r, req)
		default:
			writeInternal(w, r, err)
		}
	}
}
