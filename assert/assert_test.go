package assert

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
)

// histBuilder writes small histories in a line notation, one attempt a line:
//
//	"<step>[:variant] <start>-<end> <status|unknown|not-sent> [body] [replayed]"
//
// Times are in milliseconds from an arbitrary origin; "replayed" sets the
// Idempotent-Replayed header on the reply.
type histBuilder struct {
	t *testing.T
	h idemcheck.History
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newHist starts a history of the named checks, planned as a run plans
// them: each known check with its rule and fault flag from the registry,
// and the checks not named recorded as not asked for.
func newHist(t *testing.T, p idemcheck.Policy, checks ...string) *histBuilder {
	b := &histBuilder{t: t}
	b.h.Run.Policy = p
	for _, c := range checks {
		pc := idemcheck.PlannedCheck{Name: c}
		if known, err := scenarios.Lookup(c); err == nil {
			pc = known.Planned("")
		}
		b.h.Run.Checks = append(b.h.Run.Checks, pc)
	}
	b.h.Run.NotAsked = scenarios.NotAsked(b.h.Run.Checks)
	return b
}

// intent adds an intent of check with the given attempts and, when effects
// >= 0, the database's effect count.
func (b *histBuilder) intent(check string, effects int64, lines ...string) string {
	b.t.Helper()
	seq := len(b.h.Intents) + 1
	in := idemcheck.Intent{ID: fmt.Sprintf("in-%d", seq), Key: fmt.Sprintf("key-%d", seq), Seq: seq, Check: check, Round: 1}
	b.h.Intents = append(b.h.Intents, in)
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		require.GreaterOrEqual(b.t, len(f), 3, "attempt line %q", l)
		stepStr, variant, _ := strings.Cut(f[0], ":")
		step, err := strconv.Atoi(stepStr)
		require.NoError(b.t, err)
		var s, e int
		_, err = fmt.Sscanf(f[1], "%d-%d", &s, &e)
		require.NoError(b.t, err, "times in %q", l)
		a := idemcheck.Attempt{
			ID: len(b.h.Attempts) + 1, Intent: in.ID, Key: in.Key, Check: check, Round: 1, Step: step, Variant: idemcheck.Variant(variant),
			Method: "POST", Path: "/orders", Body: `{"customerId":"` + in.ID + `","totalCents":4000}`,
			Start: t0.Add(time.Duration(s) * time.Millisecond), End: t0.Add(time.Duration(e) * time.Millisecond),
		}
		switch f[2] {
		case "unknown":
			a.Outcome, a.Error = idemcheck.Unknown, "malformed HTTP response"
		case "not-sent":
			a.Outcome, a.Error = idemcheck.NotSent, "connection refused"
		default:
			a.Outcome = idemcheck.Replied
			a.Status, err = strconv.Atoi(f[2])
			require.NoError(b.t, err)
		}
		if len(f) == 4 {
			body := f[3]
			if rest, ok := strings.CutSuffix(body, " replayed"); ok {
				body = rest
				a.RespHeader = http.Header{"Idempotent-Replayed": {"true"}}
			}
			a.RespBody = body
		}
		b.h.Attempts = append(b.h.Attempts, a)
	}
	if effects >= 0 {
		b.h.Observations = append(b.h.Observations, idemcheck.Observation{
			Intent: in.ID, Check: check, Effects: effects,
			Query: "SELECT count(*) FROM orders WHERE customer_id = $1", Args: []string{in.ID},
		})
	}
	return in.ID
}

func kinds(as []idemcheck.Anomaly) []idemcheck.Kind {
	out := []idemcheck.Kind{}
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

const burst = idemcheck.CheckConcurrentBurst

func TestCorrectBurstHasNoAnomaly(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	b.intent(burst, 1,
		`1 0-5 201 {"orderId":"A","customerId":"in-1"}`,
		`1 0-1 409 {"title":"in progress"}`,
		`1 1-2 409 {"title":"in progress"}`,
		// A late duplicate that arrived after the commit gets the saved 201:
		// the same resource told twice is one creation, not two.
		`1 1-7 201 {"orderId":"A","customerId":"in-1"} replayed`,
	)
	assert.Empty(t, Check(&b.h))
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Pass, r.Verdict)
	require.Len(t, r.Checks, 1)
	assert.Equal(t, idemcheck.Pass, r.Checks[0].Status)
	assert.Equal(t, 4, r.Checks[0].Attempts)
}

