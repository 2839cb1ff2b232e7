package ordersmysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// The leased flow, which the variants separate-key-store and
// lease-no-fencing are written in: as a service whose idempotency layer
// cannot hold its claim open inside the work's transaction (a middleware
// with its own connection, a key store in another schema) does it. The
// claim is an autocommitted INSERT of the key, "running" (status_code 0)
// under a fresh token and a lease (locked_until); a copy that finds the
// key running past its lease takes it over with a new token. The work's
// transaction locks the key row, checks the token is still its own (the
// fence), creates the order and saves the reply. An attempt whose work
// fails deletes its claim, so its retry runs afresh.
//
// Written correctly (fenced, the reply saved with the order) the flow is
// as safe as the reference's single transaction; each variant drops one
// half of that.

// errFenced is the work's refusal: a retry took the key over.
var errFenced = errors.New("ordersmysql: the key was taken over by a retry")

// DefaultLease is how long a claim of the leased flow is held before a
// retry may take it over.
const DefaultLease = 30 * time.Second

func (s *Server) createLeased(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	token := uuid.NewString()
	if !s.claimLease(w, r, req, token) {
		return
	}
	body, err := s.workLeased(ctx, req, token)
	switch {
	case err == nil:
		writeJSON(w, http.StatusCreated, body, false)
	case errors.Is(err, errFenced):
		s.answerAfter(w, r, req)
	default:
		// The claim is given back, so that the retry runs afresh.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = s.db.ExecContext(rctx, "DELETE FROM idempotency_keys WHERE client = ? AND idem_key = ? AND token = ? AND status_code = 0",
			req.client, req.key, token)
		apikit.WriteProblem(w, http.StatusInternalServerError, "the order could not be saved; retry with the same key")
	}
}

// answerAfter answers an attempt fenced out by a retry: the retry's saved
// reply, or 409 while it is still running.
func (s *Server) answerAfter(w http.ResponseWriter, r *http.Request, req request) {
	done, err := s.answerFromKey(r.Context(), w, req)
	switch {
	case err != nil:
		apikit.WriteProblem(w, http.StatusInternalServerError, "the key could not be read")
	case !done:
		w.Header().Set("Retry-After", "1")
		apikit.WriteProblem(w, http.StatusConflict, "a request with this key is in progress")
	}
}

// claimLease claims the key for token, or takes over a claim whose lease
// ran out; otherwise it answers (the saved reply, 422, 409) and returns
// false.
func (s *Server) claimLease(w http.ResponseWriter, r *http.Request, req request, token string) bool {
	ctx := r.Context()
	lease := s.lease.Microseconds()
	for range 5 {
		_, err := s.db.ExecContext(ctx, `INSERT INTO idempotency_keys (client, idem_key, fingerprint, token, locked_until)
			VALUES (?, ?, ?, ?, NOW(6) + INTERVAL ? MICROSECOND)`, req.client, req.key, req.fingerprint, token, lease)
		var me *mysql.MySQLError
		if err == nil {
			return true
		}
		if !errors.As(err, &me) || me.Number != 1062 { // ER_DUP_ENTRY: someone holds the key
			apikit.WriteProblem(w, http.StatusInternalServerError, "the key could not be claimed")
			return false
		}
		var fp string
		var status int
		var body sql.NullString
		var expired bool
		var retryAfter int
		err = s.db.QueryRowContext(ctx, `SELECT fingerprint, status_code, body, locked_until <= NOW(6),
			GREATEST(1, CEIL(TIMESTAMPDIFF(MICROSECOND, NOW(6), locked_until) / 1000000))
			FROM idempotency_keys WHERE client = ? AND idem_key = ?`, req.client, req.key).Scan(&fp, &status, &body, &expired, &retryAfter)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // given back since our INSERT: claim again
		case err != nil:
			apikit.WriteProblem(w, http.StatusInternalServerError, "the key could not be read")
			return false
		case fp != req.fingerprint:
			apikit.WriteProblem(w, http.StatusUnprocessableEntity, "this Idempotency-Key was used with another request")
			return false
		case status != 0:
			writeJSON(w, status, []byte(body.String), true)
			return false
		case !expired:
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			apikit.WriteProblem(w, http.StatusConflict, "a request with this key is in progress")
			return false
		}
		res, err := s.db.ExecContext(ctx, `UPDATE idempotency_keys SET token = ?, locked_until = NOW(6) + INTERVAL ? MICROSECOND
			WHERE client = ? AND idem_key = ? AND status_code = 0 AND locked_until <= NOW(6)`, token, lease, req.client, req.key)
		if err != nil {
			apikit.WriteProblem(w, http.StatusInternalServerError, "the key could not be claimed")
			return false
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return true
		}
		// Another copy took it over first: look again.
	}
	w.Header().Set("Retry-After", "1")
	apikit.WriteProblem(w, http.StatusConflict, "a request with this key is in progress")
	return false
}

// workLeased creates the order under the claim of token and saves the
// reply with it, in one transaction that first checks the claim is still
// token's. lease-no-fencing skips the check; separate-key-store commits
// the order, then saves the reply in a transaction of its own.
func (s *Server) workLeased(ctx context.Context, req request, token string) ([]byte, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	if s.variant != LeaseNoFencing {
		if err := fence(ctx, tx, req, token); err != nil {
			return nil, err
		}
	}
	o := req.order
	o.ID = uuid.NewString()
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id, customer_id, total_cents) VALUES (?, ?, ?)", o.ID, o.CustomerID, o.TotalCents); err != nil {
		return nil, err
	}
	body, _ := json.Marshal(o)
	if s.variant == SeparateKeyStore {
		if err := tx.Commit(); err != nil {
			return nil, err
		}
		// THE BUG: the order is committed, the key still says running.
		// The key store's own transaction, as a middleware would run it.
		ktx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer func() { _ = ktx.Rollback() }()
		tx = ktx
	}
	if _, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET status_code = ?, body = ? WHERE client = ? AND idem_key = ?",
		http.StatusCreated, body, req.client, req.key); err != nil {
		return nil, err
	}
	return body, tx.Commit()
}

// fence locks the key row and checks that the claim is still token's: a
// retry that took the key over while this attempt was stalled owns it now.
func fence(ctx context.Context, tx *sql.Tx, req request, token string) error {
	var owner sql.NullString
	var status int
	err := tx.QueryRowContext(ctx, "SELECT token, status_code FROM idempotency_keys WHERE client = ? AND idem_key = ? FOR UPDATE",
		req.client, req.key).Scan(&owner, &status)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (owner.String != token || status != 0) {
		return errFenced
	}
	return err
}
