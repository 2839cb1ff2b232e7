package orders

// Autocommit mode (Config.Autocommit, the binary's -autocommit): the
// reference's flow with no transaction on the wire. The claim is already
// one autocommitted INSERT; here the work is one too: a single statement
// that checks the request still owns its key, finishes the key with the
// reply and writes the order or payment, so the effect and the saved reply
// still commit together, or neither does. It is as correct as the
// reference, and it sends what node-pg's pool.query, Django's autocommit
// and most middleware key stores send: no BEGIN and no COMMIT, only writes
// that commit on their own. A fault that waits for a COMMIT never meets it.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// workAutocommit replaces the work step in autocommit mode.
func (s *Server) workAutocommit(ctx context.Context, req request, token string) (reply, error) {
	approved, err := charge(ctx, s.pool, req.op) // a write only for DeclineOnceCents
	if err != nil {
		return reply{}, err
	}
	op := req.op
	if !approved {
		rep := problem(http.StatusPaymentRequired,
			"the charge was declined; a new attempt needs a new Idempotency-Key")
		if err := saveReply(ctx, s.pool, req, rep); err != nil {
			return reply{}, err
		}
		return rep, nil
	}
	// The id and time are chosen here so that the reply can be saved by the
	// same statement that writes the row it describes.
	id, createdAt := uuid.NewString(), time.Now().UTC().Truncate(time.Microsecond)
	rep, err := render(op, id, createdAt, http.StatusCreated)
	if err != nil {
		return reply{}, err
	}
	// The UPDATE is the fence: it finishes the key only while this request
	// owns it, and the row is written only if the key was finished.
	const owner = `WITH owner AS (
			UPDATE idempotency_keys
			SET status = 'done', response_status = $4, content_type = $5, response_body = $6, finished_at = now()
			WHERE client = $1 AND key = $2 AND token = $3 AND status = 'running'
			RETURNING client, key)`
	var row pgx.Row
	switch op.kind {
	case orderKind:
		row = s.pool.QueryRow(ctx, owner+`
			INSERT INTO orders (id, client, customer_id, total_cents, idempotency_key, created_at)
			SELECT $7, client, $8, $9, key, $10 FROM owner
			RETURNING id`,
			req.client, req.key, token, rep.status, rep.contentType, rep.body, id, op.customerID, op.cents, createdAt)
	default:
		row = s.pool.QueryRow(ctx, owner+`
			INSERT INTO payments (id, client, order_ref, customer_id, amount_cents, idempotency_key, created_at)
			SELECT $7, client, nullif($8, ''), nullif($9, ''), $10, key, $11 FROM owner
			RETURNING id`,
			req.client, req.key, token, rep.status, rep.contentType, rep.body, id, op.orderRef, op.customerID, op.cents, createdAt)
	}
	if err := row.Scan(new(string)); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return reply{}, errFenced
		}
		return reply{}, err
	}
	s.commits.Add(1)
	return rep, nil
}
