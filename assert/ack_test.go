package assert

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

const redeliver = idemcheck.CheckWebhookRedeliver

// redelivered marks the last n attempts of the history as the sender's
// redeliveries 1..n, as the runner records them.
func (b *histBuilder) redelivered(n int) {
	atts := b.h.Attempts[len(b.h.Attempts)-n:]
	for i := range atts {
		atts[i].Redelivery = i + 1
	}
}

// A consumer that asks for redelivery with 5xx, or lets a delivery time
// out, and then acknowledges the event and applies it once, is clean.
func TestAckOnlyRefusedThenAcknowledgedIsClean(t *testing.T) {
	b := newHist(t, idemcheck.Webhook(), redeliver, idemcheck.CheckSequentialReplay)
	// The failed first delivery, redelivered until acknowledged.
	b.intent(redeliver, 1, `1 0-5 503 {"title":"try later"}`, `1 55-60 200 {"status":"processed"}`)
	b.redelivered(1)
	// A burst in which one copy was refused: no server-error-under-retry.
	b.intent(redeliver, 1,
		`1 100-105 503 {"title":"try later"}`,
		`1 100-108 200 {"status":"processed"}`,
		`1 101-109 200 {"status":"duplicate"}`,
		`1 101-110 409 {"title":"in progress"}`,
	)
	// No reply at all, then 5xx, then the acknowledgement.
	b.intent(redeliver, 1, `1 200-230 unknown`, `1 280-285 500 {}`, `1 385-390 200 {"status":"processed"}`)
	b.redelivered(2)
	// The failing event: refused, then acknowledged and applied.
	b.intent(redeliver, 1, `1:failing-body 400-405 500 {}`, `1:failing-body 455-460 200 {"status":"processed"}`)
	b.redelivered(1)
	// Another check on the same consumer: its deliveries too.
	b.intent(idemcheck.CheckSequentialReplay, 1, `1 500-505 503 {}`, `1 555-560 200 {"status":"processed"}`, `2 561-565 200 {"status":"duplicate"}`)
	b.h.Attempts[len(b.h.Attempts)-2].Redelivery = 1
	assert.Empty(t, Check(&b.h))
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Pass, r.Verdict)
	for _, c := range r.Checks {
		assert.Equal(t, idemcheck.Pass, c.Status, c.Name)
	}
}

// A second event (distinct-keys) refused once and then acknowledged: two
// events, two effects, nothing to report.
func TestAckOnlyOtherEventRefusedThenAcknowledged(t *testing.T) {
	const c = idemcheck.CheckDistinctKeys
	b := newHist(t, idemcheck.Webhook(), c)
	b.intent(c, 2, `1 0-5 200 {"status":"processed"}`, `2:other-key 6-10 503 {}`, `2:other-key 60-65 200 {"status":"processed"}`)
	b.h.Attempts[1].Key, b.h.Attempts[2].Key = "key-other", "key-other"
	b.redelivered(1)
	assert.Empty(t, Check(&b.h))
}

// The same 5xx in a burst is still a finding where replies are results,
// not acknowledgements: the ack-only rules stay with ack-only policies.
func TestServerErrorStillCountsWithoutAckOnly(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	b.intent(burst, 1, `1 0-5 201 {"orderId":"A"}`, `1 0-6 503 {}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ServerErrorUnderRetry}, kinds(Check(&b.h)))
}

// Five deliveries, none acknowledged: never-acknowledged, once, with
// every delivery as a witness.
func TestAckOnlyNeverAcknowledged(t *testing.T) {
	b := newHist(t, idemcheck.Webhook(), redeliver)
	b.intent(redeliver, 0,
		`1 0-5 503 {}`, `1 55-60 503 {}`, `1 160-190 unknown`, `1 390-395 500 {}`, `1 795-800 503 {}`)
	b.redelivered(4)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.NeverAcknowledged}, kinds(got))
	a := got[0]
	assert.Equal(t, []int{1, 2, 3, 4, 5}, a.Attempts)
	assert.Contains(t, a.Explanation, "delivered 5 times")
	assert.Contains(t, a.Explanation, "4 of them redeliveries")
	assert.Contains(t, a.Explanation, "500 x1, 503 x3, unknown x1")
	assert.Equal(t, 4, a.Observed["redeliveries"])
	assert.Equal(t, int64(0), a.Observed["effects"])
	assert.Equal(t, idemcheck.Fail, Report(&b.h).Verdict)
}

// A failed first delivery, then the in-progress status on every
// redelivery: the consumer holds a claim nothing works on, stuck-key, and
// only that.
func TestAckOnlyInProgressThroughoutIsStuck(t *testing.T) {
	b := newHist(t, idemcheck.Webhook(), redeliver)
	b.intent(redeliver, 0,
		`1 0-5 500 {}`, `1 55-60 409 {}`, `1 160-165 409 {}`, `1 365-370 409 {}`, `1 770-775 409 {}`)
	b.redelivered(4)
	b.h.Attempts[0].Fault, b.h.Attempts[0].FaultLinks = "db-cut", []string{idemcheck.LinkDB}
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(got))
	assert.Contains(t, got[0].Explanation, "all 4 redeliveries were told it is in progress (409)")
	assert.Contains(t, got[0].Explanation, "after the first delivery (500)")

	// In progress now and then is not "throughout": never-acknowledged.
	b = newHist(t, idemcheck.Webhook(), redeliver)
	b.intent(redeliver, 0, `1 0-5 500 {}`, `1 55-60 409 {}`, `1 160-165 503 {}`)
	b.redelivered(2)
	assert.Equal(t, []idemcheck.Kind{idemcheck.NeverAcknowledged}, kinds(Check(&b.h)))
}

// Deliveries that never reached the consumer say nothing about its rules:
// that is a dead target, not a finding of this rule.
func TestAckOnlyNothingAnsweredIsNoFinding(t *testing.T) {
	b := newHist(t, idemcheck.Webhook(), redeliver)
	b.intent(redeliver, -1, `1 0-5 not-sent`, `1 55-60 not-sent`, `1 160-190 unknown`)
	b.redelivered(2)
	assert.Empty(t, Check(&b.h))
}

// Acknowledged and never applied: lost-effect, whether the event itself
// or the failing event was acknowledged.
func TestAckOnlyAcknowledgedWithoutEffectIsLost(t *testing.T) {
	b := newHist(t, idemcheck.Webhook(), redeliver)
	b.intent(redeliver, 0, `1 0-5 503 {}`, `1 55-60 200 {"status":"duplicate"}`)
	b.redelivered(1)
	b.intent(redeliver, 0, `1:failing-body 100-105 500 {}`, `1:failing-body 155-160 200 {"status":"duplicate"}`)
	b.redelivered(1)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.LostEffect, idemcheck.LostEffect}, kinds(got))
	assert.Equal(t, []int{2}, got[0].Attempts, "the acknowledged delivery is the witness")
	assert.Equal(t, []int{4}, got[1].Attempts)
	assert.Contains(t, got[1].Explanation, "acknowledged with 200")
	assert.Contains(t, got[1].Explanation, "the effect query counts 0")
}
