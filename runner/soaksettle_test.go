package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// counts makes a batch's observations: name=count, a trailing "!" for an
// intent answered with an accepted status.
func counts(pairs ...string) []idemcheck.Observation {
	var out []idemcheck.Observation
	for _, p := range pairs {
		name, n, _ := strings.Cut(p, "=")
		o := idemcheck.Observation{Intent: name, Check: idemcheck.CheckSoak}
		if strings.HasSuffix(n, "!") {
			n, o.Accepted = strings.TrimSuffix(n, "!"), true
		}
		for _, c := range n {
			o.Effects = o.Effects*10 + int64(c-'0')
		}
		out = append(out, o)
	}
	return out
}

// A batch's digest tells two passes apart by every intent's count, not
// only by their sum: an effect that moved from one intent to another
// changes it, and so does one more anywhere; the same counts give the
// same digest. An accepted intent at zero is counted as awaited.
func TestBatchDigest(t *testing.T) {
	base := digestOf(counts("a=1", "b=0", "c=2"), nil)
	assert.Equal(t, base, digestOf(counts("a=1", "b=0", "c=2"), nil), "the same counts")
	assert.EqualValues(t, 3, base.sum)
	assert.Zero(t, base.awaiting)

	swapped := digestOf(counts("a=0", "b=1", "c=2"), nil)
	assert.Equal(t, base.sum, swapped.sum, "the same sum")
	assert.NotEqual(t, base.hash, swapped.hash, "an effect on another intent")
	assert.NotEqual(t, base, digestOf(counts("a=1", "b=0", "c=3"), nil), "one effect more")
	// The intent and its count are delimited: "a" with 11 is not "a1"
	// with 1.
	assert.NotEqual(t, digestOf(counts("a=11"), nil).hash, digestOf(counts("a1=1"), nil).hash)

	assert.Equal(t, 1, digestOf(counts("a=0!", "b=1!", "c=0"), nil).awaiting, "only the accepted intent at zero is awaited")
}

// A pass settles the counts when every batch counted the same as in the
// pass before it and no accepted intent is still at zero; the first pass
// never does, having nothing to compare with.
func TestPassSettled(t *testing.T) {
	p1 := []batchDigest{digestOf(counts("a=1", "b=0"), nil), digestOf(counts("c=1"), nil)}
	p2 := []batchDigest{digestOf(counts("a=1", "b=1"), nil), digestOf(counts("c=1"), nil)}
	p3 := []batchDigest{digestOf(counts("a=1", "b=1"), nil), digestOf(counts("c=1"), nil)}

	assert.False(t, passSettled(nil, p1), "the first pass")
	assert.Equal(t, 1, moving(p1, p2))
	assert.False(t, passSettled(p1, p2), "b's effect landed between them")
	assert.Zero(t, moving(p2, p3))
	assert.True(t, passSettled(p2, p3))

	// A batch one of the passes lacks is moving.
	assert.Equal(t, 1, moving(p3, p3[:1]))
	assert.Equal(t, 1, moving(p3[:1], p3))

	// The same counts, but an accepted intent still at zero: its effect
	// is awaited.
	w := []batchDigest{digestOf(counts("a=1", "b=0!"), nil)}
	assert.Zero(t, moving(w, w))
	assert.False(t, passSettled(w, w))
}

// Each pass's records carry what the passes before saw of an intent: its
// first count and how many passes changed it. Recorded, the last pass's
// counts say per intent whether they settled: not when the last pass
// changed the count, nor for an accepted intent still at zero.
func TestSettlePassRecords(t *testing.T) {
	first, err := carry(nil, counts("a=0!", "b=1", "c=1", "d=0!"))
	require.NoError(t, err)
	for _, r := range first {
		assert.Equal(t, r.O.Effects, r.First)
		assert.Zero(t, r.Changes)
		assert.False(t, r.Moved)
	}
	p1, err := newSettlePass()
	require.NoError(t, err)
	defer p1.remove()
	// Batches come back in any order; each is found by its number.
	require.NoError(t, p1.put(1, digestOf(counts("d=0!"), nil), encode(t, first[3:])))
	require.NoError(t, p1.put(0, digestOf(counts("a=0!", "b=1", "c=1"), nil), encode(t, first[:3])))
	back, err := p1.batch(0)
	require.NoError(t, err)
	assert.Equal(t, first[:3], back)
	back, err = p1.batch(1)
	require.NoError(t, err)
	assert.Equal(t, first[3:], back)
	_, err = p1.batch(2)
	assert.Error(t, err)

	before, err := p1.batch(0)
	require.NoError(t, err)
	second, err := carry(before, counts("a=1!", "b=1", "c=2"))
	require.NoError(t, err)
	assert.Equal(t, passRecord{O: counts("a=1!")[0], First: 0, Changes: 1, Moved: true}, second[0])
	assert.Equal(t, passRecord{O: counts("b=1")[0], First: 1}, second[1])
	assert.Equal(t, passRecord{O: counts("c=2")[0], First: 1, Changes: 1, Moved: true}, second[2])
	_, err = carry(before, counts("x=1", "b=1", "c=2"))
	assert.ErrorContains(t, err, "intent x is not where it was")

	p2, err := newSettlePass()
	require.NoError(t, err)
	defer p2.remove()
	require.NoError(t, p2.put(0, digestOf(counts("a=1!", "b=1", "c=2"), nil), encode(t, second)))
	before, err = p1.batch(1)
	require.NoError(t, err)
	last, err := carry(before, counts("d=0!"))
	require.NoError(t, err)
	require.NoError(t, p2.put(1, digestOf(counts("d=0!"), nil), encode(t, last)))
	assert.False(t, passSettled(p1.digests, p2.digests))

	got := &tally{}
	st := idemcheck.Settle{Bound: 10 * time.Second, Quiet: time.Second, Polls: 2, Waited: 3 * time.Second}
	require.NoError(t, p2.record(&streamRecorder{count: got}, st))
	require.Len(t, got.obs, 4)
	by := map[string]idemcheck.Settle{}
	for _, o := range got.obs {
		require.NotNil(t, o.Settle)
		by[o.Intent] = *o.Settle
		assert.Equal(t, st.Bound, o.Settle.Bound)
		assert.Equal(t, 2, o.Settle.Polls)
	}
	assert.Equal(t, idemcheck.Settle{Bound: st.Bound, Quiet: st.Quiet, Polls: 2, Waited: st.Waited, First: 0, Changes: 1, Awaited: true}, by["a"], "its effect landed in the last pass")
	assert.True(t, by["b"].Settled)
	assert.False(t, by["c"].Settled, "its second effect landed in the last pass")
	assert.Equal(t, idemcheck.Settle{Bound: st.Bound, Quiet: st.Quiet, Polls: 2, Waited: st.Waited, Awaited: true}, by["d"], "accepted, still at zero: awaited")
}

