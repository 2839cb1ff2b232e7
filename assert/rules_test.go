package assert

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

const seqReplay = idemcheck.CheckSequentialReplay

// A retry sent after the first attempt's success had arrived, answered with
// the in-progress status: nothing was in progress any more.
func TestInProgressAfterCompletionIsAReplayMismatch(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seqReplay)
	b.intent(seqReplay, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 10-12 409 {"title":"request in progress"}`,
		`2 20-22 409 {"title":"request in progress"}`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	a := got[0]
	assert.Equal(t, []int{1, 2, 3}, a.Attempts, "the completed attempt, then every retry told in progress")
	assert.Contains(t, a.Explanation, "attempt 1 succeeded with 201")
	assert.Contains(t, a.Explanation, "its reply had arrived 5.0 ms after")
	assert.Contains(t, a.Explanation, "was sent after that (at 10.0 ms) and got 409")
	assert.Contains(t, a.Explanation, "2 retries after completion were told in progress")
	assert.Equal(t, 1, a.Observed["completed_by"])
	assert.Equal(t, 2, a.Observed["in_progress_after_completion"])
	assert.Equal(t, 5.0, a.Observed["sent_after_completion_ms"], "how long after the reply the retry went: a narrow race or a key left in progress")
}

// The same conflict while the first attempt was still running is fine,
// and so is one that met an attempt whose reply never came.
func TestInProgressBeforeCompletionIsFine(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seqReplay, idemcheck.CheckLostReply)
	// The retry started before the success's reply arrived (4 < 5).
	b.intent(seqReplay, 1, `1 0-5 201 {"orderId":"A"}`, `2 4-6 409 {}`, `2 10-12 201 {"orderId":"A"}`)
	// The first attempt's reply was cut: the server may still be on it.
	b.intent(idemcheck.CheckLostReply, 1, `1 20-25 unknown`, `2 30-32 409 {}`, `2 40-42 201 {"orderId":"B"}`)
	assert.Empty(t, Check(&b.h))
}

// After a fault, in-progress answers are checkStuck's to judge, except once
// a success had already arrived.
func TestInProgressAfterCompletionInAFaultCheck(t *testing.T) {
	const c = idemcheck.CheckLeaseFencing
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, 1,
		`1 0-50 409 {}`,
		`2 20-30 201 {"orderId":"A"}`,
		`3 60-62 409 {}`,
		`3 70-72 201 {"orderId":"A"}`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	assert.Equal(t, []int{2, 3}, got[0].Attempts)
}

// A target that answers 423 when it timed out on the key's lock, beside
// 409: both are in-progress statuses once the policy lists them.
func TestSeveralInProgressStatuses(t *testing.T) {
	p := idemcheck.IETF()
	lines := []string{
		`1 0-5 201 {"orderId":"A"}`,
		`1 0-3 409 {}`,
		`1 0-4 423 {"title":"lock timeout"}`,
	}
	b := newHist(t, p, burst)
	b.intent(burst, 1, lines...)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(got), "423 is not in the IETF policy")
	assert.Equal(t, []int{3}, got[0].Attempts)

	p.SetInProgress(409, 423)
	b = newHist(t, p, burst)
	b.intent(burst, 1, lines...)
	assert.Empty(t, Check(&b.h))

	// After completion, 423 is as wrong as 409.
	b = newHist(t, p, seqReplay)
	b.intent(seqReplay, 1, `1 0-5 201 {"orderId":"A"}`, `2 10-12 423 {}`)
	got = Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	assert.Contains(t, got[0].Explanation, "got 423")
}

// A key stuck after a crash is stuck whichever in-progress status it says.
func TestStuckKeyWithASecondInProgressStatus(t *testing.T) {
	const c = idemcheck.CheckCrashLease
	p := idemcheck.IETF()
	p.SetInProgress(409, 423)
	p.Lease = time.Second
	b := newHist(t, p, c)
	b.intent(c, 0, `1 0-5 unknown`, `2 10-12 423 {}`, `2 20-22 409 {}`, `2 30-32 423 {}`)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(got))
	assert.Contains(t, got[0].Explanation, "all got 423, 409 (in progress)")
}

// 201 first, then 422 on every later identical retry: a replay that does
// not match the saved reply, not a status out of the blue.
func TestReplayWithAnotherStatusIsAReplayMismatch(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seqReplay)
	b.intent(seqReplay, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 10-12 422 {"title":"idempotency key reused"}`,
		`3 20-22 422 {"title":"idempotency key reused"}`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	a := got[0]
	assert.Equal(t, []int{1, 2, 3}, a.Attempts, "every retry after completion is a witness, the saved-error look-alike too")
	assert.Contains(t, a.Explanation, "attempt 2, the same request with key key-1 sent after that reply had arrived, got 422")
	assert.Contains(t, a.Explanation, "2 of the retries after completion got another status: 422")
	assert.Equal(t, 2, a.Observed["other_status_after_completion"])
}

