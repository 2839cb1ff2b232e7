package assert

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// call records a provider call of intent at ms milliseconds: key "" is a
// keyless call; created says whether it charged.
func (b *histBuilder) call(intent string, ms int, key string, created bool) {
	b.h.Events = append(b.h.Events, idemcheck.Event{Kind: idemcheck.ProviderCalled, Intent: intent, Time: t0.Add(time.Duration(ms) * time.Millisecond),
		Call: &idemcheck.ProviderCall{Provider: idemcheck.DefaultProviderEnv, Seq: len(b.h.Events) + 1, Method: "POST", Path: "/v1/charges", Key: key,
			Start: t0.Add(time.Duration(ms) * time.Millisecond), End: t0.Add(time.Duration(ms+1) * time.Millisecond),
			Status: 200, Created: created, Replayed: !created, Charge: "ch_1", Mapped: idemcheck.MappedByID}})
}

// The reference: the failed first attempt charged, its retry reached the
// provider under the same key and got the charge replayed.
func TestProviderSameKeyReplayedIsClean(t *testing.T) {
	const c = idemcheck.CheckFailedAttempt
	b := newHist(t, idemcheck.IETF(), c)
	in := b.intent(c, 1, `1 0-10 unknown`, `2 20-30 201 {"orderId":"A"}`)
	b.call(in, 2, "derived", true)
	b.call(in, 22, "derived", false)
	assert.Empty(t, Check(&b.h))
}

// A fresh key per attempt: two charges from one intent.
func TestProviderTwoKeysAreADuplicateCharge(t *testing.T) {
	const c = idemcheck.CheckFailedAttempt
	b := newHist(t, idemcheck.IETF(), c)
	in := b.intent(c, 1, `1 0-10 unknown`, `2 20-30 201 {"orderId":"A"}`)
	b.call(in, 2, "fresh-1", true)
	b.call(in, 22, "fresh-2", true)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ProviderDuplicateCharge}, kinds(got))
	a := got[0]
	assert.Equal(t, []int{1, 2}, a.Attempts, "the attempts in whose time each charge came")
	require.Len(t, a.Calls, 2, "the calls are the evidence")
	assert.Equal(t, "fresh-1", a.Calls[0].Key)
	assert.Contains(t, a.Explanation, "caused 2 charges at the provider PROVIDER_URL")
	assert.Contains(t, a.Explanation, "2 distinct keys")
	assert.Equal(t, 2, a.Observed["provider_charges"])
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	assert.Equal(t, idemcheck.Fail, r.Checks[0].Status)
}

// A keyless call is an anomaly of its own, charged twice or not; two
// keyless charges are also a duplicate.
func TestProviderCallWithoutKey(t *testing.T) {
	const c = idemcheck.CheckLostReply
	b := newHist(t, idemcheck.IETF(), c)
	one := b.intent(c, 1, `1 0-10 unknown`, `2 20-30 201 {"orderId":"A"} replayed`)
	b.call(one, 2, "", true)
	two := b.intent(c, 1, `1 40-50 unknown`, `2 60-70 201 {"orderId":"B"}`)
	b.call(two, 42, "", true)
	b.call(two, 62, "", true)
	got := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.ProviderCallWithoutKey, idemcheck.ProviderCallWithoutKey, idemcheck.ProviderDuplicateCharge}, kinds(got))
	assert.Equal(t, one, got[0].Intent)
	assert.Contains(t, got[0].Explanation, "with no idempotency key (call 1, no key, charged ch_1)")
	assert.Len(t, got[1].Calls, 2)
}

// Another key from the client is another intent by contract: two charges
// are due, not a duplicate.
func TestProviderSecondIntentByContract(t *testing.T) {
	const c = idemcheck.CheckDistinctKeys
	b := newHist(t, idemcheck.IETF(), c)
	in := b.intent(c, 2, `1 0-10 201 {"orderId":"A"}`, `2:other-key 20-30 201 {"orderId":"B"}`)
	b.call(in, 2, "k1", true)
	b.call(in, 22, "k2", true)
	assert.Empty(t, Check(&b.h))
}

// Each check reports how many provider calls one intent caused.
func TestProviderTrafficPerCheck(t *testing.T) {
	const c = idemcheck.CheckFailedAttempt
	b := newHist(t, idemcheck.IETF(), c, idemcheck.CheckLostReply)
	one := b.intent(c, 1, `1 0-10 unknown`, `2 20-30 201 {"orderId":"A"}`)
	b.call(one, 2, "k", true)
	b.call(one, 3, "k", false)
	b.call(one, 22, "k", false)
	two := b.intent(c, 1, `1 40-50 201 {"orderId":"B"}`, `2 60-70 201 {"orderId":"B"} replayed`)
	b.call(two, 42, "k2", true)
	b.intent(idemcheck.CheckLostReply, 1, `1 80-90 201 {"orderId":"C"}`)
	r := Report(&b.h)
	require.Len(t, r.Checks, 2)
	assert.Equal(t, &idemcheck.ProviderTraffic{Calls: 4, Charges: 2, CallsPerIntent: 2, MaxCallsPerIntent: 3}, r.Checks[0].Provider)
	assert.Nil(t, r.Checks[1].Provider, "no call, no figure")
}
