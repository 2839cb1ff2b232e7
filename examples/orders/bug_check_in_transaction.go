package orders

// CheckInTransaction: the look-up of the key, the work and the saving of
// the reply run in one transaction, which looks atomic and is not: a retry
// that arrives while the first attempt is still running (a slow handler, a
// client that timed out early) cannot see the first attempt's uncommitted
// key, so it does the work too, and its save of the key waits for the first
// to commit and then overwrites it.
//
// How it happens: "wrap it in a transaction" is the usual answer to a
// check-then-insert race, and under PostgreSQL's default READ COMMITTED it
// does not close it: nothing locks a key row that does not exist yet. The
// reply is saved with an upsert, so the retry's save does not fail on the
// first's row; it replaces it, and each attempt leaves an order. Sequential
// retries are all answered right, because by then the first has
// committed. The reference claims the key in its own statement, committed
// before any work, so a retry meets the claim and gets 409.
//
// idemcheck's in-flight-retry check holds the first attempt at its COMMIT
// on the database link, sends the retry, waits until the retry waits on
// the first's key row, lets the first commit, and reports duplicate-effect.
// (Copies that arrive together, as concurrent-burst sends them, can show
// it too.)

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CheckInTransaction reads the key, works and saves the key in one
// transaction, with no claim.
const CheckInTransaction Variant = "check-in-transaction"

// checkInTransaction replaces the whole flow after parsing.
func checkInTransaction(st *steps) { st.create = (*Server).createCheckInTransaction }

func (s *Server) createCheckInTransaction(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()

	// 1. Check, inside the transaction. THE BUG: a key another attempt has
	// written and not yet committed is invisible here.
	k, err := scanKey(tx.QueryRow(ctx,
		`SELECT `+keyColumns+` FROM idempotency_keys WHERE client = $1 AND key = $2`, req.client, req.key))
	switch {
	case err == nil && !bytes.Equal(k.fingerprint, req.fingerprint):
		writeMismatch(w)
		return
	case err == nil && k.status == "done":
		s.st.replay(s, w, r, req, k)
		return
	case err == nil:
		writeConflict(w, k.retryAfter)
		return
	case !errors.Is(err, pgx.ErrNoRows):
		writeInternal(w, r, err)
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}

	// 2. Act and remember, in the same transaction.
	rep, created, err := s.execute(ctx, tx, req)
	if err == nil {
		_, err = tx.Exec(ctx, `
			INSERT INTO idempotency_keys
				(client, key, fingerprint, status, token, locked_until, response_status, content_type, response_body, finished_at)
			VALUES ($1, $2, $3, 'done', $4, now(), $5, $6, $7, now())
			ON CONFLICT (client, key) DO UPDATE SET
				status = 'done', token = excluded.token, response_status = excluded.response_status,
				content_type = excluded.content_type, response_body = excluded.response_body,
				finished_at = excluded.finished_at`,
			req.client, req.key, req.fingerprint, uuid.NewString(), rep.status, rep.contentType, rep.body)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	if created {
		s.commits.Add(1)
	}
	rep.write(w, false)
}