func TestCheckThenInsertRace(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst)
	b.intent(burst, 2,
		`1 0-5 201 {"orderId":"A","customerId":"in-1"}`,
		`1 0-6 201 {"orderId":"B","customerId":"in-1"}`,
		`1 1-2 409 {}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.MultipleCreated, idemcheck.DuplicateEffect}, kinds(got))
	mc := got[0]
	assert.Equal(t, []int{1, 2}, mc.Attempts)
	assert.Equal(t, "key-1", mc.Key)
	assert.Contains(t, mc.Explanation, "2 distinct resources")
	assert.Contains(t, mc.Explanation, "/orderId: A, B", "the id is read from orderId, not the echoed customerId")
	require.Len(t, mc.Evidence, 2)
	assert.Equal(t, 201, mc.Evidence[1].Status)
	assert.Equal(t, int64(2), got[1].Observed["effects"])
	assert.Equal(t, []int{1, 2}, got[1].Attempts, "the witnesses are the attempts that created distinct orders")

	r := Report(&b.h)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	assert.Equal(t, []int{0, 1}, r.Checks[0].Anomalies)
}

func TestTwoRepliesOfOneResourceAreNotMultipleCreated(t *testing.T) {
	// Same orderId twice with the same body, overlapping: one creation and a replay.
	b := newHist(t, idemcheck.IETF(), burst)
	b.intent(burst, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`1 0-6 201 {"orderId":"A"}`,
	)
	assert.Empty(t, Check(&b.h))
}

func TestFreshResultOnSequentialReplay(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, -1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 10-15 201 {"orderId":"B"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.FreshResultOnReplay}, kinds(got))
	assert.Equal(t, []int{1, 2}, got[0].Attempts)
	assert.Contains(t, got[0].Explanation, "attempt 2 sent the same key after that reply had arrived")
}

func TestReplayMismatch(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckSequentialReplay)
	// A replay that re-renders current state: same order, another status and body.
	b.intent(idemcheck.CheckSequentialReplay, 1,
		`1 0-5 201 {"orderId":"A","state":"new"}`,
		`2 10-15 200 {"orderId":"A","state":"paid"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	assert.Contains(t, got[0].Explanation, `status 200, body {"orderId":"A","state":"paid"}`)
}

func TestIgnoredFieldsAndMemberOrder(t *testing.T) {
	p := idemcheck.IETF()
	p.IgnoreFields = []string{"/servedAt"}
	b := newHist(t, p, idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, 1,
		`1 0-5 201 {"orderId":"A","n":1,"servedAt":"10:00"}`,
		`2 10-15 201 { "n": 1, "orderId": "A", "servedAt": "10:01" }`,
	)
	assert.Empty(t, Check(&b.h))
}

func TestMissingReplayMarker(t *testing.T) {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	b := newHist(t, p, idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 10-15 201 {"orderId":"A"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ReplayMismatch}, kinds(got))
	assert.Contains(t, got[0].Explanation, `no "Idempotent-Replayed" header`)

	b = newHist(t, p, idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2 10-15 201 {"orderId":"A"} replayed`,
	)
	assert.Empty(t, Check(&b.h))
}

func TestServerErrors(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst, idemcheck.CheckSequentialReplay)
	// A unique-constraint collision surfacing as 500 under a burst.
	b.intent(burst, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`1 0-4 500 {"title":"duplicate key value violates unique constraint"}`,
	)
	// A lone 500 with no other attempt around is not "under retry".
	b.intent(idemcheck.CheckSequentialReplay, 0,
		`1 0-5 500 {"title":"boom"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ServerErrorUnderRetry, idemcheck.UnexpectedStatus}, kinds(got))
	assert.Equal(t, []int{2}, got[0].Attempts)
	assert.Equal(t, []int{3}, got[1].Attempts)
}

func TestSavedErrorReplayedIsFineWhenPolicySaysSo(t *testing.T) {
	p := idemcheck.IETF()
	p.ReplayErrors = true
	b := newHist(t, p, idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, 0,
		`1 0-5 500 {"title":"card declined"}`,
		`2 10-15 500 {"title":"card declined"}`,
	)
	// The first 500 is unexpected (nothing was retried yet); the second
	// replays it, which the policy allows.
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(got))
	assert.Equal(t, []int{1}, got[0].Attempts)

	p.ReplayErrors = false
	b.h.Run.Policy = p
	got = Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.ServerErrorUnderRetry, idemcheck.UnexpectedStatus}, kinds(got))
}

