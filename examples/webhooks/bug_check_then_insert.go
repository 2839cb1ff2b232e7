package webhooks

// CheckThenInsert: the consumer looks the event id up, applies the event,
// then records the id, so redeliveries that arrive together all find it
// absent and each applies the event.
//
// How it happens: "if processed(id) return; process(event);
// markProcessed(id)" is the textbook shape of a deduplicating consumer,
// and it is correct as long as deliveries never overlap. They do: senders
// retry on their own timeout while the first delivery still runs, and
// queue-backed senders deliver from several workers at once. Every copy
// that passed the look-up before the first one recorded the id credits the
// customer again. (The record uses ON CONFLICT DO NOTHING, so the losers do
// not even fail.) The reference lets the primary key of processed_events
// decide, inside the transaction that writes the ledger row.
//
// idemcheck's webhook-redelivery check delivers one event several times
// concurrently, counts the ledger rows and reports duplicate-effect.

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// CheckThenInsert reads the event id, applies the event, then writes the id.
const CheckThenInsert Variant = "check-then-insert"

func (s *Server) deliverCheckThenInsert(ctx context.Context, ev event) (bool, error) {
	fail, err := doomed(ctx, s.pool, ev)
	if err != nil {
		return false, err
	}
	// 1. Check.
	err = s.pool.QueryRow(ctx, `SELECT true FROM processed_events WHERE event_id = $1`, ev.id).Scan(new(bool))
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	// 2. Act. THE BUG: every copy that passed the check before any copy
	// reached step 3 gets here.
	if err := apply(ctx, s.pool, ev, fail); err != nil {
		return false, err
	}
	s.commits.Add(1)
	// 3. Remember.
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO processed_events (event_id, event_type) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING`, ev.id, ev.typ); err != nil {
		return false, err
	}
	return true, nil
}
