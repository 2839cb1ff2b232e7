package assert

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

const (
	corrected = idemcheck.CheckCorrectedRetry
	keySyntax = idemcheck.CheckKeySyntax
	problem   = `{"title":"totalCents must be a number"}`
)

// lastIntent returns the checker of the history's last intent, run.
func lastIntent(b *histBuilder) *intentCheck {
	in := b.h.Intents[len(b.h.Intents)-1]
	c := &intentCheck{policy: b.h.Run.Policy, intent: in, attempts: b.h.ByIntent()[in.ID]}
	if o, ok := b.h.ObservationsByIntent()[in.ID]; ok {
		c.obs = &o
	}
	c.run()
	return c
}

func TestCorrectedRetryExecutesTheCorrection(t *testing.T) {
	for _, p := range []idemcheck.Policy{idemcheck.IETF(), idemcheck.Stripe()} {
		b := newHist(t, p, corrected)
		b.intent(corrected, 1,
			`1:invalid-body 0-1 400 `+problem,
			`2:corrected 2-3 200 {"orderId":"A"}`,
		)
		assert.Empty(t, Check(&b.h))
		assert.Equal(t, idemcheck.Pass, Report(&b.h).Verdict)
		assert.Empty(t, lastIntent(b).missedScenario())
	}
}

func TestCorrectedRetryGetsTheSavedRejection(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), corrected)
	b.intent(corrected, 0,
		`1:invalid-body 0-1 400 `+problem,
		`2:corrected 2-3 400 `+problem+` replayed`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.RejectedRequestSaved}, kinds(got))
	a := got[0]
	assert.Equal(t, []int{1, 2}, a.Attempts)
	assert.Equal(t, corrected, a.Check)
	assert.Contains(t, a.Explanation, "attempt 1 sent a body the target refused before doing any work (400")
	assert.Contains(t, a.Explanation, "got 400 "+problem+", the rejection of attempt 1 again")
	assert.Equal(t, 400, a.Observed["correction_status"])
	assert.Equal(t, idemcheck.Fail, Report(&b.h).Verdict)
}

// A store that saves the rejected request's fingerprint answers the
// correction with the mismatch status: the key is lost all the same.
func TestCorrectedRetryRefusedAsMismatch(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), corrected)
	b.intent(corrected, 0,
		`1:invalid-body 0-1 400 `+problem,
		`2:corrected 2-3 422 {"title":"key reused"}`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.RejectedRequestSaved}, kinds(got))
	assert.Contains(t, got[0].Explanation, "the mismatch status")
}

func TestCorrectedRetryWhereRejectionsAreSaved(t *testing.T) {
	p := idemcheck.IETF()
	p.SaveRejected = true
	held := newHist(t, p, corrected)
	held.intent(corrected, 0, `1:invalid-body 0-1 400 `+problem, `2:corrected 2-3 400 `+problem)
	held.intent(corrected, 0, `1:invalid-body 4-5 400 `+problem, `2:corrected 6-7 422 {}`)
	assert.Empty(t, Check(&held.h))

	ran := newHist(t, p, corrected)
	ran.intent(corrected, 1, `1:invalid-body 0-1 400 `+problem, `2:corrected 2-3 201 {"orderId":"A"}`)
	got := Check(&ran.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	assert.Contains(t, got[0].Explanation, "save_rejected")
}

// The rejected request must leave nothing behind: a correction that runs
// once and a count of two is a duplicate.
func TestCorrectedRetryCountsEffects(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), corrected)
	b.intent(corrected, 2, `1:invalid-body 0-1 400 `+problem, `2:corrected 2-3 201 {"orderId":"A"}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.DuplicateEffect}, kinds(Check(&b.h)))
}

func TestCorrectedRetryStuckClaim(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), corrected)
	b.intent(corrected, 0, `1:invalid-body 0-1 400 `+problem, `2:corrected 2-3 409 {}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(Check(&b.h)))
}

// Whether a changed request's scenario happened is read from the
// variants its attempts carry, whatever check sent them: an invalid body
// that was executed, or a long key that was refused, says so for a check
// the checker never heard of too.
func TestAMissedScenarioFollowsTheVariantsNotTheName(t *testing.T) {
	b := newHist(t, idemcheck.IETF())
	b.h.Run.Checks = []idemcheck.PlannedCheck{{Name: "made-up", Rule: "A made-up rule."}}
	b.intent("made-up", 1, `1:invalid-body 0-1 201 {"orderId":"A"}`, `2:corrected 2-3 422 {}`)
	assert.Contains(t, lastIntent(b).missedScenario(), "answered 201 to the invalid body (attempt 1)")
	b.intent("made-up", 0, `1:long-key 4-5 400 {}`, `2:long-key-twin 6-7 400 {}`)
	assert.Contains(t, lastIntent(b).missedScenario(), "did not execute the request under a valid key")
	b.intent("made-up", 1, `1 8-9 201 {"orderId":"B"}`, `2 10-11 201 {"orderId":"B"} replayed`)
	assert.Empty(t, lastIntent(b).missedScenario(), "plain requests have no condition of their own")
	r := Report(&b.h)
	require.Len(t, r.Checks, 1)
	assert.Equal(t, idemcheck.Pass, r.Checks[0].Status, "one round of three happened as meant: %s", r.Checks[0].Reason)
	assert.Contains(t, r.Checks[0].Proof, "1 of 3 rounds happened as meant")
}

