package webhooks

// DedupeDelivery: the consumer deduplicates on the delivery's id, which the
// sender makes anew for every delivery, instead of the event's id, which
// every delivery of the event shares.
//
// How it happens: senders send two ids, and they look alike. GitHub sends
// X-GitHub-Delivery beside the event in the body; Standard Webhooks senders
// send webhook-id, the event's, which a redelivery keeps; queue brokers hand
// out a delivery tag per delivery. A consumer that keys its processed
// table on the id that changes with each delivery looks right in every
// test that delivers once, and credits the customer again at every
// redelivery.
//
// idemcheck's webhook-redelivery check delivers one event several times,
// each delivery with its own id when the sender's delivery header is
// given (--header 'X-Delivery-Id: {{uuid}}', computed per attempt), counts
// the ledger rows and reports duplicate-effect. The reference keys
// processed_events on the event id.

import "context"

// DeliveryHeader is the header a sender puts its delivery id in.
const DeliveryHeader = "X-Delivery-Id"

// DedupeDelivery records the delivery id, not the event id.
const DedupeDelivery Variant = "dedupe-delivery-id"

func (s *Server) deliverDedupeDelivery(ctx context.Context, ev event) (bool, error) {
	// THE BUG: the delivery's id stands for the event's.
	seen := ev.id
	if ev.delivery != "" {
		seen = ev.delivery
	}
	fail, err := doomed(ctx, s.pool, ev)
	if err != nil {
		return false, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, `
		INSERT INTO processed_events (event_id, event_type) VALUES ($1, $2)
		ON CONFLICT (event_id) DO NOTHING`, seen, ev.typ)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if err := apply(ctx, tx, ev, fail); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	s.commits.Add(1)
	return true, nil
}
