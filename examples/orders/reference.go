package orders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The reference flow: claim the key, do the work in one transaction that
// also saves the reply, answer. Every way a request can lose the key ends in
// an answer about the request that holds it: a replay, 409 or 422.

// errFenced means our lease was taken over before we could commit.
var errFenced = errors.New("orders: the key was taken over by a retry")

func (s *Server) createReference(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	// A fresh token per attempt: the key is the same for every retry, so
	// the key alone cannot tell the current owner from a previous one.
	token := uuid.NewString()
	if !s.claim(w, r, req, token) {
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}
	rep, err := s.work(ctx, req, token)
	switch {
	case err == nil:
		rep.write(w, false)
	case errors.Is(err, errFenced):
		s.answerFromKey(w, r, req, token, nil)
	default:
		s.release(w, r, req, token, err)
	}
}

// claim makes this request the owner of the key and returns true, or answers
// the client and returns false.
func (s *Server) claim(w http.ResponseWriter, r *http.Request, req request, token string) bool {
	ctx := r.Context()
	// Each pass either returns or saw the row change under it (released,
	// swept, taken over or finished by someone else). Such changes are rare
	// and each needs another request to act, so a few passes are plenty.
	for range 5 {
		// One statement, so the primary key decides who wins: there is no
		// moment between "is the key free?" and "take it" for a concurrent
		// copy to slip into (compare checkthen.go).
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency_keys (key, fingerprint, status, token, locked_until)
			VALUES ($1, $2, 'running', $3, now() + make_interval(secs => $4))
			ON CONFLICT (key) DO NOTHING
			RETURNING true`,
			req.key, req.fingerprint, token, s.cfg.Lease.Seconds()).Scan(new(bool))
		if err == nil {
			return true
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			writeInternal(w, r, err)
			return false
		}

		// Someone holds the key. Look at how far they got.
		k, err := s.readKey(ctx, req.key)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // released or swept since our INSERT: claim again
		case err != nil:
			writeInternal(w, r, err)
			return false
		case !bytes.Equal(k.fingerprint, req.fingerprint):
			writeProblem(w, http.StatusUnprocessableEntity, "this Idempotency-Key was already used with a different request")
			return false
		case k.status == "done":
			k.reply.write(w, true)
			return false
		case !k.expired:
			writeConflict(w, k.retryAfter)
			return false
		}

		// The owner's lease ran out: it died, or is stuck. Take the key
		// over by giving it our token; that fences the old owner out (see
		// work). The WHERE repeats every condition we just read, so if the
		// row changed meanwhile this updates nothing and we look again.
		tag, err := s.pool.Exec(ctx, `
			UPDATE idempotency_keys
			SET token = $2, locked_until = now() + make_interval(secs => $3)
			WHERE key = $1 AND fingerprint = $4 AND status = 'running' AND locked_until <= now()`,
			req.key, token, s.cfg.Lease.Seconds(), req.fingerprint)
		if err != nil {
			writeInternal(w, r, err)
			return false
		}
		if tag.RowsAffected() == 1 {
			return true
		}
	}
	writeConflict(w, 1)
	return false
}

// work creates the order and saves the reply in one transaction, provided
// we still own the key. The order and the saved reply commit together, or
// neither does.
func (s *Server) work(ctx context.Context, req request, token string) (reply, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return reply{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit

	// Fencing. Our claim may be older than the lease: we may have been
	// paused (GC, a slow network, AfterClaim in tests) long enough for a
	// retry to take the key over. Locking the row and checking the token
	// settles it, and the lock holds any takeover back until we commit or
	// roll back, so the answer stays true until COMMIT.
	var owner, status string
	err = tx.QueryRow(ctx, `SELECT token, status FROM idempotency_keys WHERE key = $1 FOR UPDATE`,
		req.key).Scan(&owner, &status)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (owner != token || status != "running") {
		return reply{}, errFenced
	}
	if err != nil {
		return reply{}, err
	}

	rep, err := insertOrder(ctx, tx, req)
	if err != nil {
		return reply{}, err
	}
	if _, err := tx.Exec(ctx, `
		UPDATE idempotency_keys
		SET status = 'done', response_status = $2, content_type = $3, response_body = $4, finished_at = now()
		WHERE key = $1`,
		req.key, rep.status, rep.contentType, rep.body); err != nil {
		return reply{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return reply{}, err
	}
	s.commits.Add(1)
	return rep, nil
}

// release gives the key back after the work failed, so that a retry can do
// it, and answers 500. (Stripe instead saves the 500 and replays it. Here
// the work rolled back, so there is no effect for a replay to stand for,
// and releasing lets a transient failure heal on retry.)
func (s *Server) release(w http.ResponseWriter, r *http.Request, req request, token string, workErr error) {
	// The client may be gone, often the very reason the work failed. The
	// claim must be released anyway, so drop the request's cancellation
	// but keep a deadline.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	tag, err := s.pool.Exec(ctx,
		`DELETE FROM idempotency_keys WHERE key = $1 AND token = $2 AND status = 'running'`, req.key, token)
	if err == nil && tag.RowsAffected() == 0 {
		// Nothing of ours to release. Either a retry took the key over,
		// or COMMIT reported an error yet went through (the connection
		// dropped after the server committed). The key row says which.
		s.answerFromKey(w, r.WithContext(ctx), req, token, workErr)
		return
	}
	writeInternal(w, r, workErr)
}

// answerFromKey answers a request that no longer holds the key it claimed:
// with the finished reply if there is one, else 409 (workErr == nil: fenced)
// or 500 (the work failed).
func (s *Server) answerFromKey(w http.ResponseWriter, r *http.Request, req request, token string, workErr error) {
	k, err := s.readKey(r.Context(), req.key)
	switch {
	case err == nil && k.status == "done" && k.token == token:
		// Finished under our own token: COMMIT went through although it
		// reported an error. The order is ours, and so is the reply.
		s.commits.Add(1)
		k.reply.write(w, false)
	case err == nil && k.status == "done" && bytes.Equal(k.fingerprint, req.fingerprint):
		k.reply.write(w, true)
	case workErr != nil:
		writeInternal(w, r, workErr)
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		writeInternal(w, r, err)
	default:
		writeConflict(w, k.retryAfter)
	}
}

// keyRow is what a request learns about a key it does not hold.
type keyRow struct {
	fingerprint []byte
	status      string // "running" or "done"
	token       string // the current owner's lease token
	expired     bool   // the lease ran out (meaningful while running)
	retryAfter  int    // whole seconds until it runs out, at least 1
	reply       reply  // the saved reply, once done
}

// readKey reads the key row; pgx.ErrNoRows if there is none. Times come from
// the database clock, the same clock that wrote locked_until.
func (s *Server) readKey(ctx context.Context, key string) (keyRow, error) {
	var k keyRow
	err := s.pool.QueryRow(ctx, `
		SELECT fingerprint, status, token, locked_until <= now(),
		       greatest(1, ceil(extract(epoch FROM locked_until - now())))::int,
		       coalesce(response_status, 0), coalesce(content_type, ''), coalesce(response_body, '')
		FROM idempotency_keys WHERE key = $1`, key).
		Scan(&k.fingerprint, &k.status, &k.token, &k.expired, &k.retryAfter, &k.reply.status, &k.reply.contentType, &k.reply.body)
	return k, err
}

// querier is what insertOrder needs: a transaction in the reference, the
// pool (one autocommitted statement) in check-then-insert.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// insertOrder inserts the order and builds the 201 reply for it.
func insertOrder(ctx context.Context, q querier, req request) (reply, error) {
	var id string
	var createdAt time.Time
	err := q.QueryRow(ctx, `
		INSERT INTO orders (customer_id, total_cents, idempotency_key)
		VALUES ($1, $2, $3)
		RETURNING id, created_at`,
		req.customerID, req.totalCents, req.key).Scan(&id, &createdAt)
	if err != nil {
		return reply{}, err
	}
	body, err := json.Marshal(struct {
		OrderID    string `json:"orderId"`
		CustomerID string `json:"customerId"`
		TotalCents int64  `json:"totalCents"`
		CreatedAt  string `json:"createdAt"`
	}{id, req.customerID, req.totalCents, createdAt.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, "application/json", body}, nil
}