// An invalid body the target executes means the scenario did not happen:
// nothing is judged, the effects are allowed, and the checker says why.
func TestCorrectedRetryMissedWhenTheBodyIsAccepted(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), corrected)
	b.intent(corrected, 1, `1:invalid-body 0-1 201 {"orderId":"A"}`, `2:corrected 2-3 422 {}`)
	assert.Empty(t, Check(&b.h))
	assert.Contains(t, lastIntent(b).missedScenario(), "answered 201 to the invalid body (attempt 1)")

	b.intent(corrected, 0, `1:invalid-body 4-5 500 {}`, `2:corrected 6-7 201 {"orderId":"B"}`)
	assert.Contains(t, lastIntent(b).missedScenario(), "answered 500")

	b.intent(corrected, -1, `1:invalid-body 8-9 400 {}`, `2:corrected 10-11 unknown`)
	assert.Contains(t, lastIntent(b).missedScenario(), "the correction (attempt 6) was not answered")

	// The report says so: no round happened as meant, so the check is
	// inconclusive, never a pass.
	one := newHist(t, idemcheck.IETF(), corrected)
	one.intent(corrected, 2, `1:invalid-body 0-1 201 {"orderId":"A"}`, `2:corrected 2-3 201 {"orderId":"B"}`)
	r := Report(&one.h)
	require.Len(t, r.Checks, 1)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status, "%v", r.Anomalies)
	assert.Contains(t, r.Checks[0].Reason, "answered 201 to the invalid body")
}

func TestMalformedKeysRefused(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 0,
		`1:empty-key 0-1 400 {}`,
		`2:overlong-key 2-3 400 {}`,
		`3:list-key 4-5 400 {}`,
	)
	assert.Empty(t, Check(&b.h))
	assert.Empty(t, lastIntent(b).missedScenario())
}

