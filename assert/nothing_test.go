package assert

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// Nothing passes on nothing. A target that answers an empty 200 to
// everything, judged from the wire alone, gives the checks that tell one
// execution from two nothing to tell them by: no resource id, no effect
// count. Each is inconclusive and says what to give.
func TestEmptySuccessesOnTheWireAloneAreInconclusive(t *testing.T) {
	lost := idemcheck.CheckLostReply
	build := func(effects int64, body string) *histBuilder {
		b := newHist(t, idemcheck.IETF(), burst, seq, lost)
		b.intent(burst, effects, `1 0-5 200 `+body, `1 0-5 200 `+body, `1 0-5 200 `+body)
		b.intent(seq, effects, `1 6-7 200 `+body, `2 8-9 200 `+body)
		in := b.intent(lost, effects, `1 10-11 unknown`, `2 12-13 200 `+body)
		for i := range b.h.Attempts {
			if a := &b.h.Attempts[i]; a.Intent == in && a.Step == 1 {
				a.Fault, a.FaultLinks = "cut-reply", []string{idemcheck.LinkClient}
			}
		}
		b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: lost})
		return b
	}

	r := Report(&build(-1, "").h)
	assert.Empty(t, r.Anomalies)
	for _, name := range []string{burst, seq, lost} {
		c := status(t, r, name)
		assert.Equal(t, idemcheck.Inconclusive, c.Status, name)
		assert.Contains(t, c.Reason, "its success replies carry no resource id and no effect was counted, so nothing told one execution from two", name)
		assert.Contains(t, c.Reason, "EffectSQL", name)
	}
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)

	// A body without an id is no better than an empty one.
	r = Report(&build(-1, `{"status":"ok"}`).h)
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, seq).Status)

	// An effect count, or a resource id, is something to judge by.
	r = Report(&build(1, "").h)
	for _, name := range []string{burst, seq, lost} {
		assert.Equal(t, idemcheck.Pass, status(t, r, name).Status, "%s: %s", name, status(t, r, name).Reason)
	}
	r = Report(&build(-1, `{"orderId":"o-1"}`).h)
	for _, name := range []string{burst, seq, lost} {
		assert.Equal(t, idemcheck.Pass, status(t, r, name).Status, "%s: %s", name, status(t, r, name).Reason)
	}
}

// A history whose plan names checks its records do not hold (cut to its
// first lines) proves nothing of them: inconclusive, never a pass.
func TestHistoryCutShortIsInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst, seq, idemcheck.CheckLostReply)
	b.intent(burst, 1, `1 0-5 201 {"orderId":"A"}`, `1 0-5 201 {"orderId":"A"}`)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Pass, status(t, r, burst).Status)
	c := status(t, r, seq)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "the history holds no attempt of it, though the plan names it")
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
}

// A run that counted effects and a history without its counts (the
// observations removed, or cut before them): what is missing could have
// failed the check, so it cannot pass.
func TestEffectCountsMissingFromTheHistoryAreInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seq)
	b.h.Run.EffectQuery = "SELECT count(*) FROM orders WHERE customer_id = $1"
	b.intent(seq, 1, `1 0-1 201 {"orderId":"A"}`, `2 2-3 201 {"orderId":"A"}`)
	b.intent(seq, 1, `1 4-5 201 {"orderId":"B"}`, `2 6-7 201 {"orderId":"B"}`)
	require.Equal(t, idemcheck.Pass, Report(&b.h).Verdict)

	b.h.Observations = b.h.Observations[:1]
	r := Report(&b.h)
	c := status(t, r, seq)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Equal(t, "one of its 2 rounds has no effect count in the history, though the run counted effects: the history was cut short or edited, "+
		"and a pass would rest on what it lacks", c.Reason)
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)

	b.h.Observations = nil
	assert.Contains(t, status(t, Report(&b.h), seq).Reason, "2 of its 2 rounds have no effect count")
}