func encode(t *testing.T, recs []passRecord) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		require.NoError(t, enc.Encode(r))
	}
	return b.Bytes()
}

// A spooled intent reads back as written: its number, whether it was
// accepted, and the count it was judged by with its time.
func TestSpoolEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 11, 12, 345678900, time.UTC)
	in := idemcheck.Intent{ID: "ic-ab12-7", Key: "5f0c6c1e-0b7e-4e55-9a57-0e6c1d2b3a4f", Seq: 7, Check: idemcheck.CheckSoak, Round: 1}
	// A status monitor's record and URL hold what a tab-separated line
	// cannot: JSON escapes them.
	op := &soakOp{Rec: idemcheck.Operation{Attempt: 3, URL: "/ops/a b", Error: "answered\t500\n"}, URL: "http://127.0.0.1:1/ops/a%20b"}
	for _, e := range []spoolEntry{{in: in}, {in: in, accepted: true, judged: 2, judgedAt: at}, {in: in, accepted: true, op: op}} {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		e.write(w)
		require.NoError(t, w.Flush())
		got, ok := parseSpoolEntry(strings.TrimSuffix(b.String(), "\n"))
		require.True(t, ok, b.String())
		assert.Equal(t, e, got)
	}
	_, ok := parseSpoolEntry("ic-1\tkey\t1")
	assert.False(t, ok, "a line of another form")
}

// A status monitor still pending keeps a pass from settling the counts,
// however still they are; an accepted intent at zero whose monitor said
// its operation is over (done or failed) is no longer awaited: the API
// said whether an effect is owed. Recorded, the count carries what its
// monitor said, and settled only once the monitor is not pending.
func TestPassSettledWaitsForStatusMonitors(t *testing.T) {
	pending := &soakOp{Rec: idemcheck.Operation{Attempt: 1, URL: "/ops/a", State: "pending", Polls: 1}, URL: "http://127.0.0.1:1/ops/a"}
	done := &soakOp{Rec: idemcheck.Operation{Attempt: 1, URL: "/ops/a", State: "succeeded", Polls: 2, Over: idemcheck.OperationDone}, URL: "http://127.0.0.1:1/ops/a"}
	unnamed := &soakOp{Rec: idemcheck.Operation{Attempt: 1, Error: "no status monitor: the accepted reply has no Location header"}}

	w := []batchDigest{digestOf(counts("a=1!", "b=1"), []*soakOp{pending, nil})}
	assert.Equal(t, 1, w[0].monitors)
	assert.False(t, passSettled(w, w), "a's monitor is still pending")
	w = []batchDigest{digestOf(counts("a=1!", "b=1"), []*soakOp{done, nil})}
	assert.True(t, passSettled(w, w))
	w = []batchDigest{digestOf(counts("a=0!"), []*soakOp{done})}
	assert.Zero(t, w[0].awaiting, "done: the count is final, short or not")
	assert.True(t, passSettled(w, w))
	w = []batchDigest{digestOf(counts("a=0!"), []*soakOp{unnamed})}
	assert.Equal(t, 1, w[0].awaiting, "no monitor to read: the effect is awaited as without one")
	assert.Zero(t, w[0].monitors)

	p, err := newSettlePass()
	require.NoError(t, err)
	defer p.remove()
	recs := []passRecord{
		{O: counts("a=0!")[0], Op: done},
		{O: counts("b=0!")[0], Op: pending},
		{O: counts("c=1!")[0], Op: pending},
	}
	require.NoError(t, p.put(0, batchDigest{}, encode(t, recs)))
	got := &tally{}
	require.NoError(t, p.record(&streamRecorder{count: got}, idemcheck.Settle{Bound: 2 * time.Second, Quiet: time.Second, Polls: 2}))
	require.Len(t, got.obs, 3)
	for i, o := range got.obs {
		require.NotNil(t, o.Settle)
		assert.Equal(t, []idemcheck.Operation{recs[i].Op.Rec}, o.Settle.Operations, o.Intent)
	}
	assert.True(t, got.obs[0].Settle.Settled, "done and short: settled, so judged lost")
	assert.False(t, got.obs[1].Settle.Settled, "pending at the bound")
	assert.False(t, got.obs[2].Settle.Settled, "pending at the bound, whatever its count")
}