// A 5xx on a replay stays a server error under retry; a reordered body
// refused as a mismatch stays a false mismatch.
func TestAfterCompletionLeavesOtherRulesTheirCases(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), seqReplay, idemcheck.CheckReorderedBody)
	b.intent(seqReplay, 1, `1 0-5 201 {"orderId":"A"}`, `2 10-12 503 {}`)
	b.intent(idemcheck.CheckReorderedBody, 1, `1 20-25 201 {"orderId":"B"}`, `2:reordered 30-32 422 {}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ServerErrorUnderRetry, idemcheck.FalseMismatch}, kinds(got))
}

// A reordered retry after completion told "in progress" is due the replay too.
func TestReorderedRetryToldInProgressAfterCompletion(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckReorderedBody)
	b.intent(idemcheck.CheckReorderedBody, 1, `1 0-5 201 {"orderId":"A"}`, `2:reordered 10-12 409 {}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(Check(&b.h)))
}

// Changed requests are judged by their own rules, not as replays.
func TestChangedRequestsAfterCompletionAreNotReplays(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckPayloadMismatch)
	b.intent(idemcheck.CheckPayloadMismatch, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2:other-body 10-12 409 {}`,
		`3 20-22 201 {"orderId":"A"}`,
	)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(got), "the payload-mismatch rule's own verdict")
	assert.Contains(t, got[0].Explanation, "must get 422")
}

func TestKeyHeaderHint(t *testing.T) {
	// Every sequential replay is a fresh execution and no reply is marked
	// as a replay: the hint names the key header setting, once, in the
	// caller's words.
	b := newHist(t, idemcheck.GoFiber(), seqReplay)
	b.intent(seqReplay, -1, `1 0-5 201 {"orderId":"A"}`, `2 10-15 201 {"orderId":"B"}`)
	b.intent(seqReplay, -1, `1 20-25 201 {"orderId":"C"}`, `2 30-35 201 {"orderId":"D"}`)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.FreshResultOnReplay, idemcheck.FreshResultOnReplay}, kinds(got))
	assert.Contains(t, got[0].Explanation, "name that header (set Policy.KeyHeader).")
	assert.Contains(t, got[0].Explanation, `expects the key in "X-Idempotency-Key"`)
	assert.Contains(t, got[0].Explanation, "every one of the 2 intents replayed")
	assert.Equal(t, "key-header", got[0].Observed["hint"])
	assert.NotContains(t, got[1].Explanation, "Policy.KeyHeader", "one hint is enough")
	flags := ReportIn(&b.h, Words{"Policy.KeyHeader": {Name: "--key-header", Set: "--key-header, or key_header: in the policy"}})
	assert.Contains(t, flags.Anomalies[0].Explanation, "name that header (--key-header, or key_header: in the policy).")

	// One replay was a real replay: the key is read, this is a real bug.
	b = newHist(t, idemcheck.GoFiber(), seqReplay)
	b.intent(seqReplay, -1, `1 0-5 201 {"orderId":"A"}`, `2 10-15 201 {"orderId":"B"}`)
	b.intent(seqReplay, -1, `1 20-25 201 {"orderId":"C"}`, `2 30-35 201 {"orderId":"C"}`)
	got = Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.FreshResultOnReplay}, kinds(got))
	assert.NotContains(t, got[0].Explanation, "--key-header")

	// A reply marked as a replay shows the target reads the key.
	b = newHist(t, idemcheck.GoFiber(), seqReplay, burst)
	b.intent(seqReplay, -1, `1 0-5 201 {"orderId":"A"}`, `2 10-15 201 {"orderId":"B"}`)
	b.intent(burst, -1, `1 20-25 201 {"orderId":"C"}`, `1 20-26 201 {"orderId":"C"} replayed`)
	got = Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.FreshResultOnReplay}, kinds(got))
	assert.NotContains(t, got[0].Explanation, "--key-header")
	assert.Nil(t, got[0].Observed["hint"])

	// The policy's own marker counts, the default one then does not.
	p := idemcheck.GoFiber()
	p.ReplayHeader = "X-Replayed"
	b = newHist(t, p, seqReplay)
	b.intent(seqReplay, -1, `1 0-5 201 {"orderId":"A"}`, `2 10-15 201 {"orderId":"B"}`)
	got = Check(&b.h)
	assert.Contains(t, got[0].Explanation, "no reply carried a replay marker (X-Replayed)")
	b.h.Attempts[1].RespHeader = http.Header{"X-Replayed": {"true"}}
	got = Check(&b.h)
	assert.NotContains(t, got[0].Explanation, "--key-header")
}