func TestMalformedKeyAccepted(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 1,
		`1:empty-key 0-1 400 {}`,
		`2:overlong-key 2-3 201 {"orderId":"A"}`,
		`3:list-key 4-5 400 {}`,
	)
	b.h.Attempts[1].Key = strings.Repeat("k", idemcheck.MaxKeyLen+1)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.MalformedKeyAccepted}, kinds(got), "the one effect is the accepted request's")
	assert.Equal(t, []int{2}, got[0].Attempts)
	assert.Contains(t, got[0].Explanation, "a key of 256 characters (limit 255)")

	// More effects than accepted requests: a refused one ran too.
	b2 := newHist(t, idemcheck.IETF(), keySyntax)
	b2.intent(keySyntax, 1, `1:empty-key 0-1 400 {}`, `2:overlong-key 2-3 400 {}`, `3:list-key 4-5 400 {}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.DuplicateEffect}, kinds(Check(&b2.h)))
}

// Without a rule (invalid_key_status 0), or with an optional key for the
// empty one, an executed request is not a finding.
func TestMalformedKeysWithoutRule(t *testing.T) {
	p := idemcheck.IETF()
	p.InvalidKeyStatus = 0
	b := newHist(t, p, keySyntax)
	b.intent(keySyntax, 1, `1:empty-key 0-1 400 {}`, `2:overlong-key 2-3 201 {"orderId":"A"}`, `3:list-key 4-5 400 {}`)
	assert.Empty(t, Check(&b.h))

	s := idemcheck.Stripe() // the key is optional: an empty key is no key
	b = newHist(t, s, keySyntax)
	b.intent(keySyntax, 1, `1:empty-key 0-1 200 {"orderId":"A"}`, `2:overlong-key 2-3 400 {}`, `3:list-key 4-5 400 {}`)
	assert.Empty(t, Check(&b.h))
}

// longKeys gives the intent's two attempts two keys that differ in their
// last character only.
func longKeys(b *histBuilder) {
	n := len(b.h.Attempts)
	prefix := strings.Repeat("p", idemcheck.LongKeyLen-1)
	b.h.Attempts[n-2].Key, b.h.Attempts[n-1].Key = prefix+"a", prefix+"b"
}

func TestLongKeysKeptApart(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 2, `1:long-key 0-1 201 {"orderId":"A"}`, `2:long-key-twin 2-3 201 {"orderId":"B"}`)
	longKeys(b)
	assert.Empty(t, Check(&b.h))
	assert.Empty(t, lastIntent(b).missedScenario())
}

func TestTruncatedKeysMerged(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 1, `1:long-key 0-1 201 {"orderId":"A"}`, `2:long-key-twin 2-3 201 {"orderId":"A"} replayed`)
	longKeys(b)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.OverDeduplication}, kinds(got), "one effect is all the merged keys made: no lost effect besides")
	assert.Equal(t, []int{1, 2}, got[0].Attempts)
	assert.Contains(t, got[0].Explanation, "equal to the first in its first 199 characters only")
	assert.Equal(t, 199, got[0].Observed["common_prefix"])

	// Two successes told, one effect counted: the database says the same.
	b2 := newHist(t, idemcheck.IETF(), keySyntax)
	b2.intent(keySyntax, 1, `1:long-key 0-1 201 {"orderId":"A"}`, `2:long-key-twin 2-3 201 {"orderId":"B"}`)
	longKeys(b2)
	assert.Equal(t, []idemcheck.Kind{idemcheck.LostEffect}, kinds(Check(&b2.h)))

	b3 := newHist(t, idemcheck.IETF(), keySyntax)
	b3.intent(keySyntax, 1, `1:long-key 0-1 201 {"orderId":"A"}`, `2:long-key-twin 2-3 422 {}`)
	longKeys(b3)
	assert.Equal(t, []idemcheck.Kind{idemcheck.OverDeduplication}, kinds(Check(&b3.h)))
}

// A target that refuses keys of 200 characters (a store of 36-character
// UUIDs) cannot show truncation: the half is missed, not failed.
func TestLongKeysRefused(t *testing.T) {
	b := newHist(t, idemcheck.GoFiber(), keySyntax)
	b.intent(keySyntax, 0, `1:long-key 0-1 400 {}`, `2:long-key-twin 2-3 400 {}`)
	longKeys(b)
	assert.Empty(t, Check(&b.h))
	assert.Contains(t, lastIntent(b).missedScenario(), "did not execute the request under a valid key of 200 characters (attempt 1: 400")
}

// A correct service that takes a 256-character key and a key with a comma
// loses nothing: under the IETF default the two are conformance remarks,
// apart from the verdict, and the check passes; where the policy requires
// key syntax (Stripe documents its 255-character limit) they fail it.
func TestAcceptedMalformedKeysAreRemarksUnlessRequired(t *testing.T) {
	hist := func(p idemcheck.Policy) *histBuilder {
		b := newHist(t, p, keySyntax)
		b.intent(keySyntax, 4,
			`1:empty-key 0-1 400 {}`,
			`2:overlong-key 2-3 201 {"orderId":"A"}`,
			`3:list-key 4-5 201 {"orderId":"B"}`,
			`4:long-key 6-7 201 {"orderId":"C"}`,
			`5:long-key-twin 8-9 201 {"orderId":"D"}`,
		)
		b.h.Attempts[1].Key = strings.Repeat("k", idemcheck.MaxKeyLen+1)
		b.h.Attempts[2].Key = "k-1,k-2"
		longKeys(b)
		return b
	}
	r := Report(&hist(idemcheck.IETF()).h)
	assert.Equal(t, idemcheck.Pass, r.Verdict)
	assert.Empty(t, r.Anomalies)
	require.Len(t, r.Remarks, 2)
	for _, a := range r.Remarks {
		assert.Equal(t, idemcheck.MalformedKeyAccepted, a.Kind)
		assert.Equal(t, idemcheck.ConformanceFinding, a.Class)
	}
	require.Len(t, r.Checks, 1)
	assert.Equal(t, idemcheck.Pass, r.Checks[0].Status)
	assert.Equal(t, []int{0, 1}, r.Checks[0].Remarks)
	assert.Empty(t, r.Checks[0].Anomalies)

	p := idemcheck.IETF()
	p.KeySyntax = idemcheck.KeySyntaxRequired
	r = Report(&hist(p).h)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	assert.Len(t, r.Anomalies, 2)
	assert.Empty(t, r.Remarks)
	assert.Equal(t, idemcheck.Fail, r.Checks[0].Status)

	s := idemcheck.Stripe()
	s.CreatedStatuses = []int{201}
	assert.Equal(t, idemcheck.Fail, Report(&hist(s).h).Verdict, "the Stripe preset requires key syntax")
}

// A malformed key refused with another status than the policy's loses
// nothing either: a remark on the status, not a failure.
func TestMalformedKeyRefusedWithAnotherStatusIsARemark(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 0, `1:empty-key 0-1 400 {}`, `2:overlong-key 2-3 422 {}`, `3:list-key 4-5 400 {}`)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Pass, r.Verdict)
	require.Len(t, r.Remarks, 1)
	assert.Equal(t, idemcheck.UnexpectedStatus, r.Remarks[0].Kind)
	assert.Equal(t, idemcheck.ConformanceFinding, r.Remarks[0].Finding())
}

// Two long keys taken for one is a failure whatever the policy says of
// key syntax: one client is answered with another's response.
func TestCollidingLongKeysFailWithoutKeySyntaxRequired(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), keySyntax)
	b.intent(keySyntax, 1, `1:long-key 0-1 201 {"orderId":"A"}`, `2:long-key-twin 2-3 201 {"orderId":"A"} replayed`)
	longKeys(b)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	require.Len(t, r.Anomalies, 1)
	assert.Equal(t, idemcheck.OverDeduplication, r.Anomalies[0].Kind)
	assert.Equal(t, idemcheck.FailureFinding, r.Anomalies[0].Class)
	assert.Empty(t, r.Remarks)
}
