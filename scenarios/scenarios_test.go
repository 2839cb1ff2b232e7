package scenarios

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets"
)

var in = idemcheck.Intent{ID: "ic-ab-1", Key: "0f8fad5b-d9cb-469f-a165-70867728950e", Seq: 1}

func TestMutateBody(t *testing.T) {
	cases := map[string]string{
		`{"customerId":"ic-ab-1","totalCents":4000}`: `{"customerId":"ic-ab-1","totalCents":4001}`,
		`{"customerId":"ic-ab-1","note":"x"}`:        `{"customerId":"ic-ab-1","note":"x-changed"}`,
		`{"customerId":"ic-ab-1"}`:                   `{"customerId":"ic-ab-1","idemcheckChanged":true}`,
		`{"a":{"b":[1.5]}}`:                          `{"a":{"b":[1.51]}}`,
	}
	for body, want := range cases {
		assert.Equal(t, want, MutateBody(body, in), body)
	}
	assert.NotEqual(t, "plain", MutateBody("plain", in))
}

func TestReorderBody(t *testing.T) {
	body := `{"customerId":"ic-ab-1","totalCents":4000,"items":[{"sku":"a","n":1}]}`
	got := ReorderBody(body)
	assert.NotEqual(t, body, got, "different bytes")
	var a, b any
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	require.NoError(t, json.Unmarshal([]byte(got), &b))
	assert.Equal(t, a, b, "the same JSON value")
	assert.Less(t, indexOf(got, "items"), indexOf(got, "customerId"), "members reversed: %s", got)
}

func indexOf(s, sub string) int {
	for i := range len(s) - len(sub) + 1 {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestPlanSkipsWithReasons(t *testing.T) {
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`)}
	scs, plan, err := Plan(Names(), Defaults, idemcheck.GoFiber(), e, nil, nil)
	require.NoError(t, err)
	skipped := map[string]string{}
	for _, p := range plan {
		if p.Skip != "" {
			skipped[p.Name] = p.Skip
		}
	}
	assert.Contains(t, skipped[idemcheck.CheckPayloadMismatch], "no request fingerprint")
	assert.Contains(t, skipped[idemcheck.CheckMissingKey], "key optional")
	assert.Contains(t, skipped[idemcheck.CheckCrossEndpoint], "no second endpoint")
	assert.Contains(t, skipped[idemcheck.CheckCrashLease], "let idemcheck start it (set Powers)", "in Go's words")
	assert.Contains(t, skipped[idemcheck.CheckCrossTenant], "two clients")
	assert.Contains(t, skipped[idemcheck.CheckWebhookRedeliver], "key_pointer")
	for _, c := range []string{idemcheck.CheckRestartReplay, idemcheck.CheckCrashAfterCommit, idemcheck.CheckInFlightRetry} {
		assert.Contains(t, skipped[c], "(set Powers)", c)
	}
	assert.Contains(t, skipped[idemcheck.CheckSignature], "not signed (set Sign)")
	assert.Len(t, scs, len(Names())-12+1, "key-syntax sends two scenarios")

	_, _, err = Plan([]string{"concurrent-burst", "nope"}, Defaults, idemcheck.IETF(), e, nil, nil)
	assert.ErrorContains(t, err, `unknown check "nope"`)

	plain := Endpoint{Body: idemcheck.MustTemplate(`text`)}
	_, plan, err = Plan([]string{idemcheck.CheckReorderedBody}, Defaults, idemcheck.IETF(), plain, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, plan[0].Skip, "not a JSON object")
}

// Crash checks run without a lease (a stuck key is then reported with what
// the missing lease means); only lease-fencing needs one. Every check that
// acts on the target skips, with the reason, on a URL target.
func TestPlanFaultChecksNeedPowersAndOnlyFencingALease(t *testing.T) {
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`)}
	names := []string{idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease, idemcheck.CheckRestartReplay,
		idemcheck.CheckCrashAfterCommit, idemcheck.CheckInFlightRetry, idemcheck.CheckLeaseFencing}
	scs, plan, err := Plan(names, Defaults, idemcheck.IETF(), e, stubPowers{}, nil)
	require.NoError(t, err)
	for _, pc := range plan[:5] {
		assert.Empty(t, pc.Skip, pc.Name)
	}
	assert.Contains(t, plan[5].Skip, "no lease")
	assert.Len(t, scs, 6, "failed-attempt has two halves: the effect write cut before it ran, and after it committed")
	p := idemcheck.IETF()
	p.Lease = time.Second
	scs, plan, err = Plan(names, Defaults, p, e, stubPowers{}, nil)
	require.NoError(t, err)
	for _, pc := range plan {
		assert.Empty(t, pc.Skip, pc.Name)
	}
	assert.Len(t, scs, 7)
	words := map[idemcheck.Field]idemcheck.Word{"Powers": {Name: "--cmd", Set: "--cmd or --image"}, "Policy.Lease": {Name: "--lease"}}
	_, plan, err = Plan(names[1:], Defaults, p, e, nil, words)
	require.NoError(t, err)
	for _, pc := range plan {
		assert.Contains(t, pc.Skip, "let idemcheck start it (--cmd or --image)", "in the caller's words: %s", pc.Name)
	}
	p.Lease = 0
	_, plan, err = Plan(names[len(names)-1:], Defaults, p, e, stubPowers{}, words)
	require.NoError(t, err)
	assert.Contains(t, plan[0].Skip, "the policy names no lease (set --lease)")
}

func TestRemoveMember(t *testing.T) {
	assert.Equal(t, `{"type":"x"}`, RemoveMember(`{"eventId":"e1","type":"x"}`, "/eventId"))
	assert.Equal(t, `{"a":{"c":2}}`, RemoveMember(`{"a":{"b":1,"c":2}}`, "/a/b"))
	assert.Equal(t, `{"a":1}`, RemoveMember(`{"a":1}`, "/missing"))
}

// stubPowers stands for a target the harness started, for planning only:
// the planner asks whether there are powers, never uses them.
type stubPowers struct{ targets.Powers }
