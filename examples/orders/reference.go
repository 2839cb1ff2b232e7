package orders

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The reference flow: claim the key, do the work in one transaction that
// also saves the reply, answer. Every way a request can lose the key ends in
// an answer about the request that holds it: a replay, 409 or 422.
//
// Each step is called through s.st so that a variant can replace it
// (zoo.go); the reference calls its own steps the same way.

// errFenced means our lease was taken over before we could commit.
var errFenced = errors.New("orders: the key was taken over by a retry")

// db is what a step needs to run SQL: the work transaction, or the pool
// (each statement its own transaction) where a step works outside one.
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Server) createReference(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	// A fresh token per attempt: the key is the same for every retry, so
	// the key alone cannot tell the current owner from a previous one.
	token := uuid.NewString()
	if !s.st.claim(s, w, r, req, token) {
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}
	rep, err := s.st.work(s, ctx, req, token)
	switch {
	case err == nil:
		rep.write(w, false)
	case errors.Is(err, errFenced):
		s.answerFromKey(w, r, req, token, nil)
	default:
		s.st.release(s, w, r, req, token, err)
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
		// copy to slip into (compare bug_check_then_insert.go).
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency_keys (client, key, fingerprint, status, token, locked_until)
			VALUES ($1, $2, $3, 'running', $4, now() + make_interval(secs => $5))
			ON CONFLICT (client, key) DO NOTHING
			RETURNING true`,
			req.client, req.key, req.fingerprint, token, s.cfg.Lease.Seconds()).Scan(new(bool))
		if err == nil {
			return true
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			writeInternal(w, r, err)
			return false
		}

		// Someone holds the key. Look at how far they got.
		k, err := s.readKey(ctx, req)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // released or swept since our INSERT: claim again
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

// answerHeld deals with a key row that another attempt wrote: it answers
// 422, the replay or 409, or takes an expired lease over (claimed). When
// the row changed under it, it does neither, and the caller looks again.
func (s *Server) answerHeld(w http.ResponseWriter, r *http.Request, req request, token string, k keyRow) (claimed, answered bool) {
	switch {
	case !bytes.Equal(k.fingerprint, req.fingerprint):
		writeMismatch(w)
		return false, true
	case k.status == "done":
		s.st.replay(s, w, r, req, k)
		return false, true
	case !s.st.expired(k):
		writeConflict(w, k.retryAfter)
		return false, true
	}

	// The owner's lease ran out: it died, or is stuck. Take the key over by
	// giving it our token; that fences the old owner out (see fence). The
	// WHERE repeats every condition we just read, so if the row changed
	// meanwhile this updates nothing and the caller looks again.
	tag, err := s.pool.Exec(r.Context(), `
		UPDATE idempotency_keys
		SET token = $3, locked_until = now() + make_interval(secs => $4)
		WHERE client = $1 AND key = $2 AND fingerprint = $5 AND status = 'running' AND locked_until <= now()`,
		req.client, req.key, token, s.cfg.Lease.Seconds(), req.fingerprint)
	if err != nil {
		writeInternal(w, r, err)
		return false, true
	}
	return tag.RowsAffected() == 1, false
}

// work executes the request and saves the reply in one transaction,
// provided we still own the key. The effect and the saved reply commit
// together, or neither does.
func (s *Server) work(ctx context.Context, req request, token string) (reply, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return reply{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit

	if err := s.st.fence(ctx, tx, req, token); err != nil {
		return reply{}, err
	}
	rep, created, err := s.execute(ctx, tx, req)
	if err != nil {
		return reply{}, err
	}
	if s.cfg.AfterEffect != nil {
		s.cfg.AfterEffect(ctx, req.key)
	}
	if err := s.st.finish(ctx, tx, req, rep); err != nil {
		return reply{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return reply{}, err
	}
	if created {
		s.commits.Add(1)
	}
	return rep, nil
}

// fence checks, inside the work transaction, that we still own the key.
// Our claim may be older than the lease: we may have been paused (GC, a
// slow network, AfterClaim in tests) long enough for a retry to take the
// key over. Locking the row and checking the token settles it, and the lock
// holds any takeover back until we commit or roll back, so the answer stays
// true until COMMIT.
func fence(ctx context.Context, q db, req request, token string) error {
	var owner, status string
	err := q.QueryRow(ctx, `SELECT token, status FROM idempotency_keys WHERE client = $1 AND key = $2 FOR UPDATE`,
		req.client, req.key).Scan(&owner, &status)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (owner != token || status != "running") {
		return errFenced
	}
	return err
}

// saveReply finishes the key with the reply, whatever its status: a
// declined charge is an outcome of executing the request, and a retry must
// learn of it, not be charged again (Stripe saves errors the same way).
func saveReply(ctx context.Context, q db, req request, rep reply) error {
	_, err := q.Exec(ctx, `
		UPDATE idempotency_keys
		SET status = 'done', response_status = $3, content_type = $4, response_body = $5, finished_at = now()
		WHERE client = $1 AND key = $2`,
		req.client, req.key, rep.status, rep.contentType, rep.body)
	return err
}

// release gives the key back after the work transaction failed, so that a
// retry can do it, and answers 500. (Stripe instead saves the 500 and
// replays it. Here the transaction rolled back, so nothing happened for a
// replay to stand for, and releasing lets a transient failure heal on
// retry.)
func (s *Server) release(w http.ResponseWriter, r *http.Request, req request, token string, workErr error) {
	// The client may be gone, often the very reason the work failed. The
	// claim must be released anyway, so drop the request's cancellation
	// but keep a deadline.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	tag, err := s.pool.Exec(ctx,
		`DELETE FROM idempotency_keys WHERE client = $1 AND key = $2 AND token = $3 AND status = 'running'`,
		req.client, req.key, token)
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
	k, err := s.readKey(r.Context(), req)
	switch {
	case err == nil && k.status == "done" && k.token == token:
		// Finished under our own token: COMMIT went through although it
		// reported an error. The effect is ours, and so is the reply.
		if k.reply.status == http.StatusCreated {
			s.commits.Add(1)
		}
		k.reply.write(w, false)
	case err == nil && k.status == "done" && bytes.Equal(k.fingerprint, req.fingerprint):
		s.st.replay(s, w, r, req, k)
	case workErr != nil:
		writeInternal(w, r, workErr)
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		writeInternal(w, r, err)
	default:
		writeConflict(w, k.retryAfter)
	}
}

// replaySaved answers with the saved status and bytes: the answer the
// first attempt gave, not a new rendering of what exists now.
func (s *Server) replaySaved(w http.ResponseWriter, _ *http.Request, _ request, k keyRow) {
	k.reply.write(w, true)
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

// keyColumns are the columns scanKey reads, in its order. Times come from
// the database clock, the same clock that wrote locked_until.
const keyColumns = `fingerprint, status, token, locked_until <= now(),
	greatest(1, ceil(extract(epoch FROM locked_until - now())))::int,
	coalesce(response_status, 0), coalesce(content_type, ''), coalesce(response_body, '')`

func scanKey(row pgx.Row) (keyRow, error) {
	var k keyRow
	err := row.Scan(&k.fingerprint, &k.status, &k.token, &k.expired, &k.retryAfter,
		&k.reply.status, &k.reply.contentType, &k.reply.body)
	return k, err
}

// readKey reads the request's key row; pgx.ErrNoRows if there is none.
func (s *Server) readKey(ctx context.Context, req request) (keyRow, error) {
	return scanKey(s.pool.QueryRow(ctx,
		`SELECT `+keyColumns+` FROM idempotency_keys WHERE client = $1 AND key = $2`, req.client, req.key))
}