func TestLostReply(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckLostReply)
	b.intent(idemcheck.CheckLostReply, 1,
		`1 0-5 unknown`,
		`2 10-15 201 {"orderId":"A"} replayed`,
	)
	b.intent(idemcheck.CheckLostReply, 2,
		`1 20-25 unknown`,
		`2 30-35 201 {"orderId":"B"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.DuplicateEffect}, kinds(got))
	assert.Equal(t, "in-2", got[0].Intent)
	assert.Equal(t, []int{3, 4}, got[0].Attempts)
}

func TestLostEffect(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, 0, `1 0-5 201 {"orderId":"A"}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.LostEffect}, kinds(Check(&b.h)))
}

func TestConflictWithoutAnotherAttemptIsUnexpected(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckSequentialReplay)
	b.intent(idemcheck.CheckSequentialReplay, -1, `1 0-5 409 {}`)
	// A 409 to a request that met no other attempt of its intent: the key
	// was held by nothing the client knows of.
	assert.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(Check(&b.h)))

	b = newHist(t, idemcheck.IETF(), idemcheck.CheckLostReply)
	// After a cut reply, a conflict on the retry is allowed: the first
	// attempt may still be in flight at the server.
	b.intent(idemcheck.CheckLostReply, -1, `1 0-5 unknown`, `2 6-8 409 {}`)
	assert.Empty(t, Check(&b.h))
}

func TestNotSentAttemptsDoNotExcuseConflicts(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), idemcheck.CheckLostReply)
	b.intent(idemcheck.CheckLostReply, -1, `1 0-1 not-sent`, `2 6-8 409 {}`)
	assert.Equal(t, []idemcheck.Kind{idemcheck.UnexpectedStatus}, kinds(Check(&b.h)))
}

func TestReportSkipsAndEmptyChecks(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst, idemcheck.CheckLostReply)
	b.h.Run.Checks[1].Skip = "needs a database"
	b.intent(burst, 1, `1 0-5 201 {"orderId":"A"}`)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Pass, r.Verdict)
	assert.Equal(t, idemcheck.Pass, r.Checks[0].Status)
	assert.Equal(t, idemcheck.Skip, r.Checks[1].Status)
	assert.Equal(t, "needs a database", r.Checks[1].Reason)
	assert.NotEmpty(t, r.Checks[0].Rule)

	empty := newHist(t, idemcheck.IETF(), burst)
	r = Report(&empty.h)
	assert.Equal(t, idemcheck.Inconclusive, r.Checks[0].Status, "a planned check that sent nothing never passes, and did not skip")
	assert.Contains(t, r.Checks[0].Reason, "the history holds no attempt of it")
}

func TestResourceID(t *testing.T) {
	cases := []struct {
		resp, req, ptr, wantID, wantPtr string
	}{
		{`{"id":7,"orderId":"x"}`, `{}`, "", "7", "/id"},
		{`{"customerId":"c1","orderId":"o1"}`, `{"customerId":"c1"}`, "", "o1", "/orderId"},
		{`{"customerId":"c1"}`, `{"customerId":"c1"}`, "", "", ""},
		{`{"data":{"ref":"r9"}}`, `{}`, "/data/ref", "r9", "/data/ref"},
		{`{"a/b":"v"}`, `{}`, "/a~1b", "v", "/a~1b"},
		{`not json`, `{}`, "", "", ""},
		{`{"payment_id":"p"}`, `{}`, "", "p", "/payment_id"},
	}
	for _, c := range cases {
		id, ptr := resourceID(c.resp, c.req, c.ptr)
		assert.Equal(t, c.wantID, id, c.resp)
		assert.Equal(t, c.wantPtr, ptr, c.resp)
	}
}

