package runner

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

// tally is a SoakCounter that keeps what it is given.
type tally struct {
	runs     []idemcheck.Run
	attempts []idemcheck.Attempt
	obs      []idemcheck.Observation
}

func (t *tally) Run(r idemcheck.Run)                 { t.runs = append(t.runs, r) }
func (t *tally) Attempt(a idemcheck.Attempt)         { t.attempts = append(t.attempts, a) }
func (t *tally) Observation(o idemcheck.Observation) { t.obs = append(t.obs, o) }

// The two recorders are one: the same records told to the in-memory one
// (a certification's) and to the streaming one (a soak's) give the same
// history, numbered alike, once the stream is read back; the counter sees
// the attempts numbered as the file holds them.
func TestRecordersRecordTheSameHistory(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tell := func(r recorder) []idemcheck.Attempt {
		require.NoError(t, r.run(idemcheck.Run{Seed: 7, Target: idemcheck.Target{URL: "http://127.0.0.1:1"}}))
		in := idemcheck.Intent{ID: "ic-x-1", Key: "k", Seq: 1, Check: idemcheck.CheckConcurrentBurst, Round: 1}
		r.intent(in)
		b := r.burst(idemcheck.Burst{Attempts: 2, Intent: in.ID, Check: in.Check, Round: 1})
		var got []idemcheck.Attempt
		for range 2 {
			got = append(got, r.attempt(idemcheck.Attempt{Intent: in.ID, Key: in.Key, Check: in.Check, Round: 1, Step: 1,
				Burst: b.ID, Start: at, End: at, Outcome: idemcheck.Replied, Status: 201}))
		}
		r.observation(idemcheck.Observation{Intent: in.ID, Effects: 2})
		r.event(idemcheck.Event{Kind: idemcheck.FaultMissed, Time: at, Check: in.Check, Intent: in.ID, Round: 1, Step: 1, Detail: "d"})
		require.NoError(t, r.flush())
		return got
	}

	mem := &idemcheck.History{}
	memIDs := tell(historyRecorder{mem})

	var buf bytes.Buffer
	count := &tally{}
	streamIDs := tell(&streamRecorder{enc: history.NewEncoder(&buf), count: count})
	hs, err := history.ReadAll(&buf, "stream")
	require.NoError(t, err)
	require.Len(t, hs, 1)

	assert.Equal(t, mem, hs[0])
	assert.Equal(t, memIDs, streamIDs)
	assert.Equal(t, []int{1, 2}, []int{mem.Attempts[0].ID, mem.Attempts[1].ID})
	assert.Equal(t, 1, mem.Bursts[0].ID)
	assert.Equal(t, mem.Attempts, count.attempts)
	assert.Equal(t, mem.Observations, count.obs)
	assert.Equal(t, []idemcheck.Run{mem.Run}, count.runs)
}
