package assert

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// asBurst records the attempts of intent as one burst of its round,
// released tightly.
func (b *histBuilder) asBurst(intent string, round int) {
	id := len(b.h.Bursts) + 1
	n := 0
	for i := range b.h.Attempts {
		if a := &b.h.Attempts[i]; a.Intent == intent {
			a.Burst, a.Round = id, round
			n++
		}
	}
	for i := range b.h.Intents {
		if b.h.Intents[i].ID == intent {
			b.h.Intents[i].Round = round
		}
	}
	b.h.Bursts = append(b.h.Bursts, idemcheck.Burst{ID: id, Attempts: n, Spread: 5 * time.Microsecond, Protocol: "h2",
		Intent: intent, Check: burst, Round: round})
}

// A rate limiter that lets one request of a client into the handler at a
// time: in every burst one attempt executes and the others get 429. That
// is no concurrency, whatever the policy calls 429: never a pass, and the
// 429s are no unexpected status either.
func TestRefusedBurstIsInconclusiveWhatever429Means(t *testing.T) {
	for _, inProgress := range [][]int{nil, {409, 429}} {
		p := idemcheck.IETF()
		if inProgress != nil {
			p.InProgressStatuses = inProgress
		}
		b := newHist(t, p, burst)
		for round := 1; round <= 2; round++ {
			in := b.intent(burst, 1,
				`1 0-5 201 {"orderId":"A"}`,
				`1 0-1 429 {"title":"Too Many Requests"}`,
				`1 0-1 429 {"title":"Too Many Requests"}`,
				`1 1-2 429 {"title":"Too Many Requests"}`,
			)
			b.asBurst(in, round)
		}
		r := Report(&b.h)
		assert.Empty(t, r.Anomalies, "in progress: %v", inProgress)
		c := status(t, r, burst)
		assert.Equal(t, idemcheck.Inconclusive, c.Status, "in progress %v: %s", inProgress, c.Proof)
		assert.Contains(t, c.Reason, "rate limit")
		assert.Contains(t, c.Reason, "so none ran concurrently there")
		assert.Contains(t, c.Reason, "Options.BurstSize", "it says what to do")
		assert.Equal(t, 8, c.Attempts, "the refusals were sent, and are counted as sent")
		assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
	}
}

// A limit of several in flight admits some of each burst: the check is
// judged on them, and states how many rounds had two or more inside the
// handler together.
func TestAdmittedBurstStatesItsRounds(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	in := b.intent(burst, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`1 0-1 409 {"title":"in progress"}`,
		`1 0-1 429 {"title":"Too Many Requests"}`,
	)
	b.asBurst(in, 1)
	in = b.intent(burst, 1, `1 10-15 201 {"orderId":"B"}`, `1 10-11 429 {}`, `1 10-11 429 {}`)
	b.asBurst(in, 2)
	in = b.intent(burst, 1, `1 20-25 201 {"orderId":"C"}`, `1 20-26 201 {"orderId":"C"} replayed`, `1 20-21 429 {}`)
	b.asBurst(in, 2) // round 2 sent again after its refusals
	r := Report(&b.h)
	assert.Empty(t, r.Anomalies)
	c := status(t, r, burst)
	require.Equal(t, idemcheck.Pass, c.Status, c.Reason)
	assert.Contains(t, c.Proof, "2 of 2 rounds admitted two or more same-key attempts into the handler together")
	assert.Contains(t, c.Proof, "4 of the bursts' 9 attempts were refused before it")
}

// A retry refused with 429 (or 503 with Retry-After) is sent again: the
// refusal is not judged, the retry that was admitted is.
func TestRefusedRetryIsNotJudged(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seq)
	b.intent(seq, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 6-7 503 {"title":"busy"}`,
		`2 1007-1010 201 {"orderId":"A"} replayed`,
	)
	b.h.Attempts[1].RespHeader = http.Header{"Retry-After": {"1"}}
	r := Report(&b.h)
	assert.Empty(t, r.Anomalies)
	c := status(t, r, seq)
	assert.Equal(t, idemcheck.Pass, c.Status, c.Reason)
	assert.Contains(t, c.Proof, "1 refused before it by a rate limit")

	// A 503 without Retry-After is the target's own failure: judged.
	b.h.Attempts[1].RespHeader = nil
	assert.Equal(t, idemcheck.Fail, Report(&b.h).Verdict)

	// A step every send of which was refused never reached the handler.
	b = newHist(t, idemcheck.IETF(), seq)
	b.intent(seq, 1, `1 0-5 201 {"orderId":"A"}`, `2 6-7 429 {}`, `2 1007-1008 429 {}`)
	r = Report(&b.h)
	assert.Empty(t, r.Anomalies)
	c = status(t, r, seq)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "refused every send of its step 2")
}

// A 5xx on the attempt whose provider call the harness broke is that
// fault's outcome, not an unexpected status; the same 5xx on an attempt
// the harness did not break is still judged.
func TestServerErrorOnTheProviderFaultIsNoAnomaly(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-5 500 {"title":"Internal Server Error"}`, `2 6-9 201 {"orderId":"A"}`)
	b.h.Attempts[0].Fault, b.h.Attempts[0].FaultLinks = "provider-error", []string{idemcheck.LinkProvider}
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed})
	assert.Empty(t, Check(&b.h))

	b.h.Attempts[0].Fault, b.h.Attempts[0].FaultLinks = "", nil
	assert.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(Check(&b.h)))
}