func TestCanonicalBody(t *testing.T) {
	assert.Equal(t, `{"a":1,"b":[1,2]}`, canonicalBody(`{ "b": [1,2], "a": 1 }`, nil))
	assert.Equal(t, `{"a":1}`, canonicalBody(`{"a":1,"t":{"x":1}}`, []string{"/t"}))
	assert.Equal(t, `{"a":1,"t":{}}`, canonicalBody(`{"a":1,"t":{"x":1}}`, []string{"/t/x"}))
	assert.Equal(t, `[1,3]`, canonicalBody(`[1,2,3]`, []string{"/1"}))
	assert.Equal(t, `plain`, canonicalBody(`plain`, nil))
	// Large numbers keep their digits.
	assert.Equal(t, `{"n":12345678901234567890}`, canonicalBody(`{"n":12345678901234567890}`, nil))
}

func TestValidatePointer(t *testing.T) {
	assert.NoError(t, ValidatePointer("/a/b~0c"))
	assert.Error(t, ValidatePointer("a"))
	assert.Error(t, ValidatePointer("/a~2"))
}

func TestPayloadMismatch(t *testing.T) {
	const c = idemcheck.CheckPayloadMismatch
	b := newHist(t, idemcheck.IETF(), c)
	// Correct: rejected with 422, the original replayed untouched.
	b.intent(c, 1,
		`1 0-5 201 {"orderId":"A"}`,
		`2:other-body 10-12 422 {"title":"mismatch"}`,
		`3 20-22 201 {"orderId":"A"}`,
	)
	// Silently replayed: the changed request got the first answer.
	b.intent(c, 1,
		`1 30-35 201 {"orderId":"B"}`,
		`2:other-body 40-42 201 {"orderId":"B"}`,
		`3 50-52 201 {"orderId":"B"}`,
	)
	// Re-run: a second order for one key; the extra effect is explained
	// by the mismatch anomaly, not reported twice.
	b.intent(c, 2,
		`1 60-65 201 {"orderId":"C"}`,
		`2:other-body 70-72 201 {"orderId":"D"}`,
		`3 80-82 201 {"orderId":"C"}`,
	)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.PayloadMismatchAccepted, idemcheck.PayloadMismatchAccepted}, kinds(got))
	assert.Equal(t, "in-2", got[0].Intent)
	assert.Contains(t, got[0].Explanation, "saved result")
	assert.Equal(t, "in-3", got[1].Intent)
	assert.Contains(t, got[1].Explanation, "executed it as new work")
	assert.Equal(t, []int{7, 8}, got[1].Attempts)
}

func TestReorderedBody(t *testing.T) {
	const c = idemcheck.CheckReorderedBody
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, 1, `1 0-5 201 {"orderId":"A"}`, `2:reordered 10-12 201 {"orderId":"A"}`)
	b.intent(c, 1, `1 20-25 201 {"orderId":"B"}`, `2:reordered 30-32 422 {"title":"mismatch"}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.FalseMismatch}, kinds(got))
	assert.Equal(t, []int{3, 4}, got[0].Attempts)
}

func TestCrossEndpoint(t *testing.T) {
	const c = idemcheck.CheckCrossEndpoint
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, -1, `1 0-5 201 {"orderId":"A"}`, `2:other-endpoint 10-12 201 {"paymentId":"P"}`)
	b.intent(c, -1, `1 20-25 201 {"orderId":"B"}`, `2:other-endpoint 30-32 201 {"orderId":"B"}`)
	b.intent(c, -1, `1 40-45 201 {"orderId":"C"}`, `2:other-endpoint 50-52 422 {}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.CrossEndpointReplay}, kinds(got))
	assert.Equal(t, "in-2", got[0].Intent)
}

func TestDistinctKeys(t *testing.T) {
	const c = idemcheck.CheckDistinctKeys
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, 2, `1 0-5 201 {"orderId":"A"}`, `2:other-key 10-12 201 {"orderId":"A2"}`)
	// Deduplicated by body: the new key got the old order.
	b.intent(c, 1, `1 20-25 201 {"orderId":"B"}`, `2:other-key 30-32 201 {"orderId":"B"}`)
	// Refused as if it were a duplicate.
	b.intent(c, 1, `1 40-45 201 {"orderId":"C"}`, `2:other-key 50-52 409 {}`)
	// Told of a second order the database does not hold.
	b.intent(c, 1, `1 60-65 201 {"orderId":"D"}`, `2:other-key 70-72 201 {"orderId":"D2"}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.OverDeduplication, idemcheck.OverDeduplication, idemcheck.LostEffect}, kinds(got))
	assert.Equal(t, []string{"in-2", "in-3", "in-4"}, []string{got[0].Intent, got[1].Intent, got[2].Intent})
}

func TestMissingKey(t *testing.T) {
	const c = idemcheck.CheckMissingKey
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, 0, `1:no-key 0-5 400 {"title":"key required"}`)
	b.intent(c, 1, `1:no-key 10-15 201 {"orderId":"A"}`)
	b.intent(c, 0, `1:no-key 20-25 404 {}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.MissingKeyAccepted, idemcheck.UnexpectedStatus}, kinds(got))
	assert.Equal(t, []int{2}, got[0].Attempts)
}

