package webhooks

import "context"

// deliverReference applies the event at most once and, once it answered
// 200, exactly once: the event id and the ledger row commit in one
// transaction.
func (s *Server) deliverReference(ctx context.Context, ev event) (bool, error) {
	fail, err := doomed(ctx, s.pool, ev)
	if err != nil {
		return false, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit

	// The primary key decides: a concurrent redelivery's INSERT waits here
	// until this transaction ends, then inserts (we rolled back: it
	// applies the event) or does nothing (we committed: a duplicate).
	tag, err := tx.Exec(ctx, `
		INSERT INTO processed_events (event_id, event_type) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING`, ev.id, ev.typ)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, nil // applied by an earlier delivery
	}
	if err := apply(ctx, tx, ev, fail); err != nil {
		return false, err // rolled back with the event id: a redelivery applies it
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	s.commits.Add(1)
	return true, nil
}
