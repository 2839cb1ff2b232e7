package webhooks

// DedupeApart: the event id is recorded as processed in its own
// transaction before the work, so when the work fails the event is marked
// done without its effect, and every redelivery is skipped for ever.
//
// How it happens: "first make sure we never process it twice, then process
// it": INSERT the event id (or SETNX it in Redis), commit, then do the
// work, often in another service call with its own transaction. It stops
// duplicates perfectly. But when the work fails (a timeout, a deploy, a
// constraint), the consumer answers 5xx, the sender dutifully redelivers,
// and the redelivery finds the id and answers 200 "already processed". The
// sender stops; the credit is never made, and nothing anywhere reports it.
// The reference records the id in the same transaction as the ledger row.
//
// The failure is deterministic: data.failFirst=true makes the first
// delivery's work fail (see doomed). idemcheck's webhook-redelivery check
// delivers such an event, redelivers it after the failure, counts the
// ledger rows and reports lost-effect: the sender was told 200 and the
// ledger holds nothing.

import "context"

// DedupeApart commits the event id before, and apart from, the work.
const DedupeApart Variant = "dedupe-apart"

func (s *Server) deliverDedupeApart(ctx context.Context, ev event) (bool, error) {
	fail, err := doomed(ctx, s.pool, ev)
	if err != nil {
		return false, err
	}
	// THE BUG: committed now, whatever happens to the work.
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO processed_events (event_id, event_type) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING`, ev.id, ev.typ)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := apply(ctx, tx, ev, fail); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	s.commits.Add(1)
	return true, nil
}