func TestContractListsEveryRule(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst, idemcheck.CheckSequentialReplay, idemcheck.CheckCrossEndpoint)
	b.h.Run.Checks[2].Skip = "no second endpoint"
	b.intent(burst, 2, `1 0-5 201 {"orderId":"A"}`, `1 0-6 201 {"orderId":"B"}`)
	b.intent(idemcheck.CheckSequentialReplay, -1, `1 10-15 201 {"orderId":"C"}`, `2 20-25 201 {"orderId":"C"}`)
	r := Report(&b.h)
	require.Len(t, r.Contract, len(scenarios.Names()))
	byCheck := map[string]idemcheck.RuleResult{}
	for _, rr := range r.Contract {
		assert.NotEmpty(t, rr.Rule, rr.Check)
		assert.NotEqual(t, NoRule, rr.Rule, rr.Check)
		byCheck[rr.Check] = rr
	}
	assert.Equal(t, idemcheck.RuleBroken, byCheck[burst].Status)
	assert.Contains(t, byCheck[burst].Basis, "database")
	assert.Equal(t, idemcheck.RuleHeld, byCheck[idemcheck.CheckSequentialReplay].Status)
	assert.Contains(t, byCheck[idemcheck.CheckSequentialReplay].Basis, "the wire alone")
	assert.Equal(t, idemcheck.RuleNotChecked, byCheck[idemcheck.CheckCrossEndpoint].Status)
	assert.Equal(t, "no second endpoint", byCheck[idemcheck.CheckCrossEndpoint].Reason)
	assert.Equal(t, "not asked for (Checks)", byCheck[idemcheck.CheckMissingKey].Reason)
	assert.Contains(t, byCheck[idemcheck.CheckSequentialReplay].Basis, "(DB, EffectSQL, or EffectHTTP)", "Go's words")
}

func TestCrossTenant(t *testing.T) {
	const c = idemcheck.CheckCrossTenant
	b := newHist(t, idemcheck.IETF(), c)
	b.intent(c, 2, `1:tenant-a 0-5 201 {"orderId":"A"}`, `2:other-tenant 10-12 201 {"orderId":"B"}`)
	b.intent(c, 1, `1:tenant-a 20-25 201 {"orderId":"C"}`, `2:other-tenant 30-32 201 {"orderId":"C"}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.CrossTenantReplay}, kinds(got))
	assert.Equal(t, "in-2", got[0].Intent)
	assert.Contains(t, got[0].Explanation, "leaks")
}

func TestWebhookAcknowledgementsAndRedelivery(t *testing.T) {
	const c = idemcheck.CheckWebhookRedeliver
	b := newHist(t, idemcheck.Webhook(), c)
	// Concurrent redeliveries all acknowledged, with different bodies: fine
	// for acknowledgements; the database says whether it happened once.
	b.intent(c, 1, `1 0-5 200 {"status":"processed"}`, `1 0-6 200 {"status":"duplicate"}`)
	b.intent(c, 2, `1 10-15 200 {"status":"processed"}`, `1 10-16 200 {"status":"processed"}`)
	// A failed first delivery, then a redelivery acknowledged but skipped.
	b.intent(c, 0, `1:failing-body 20-25 500 {}`, `2:failing-body 30-35 200 {"status":"duplicate"}`)
	// The same, applied: fine.
	b.intent(c, 1, `1:failing-body 40-45 500 {}`, `2:failing-body 50-55 200 {"status":"processed"}`)
	got := Check(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.DuplicateEffect, idemcheck.LostEffect}, kinds(got))
	assert.Equal(t, "in-2", got[0].Intent)
	assert.Equal(t, "in-3", got[1].Intent)
}
