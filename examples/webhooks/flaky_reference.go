package webhooks

// FlakyReference is the reference behind a transient failure: it answers
// 503 to the first delivery of about half of all events, without touching
// the ledger, and is the reference for every other delivery.
//
// Why it is correct: answering 5xx is how a consumer tells Stripe, GitHub
// or Shopify "not now, deliver this again" (a dependency down, a deploy, a
// lock it would rather not wait for). The sender redelivers, the event is
// applied once, and only then acknowledged. idemcheck must leave such a
// consumer clean: a 5xx under a webhook policy is not an acknowledgement,
// never an anomaly by itself.
//
// Which events: those whose id hashes into the refused half (RefusesFirst),
// so the choice is the same for every process and every run. Which
// delivery: the first to record the refusal in refused_first, on its own
// and before any work, so exactly one delivery of such an event is
// refused, across concurrent copies and across processes.

import (
	"context"
	"errors"
	"hash/fnv"
)

// FlakyReference refuses the first delivery of half the events with 503.
const FlakyReference Variant = "flaky-reference"

// errTryLater asks the sender for another delivery: answered 503.
var errTryLater = errors.New("webhooks: not now, deliver the event again")

// RefusesFirst reports whether FlakyReference answers 503 to the first
// delivery of the event eventID: for about half of all ids, decided by a
// hash of the id alone.
func RefusesFirst(eventID string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(eventID))
	return h.Sum32()%2 == 0
}

func (s *Server) deliverFlakyReference(ctx context.Context, ev event) (bool, error) {
	if RefusesFirst(ev.id) {
		tag, err := s.pool.Exec(ctx, `INSERT INTO refused_first (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.id)
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 1 {
			s.refusals.Add(1)
			return false, errTryLater
		}
	}
	return s.deliverReference(ctx, ev)
}
