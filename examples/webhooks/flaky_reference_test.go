package webhooks_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/webhooks"
)

// flakyIDs returns n fresh event ids whose first delivery the flaky
// reference refuses (refused) or does not, found by trying ids in turn:
// the hash decides, so the search is deterministic in outcome.
func flakyIDs(t *testing.T, n int, refused bool) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 1000, "no id hashes the way asked for")
		if id := newEventID(); webhooks.RefusesFirst(id) == refused {
			out = append(out, id)
		}
	}
	return out
}

// About half of all ids are refused, and always the same ones.
func TestRefusesFirstIsAboutHalfAndStable(t *testing.T) {
	refused := 0
	for i := range 1000 {
		id := fmt.Sprintf("evt_%d", i)
		if webhooks.RefusesFirst(id) {
			refused++
		}
		require.Equal(t, webhooks.RefusesFirst(id), webhooks.RefusesFirst(id))
	}
	require.InDelta(t, 500, refused, 60, "refused %d of 1000", refused)
}

// A refused event: 503 without an effect, then applied once on its
// redelivery, then a duplicate. Other events are the reference's.
func TestFlakyReferenceRefusesOnlyTheFirstDelivery(t *testing.T) {
	f := newFixture(t, webhooks.Config{Variant: webhooks.FlakyReference})
	for _, id := range flakyIDs(t, 3, true) {
		requireProblem(t, f.deliver(eventBody(id, false)), http.StatusServiceUnavailable)
		require.Zero(t, f.ledgerRows(id), "a refused delivery applies nothing")
		require.Equal(t, "processed", f.deliver(eventBody(id, false)).deliveryStatus(t))
		require.Equal(t, "duplicate", f.deliver(eventBody(id, false)).deliveryStatus(t))
		require.Equal(t, 1, f.ledgerRows(id))
	}
	require.Equal(t, int64(3), f.api.Refusals())
	for _, id := range flakyIDs(t, 3, false) {
		require.Equal(t, "processed", f.deliver(eventBody(id, false)).deliveryStatus(t))
		require.Equal(t, "duplicate", f.deliver(eventBody(id, false)).deliveryStatus(t))
		require.Equal(t, 1, f.ledgerRows(id))
	}
	require.Equal(t, int64(3), f.api.Refusals(), "events outside the refused half are never refused")
	require.Equal(t, int64(6), f.api.Commits())
}

// Copies of a refused event delivered together: exactly one is refused,
// exactly one applies the event, the rest are duplicates.
func TestFlakyReferenceConcurrentRedelivery(t *testing.T) {
	f := newFixture(t, webhooks.Config{Variant: webhooks.FlakyReference})
	for round, id := range flakyIDs(t, 3, true) {
		statuses := map[string]int{}
		for _, r := range f.burst(burstSize, eventBody(id, false)) {
			if r.status == http.StatusServiceUnavailable {
				statuses["refused"]++
				continue
			}
			statuses[r.deliveryStatus(t)]++
		}
		require.Equal(t, map[string]int{"refused": 1, "processed": 1, "duplicate": burstSize - 2}, statuses, "round %d", round)
		require.Equal(t, 1, f.ledgerRows(id), "round %d", round)
	}
}

// A refused event whose work also fails once (data.failFirst): refused,
// failed, then applied once.
func TestFlakyReferenceThenFailedWork(t *testing.T) {
	f := newFixture(t, webhooks.Config{Variant: webhooks.FlakyReference})
	id := flakyIDs(t, 1, true)[0]
	requireProblem(t, f.deliver(eventBody(id, true)), http.StatusServiceUnavailable)
	requireProblem(t, f.deliver(eventBody(id, true)), http.StatusInternalServerError)
	require.Zero(t, f.ledgerRows(id))
	require.Equal(t, "processed", f.deliver(eventBody(id, true)).deliveryStatus(t))
	require.Equal(t, 1, f.ledgerRows(id))
}
