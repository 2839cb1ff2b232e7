package assert

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

func tightBursts(spreads ...time.Duration) []idemcheck.Burst {
	var b []idemcheck.Burst
	for i, s := range spreads {
		b = append(b, idemcheck.Burst{ID: i + 1, Attempts: 32, Spread: s, Protocol: "http1",
			Check: idemcheck.CheckConcurrentBurst, Round: i + 1})
	}
	return b
}

func TestBurstProofStatesTheClientSpread(t *testing.T) {
	proof, loose := burstProof(tightBursts(us(45), us(30), us(120), us(50), us(40)), Words{"Timed": {Name: "--timed-bursts"}}, "")
	assert.False(t, loose)
	assert.Equal(t, "5 bursts of 32 over http1, client release spread median 45 us, max 120 us "+
		"(as released; when they reached the target is not measured): "+
		"in every round at least two attempts left idemcheck within 4 us of each other, and all of them within 120 us. "+
		"A target takes a burst in one request after another, so the attempts reached it further apart than they left, by its own intake time, "+
		"which idemcheck does not see: a check-then-insert window is entered by two attempts at once when it is wider than 4 us and than that intake time; "+
		"a narrower one may be missed "+
		"(timed: idemcheck did not schedule the writes at the target's database link, which it holds only for a target it starts, and not with --timed-bursts)", proof)
	goWords, _ := BurstProof(tightBursts(us(45), us(30), us(120), us(50), us(40)))
	assert.Contains(t, goWords, "and not with Timed)", "BurstProof says the setting in Go's words")
}

// Rounds whose race was scheduled at the database link count whatever
// their spread, and are not loose; a scheduled burst that held fewer than
// two writes is a timed round like any other.
func TestBurstProofScheduledRounds(t *testing.T) {
	b := tightBursts(us(45), 9*time.Millisecond, 40*time.Millisecond)
	for i := range b {
		b[i].Scheduled, b[i].Held, b[i].Release = true, 8, idemcheck.ReleaseAllWrites
	}
	b[1].Loose, b[2].Loose = true, true
	b[2].Release = idemcheck.ReleaseBlocked
	proof, loose := BurstProof(b)
	assert.False(t, loose, proof)
	assert.Equal(t, "3 of 3 rounds scheduled at the database link (deterministic): in each, the first writes of 8 attempts were held "+
		"until the burst's other attempts had reached theirs or could not, then released together, so every one of them had done what comes "+
		"before its first write (its read of the key) before any wrote: a read-then-write race shows whatever its window "+
		"(released when every attempt had reached its write x2, the others waited on a lock or a held pooled connection x1)", proof)

	b[1].Release = idemcheck.ReleaseIdle
	proof, _ = BurstProof(b)
	assert.Contains(t, proof, "(released when every attempt had reached its write x1, the others waited on a lock or a held pooled connection x1, "+
		"every other connection of the target was idle x1)", proof)

	b[0].Held = 1
	proof, loose = BurstProof(b)
	assert.False(t, loose, proof)
	assert.Contains(t, proof, "2 of 3 rounds scheduled at the database link")
	assert.Contains(t, proof, "1 timed round: 1 burst of 32 over http1")
	assert.Contains(t, proof, "fewer than two writes reached the database link together")

	// A loose burst whose race was not scheduled still makes its round
	// repeat, and inconclusive when no repeat counted.
	b[2].Held = 0
	_, loose = BurstProof(b)
	assert.True(t, loose)
}

// A figure is rounded up, never down: the proof must not read tighter than
// what was measured.
func TestBurstProofNeverReadsTighter(t *testing.T) {
	proof, _ := BurstProof(tightBursts(us(44)+1, us(120)+1))
	assert.Contains(t, proof, "median 121 us, max 121 us")
	assert.Contains(t, proof, "all of them within 121 us")
	assert.Equal(t, "12.4 ms", fmtSpread(12*time.Millisecond+300*time.Microsecond+1))
	assert.Equal(t, "10.0 ms", fmtSpread(10*time.Millisecond))
	assert.Equal(t, "1.0 ms", fmtSpread(time.Millisecond))
	assert.Equal(t, "999 us", fmtSpread(time.Millisecond-time.Microsecond))
}

// A round whose first burst was loose and whose repeat was tight counts;
// the figures are over the bursts that counted, and the loose one is named.
func TestBurstProofRepeatedRoundCounts(t *testing.T) {
	b := tightBursts(us(60), us(80))
	b = append(b[:1], idemcheck.Burst{ID: 2, Attempts: 32, Spread: 4 * time.Millisecond, Protocol: "http1",
		Check: idemcheck.CheckConcurrentBurst, Round: 2, Loose: true}, b[1])
	b[2].ID = 3
	b[2].Round = 2
	proof, loose := BurstProof(b)
	assert.False(t, loose)
	assert.Contains(t, proof, "2 bursts of 32 over http1, client release spread median 80 us, max 80 us")
	assert.Contains(t, proof, "(1 looser burst was repeated; their attempts still count)")
}

// A round that never got a tight burst makes the check inconclusive, and
// the proof says how loose the bursts were.
func TestBurstProofLooseRoundIsInconclusive(t *testing.T) {
	b := tightBursts(us(60))
	for i := range 4 {
		b = append(b, idemcheck.Burst{ID: 2 + i, Attempts: 32, Spread: time.Duration(33+i) * time.Millisecond,
			Protocol: "http1", Check: idemcheck.CheckConcurrentBurst, Round: 2, Loose: true})
	}
	proof, loose := BurstProof(b)
	assert.True(t, loose)
	assert.Equal(t, "1 of 2 rounds got no burst released within "+fmtSpread(idemcheck.LooseSpread(32))+
		", client release spread median 34.0 ms, max 36.0 ms over 5 bursts of 32 over http1: "+
		"a race window narrower than the spread may have gone unseen (the machine was too busy)", proof)
}

func TestBurstProofNoBursts(t *testing.T) {
	proof, loose := BurstProof(nil)
	assert.Empty(t, proof)
	assert.False(t, loose)
}

// A history written before bursts recorded their round: each burst is a
// round of its own, none is loose.
func TestBurstProofOldHistory(t *testing.T) {
	proof, loose := BurstProof([]idemcheck.Burst{{ID: 1, Attempts: 8, Spread: us(10)}, {ID: 2, Attempts: 16, Spread: us(20), Protocol: "h2"}})
	assert.False(t, loose)
	assert.Contains(t, proof, "2 bursts of 8-16 over h2, client release spread median 20 us, max 20 us")
}

func TestLooseSpreadGrowsWithTheBurst(t *testing.T) {
	assert.Less(t, idemcheck.LooseSpread(8), idemcheck.LooseSpread(32))
	assert.Equal(t, 31*idemcheck.PairGapLimit, idemcheck.LooseSpread(32), "two of 32 within the limit of each other")
	assert.Equal(t, idemcheck.PairGapLimit, idemcheck.LooseSpread(0))
}

func TestCheckBursts(t *testing.T) {
	h := &idemcheck.History{
		Bursts: []idemcheck.Burst{
			{ID: 1, Check: idemcheck.CheckConcurrentBurst},
			{ID: 2, Check: idemcheck.CheckWebhookRedeliver},
			{ID: 3}, // an older history: the attempts say whose it was
		},
		Attempts: []idemcheck.Attempt{{ID: 1, Burst: 3, Check: idemcheck.CheckConcurrentBurst}, {ID: 2}},
	}
	var ids []int
	for _, b := range CheckBursts(h, idemcheck.CheckConcurrentBurst) {
		ids = append(ids, b.ID)
	}
	assert.Equal(t, []int{1, 3}, ids)
	assert.Len(t, CheckBursts(h, idemcheck.CheckWebhookRedeliver), 1)
	assert.Empty(t, CheckBursts(h, idemcheck.CheckSequentialReplay))
}

// A check's second half, released in turn, numbers its rounds from 1
// again: its bursts are rounds of their own, and the proof says how many
// were released in turn.
func TestBurstProofInTurnRounds(t *testing.T) {
	b := tightBursts(us(45), us(30), us(40), us(50))
	for i := range b {
		b[i].Scheduled, b[i].Held, b[i].Release = true, 4, idemcheck.ReleaseAllWrites
	}
	b[2].Round, b[3].Round = 1, 2
	b[2].InTurn, b[3].InTurn = true, true
	proof, loose := BurstProof(b)
	assert.False(t, loose, proof)
	assert.Contains(t, proof, "4 of 4 rounds scheduled at the database link")
	assert.Contains(t, proof, "; in 2 of them the held writes were then released one at a time instead, the last held first")
}

// A duplicate of a burst released in turn names the order the writes went
// in, from the history's write-held events.
func TestDuplicateExplanationInTurn(t *testing.T) {
	h := &idemcheck.History{
		Intents: []idemcheck.Intent{{ID: "i1", Key: "k1", Check: idemcheck.CheckConcurrentBurst, Round: 1}},
		Bursts:  []idemcheck.Burst{{ID: 1, Attempts: 2, Intent: "i1", Check: idemcheck.CheckConcurrentBurst, Round: 1, Scheduled: true, Held: 2, Release: idemcheck.ReleaseAllWrites, InTurn: true}},
		Events: []idemcheck.Event{
			{Kind: idemcheck.WriteHeld, Intent: "i1", Conn: 3, Order: 2},
			{Kind: idemcheck.WriteHeld, Intent: "i1", Conn: 5, Order: 1},
		},
		Observations: []idemcheck.Observation{{Intent: "i1", Check: idemcheck.CheckConcurrentBurst, Effects: 2, Query: "SELECT count(*) FROM orders WHERE key = $1", Args: []string{"k1"}}},
	}
	for i := 1; i <= 2; i++ {
		h.Attempts = append(h.Attempts, idemcheck.Attempt{ID: i, Intent: "i1", Key: "k1", Check: idemcheck.CheckConcurrentBurst, Round: 1, Step: 1, Burst: 1,
			Outcome: idemcheck.Replied, Status: 409})
	}
	var dup *idemcheck.Anomaly
	for _, a := range Check(h) {
		if a.Kind == idemcheck.DuplicateEffect {
			dup = &a
		}
	}
	if !assert.NotNil(t, dup) {
		return
	}
	assert.Contains(t, dup.Explanation, "released them one at a time, the last held first (the writes of connections 5, 3, in that order)")
}

// HTTP/1.1 bursts that waited for their prefixes say so, with the round
// trip the wait rested on; the medians never read tighter than they were.
func TestBurstProofStatesThePrefixWaitAndTheLink(t *testing.T) {
	b := tightBursts(us(45), us(30), us(120))
	for i := range b {
		b[i].PrefixWait = time.Duration(i+1) * 10 * time.Millisecond
		b[i].PrefixAcked = i > 0
		b[i].RTT = 20*time.Millisecond + time.Duration(i)*time.Millisecond
		b[i].Jitter = 2 * time.Millisecond
	}
	proof, loose := burstProof(b, nil, "")
	assert.False(t, loose)
	assert.Contains(t, proof, "(3 HTTP/1.1 bursts were released once their prefixes had reached the target as far as idemcheck could tell "+
		"(acknowledged by the peer's kernel in 2, and about one round trip passed: a median wait of 20.0 ms); "+
		"the link's round trip before them was 21.0 ms at the quickest, 2.0 ms more at the median (the target's own time included))")
	proof, _ = burstProof(tightBursts(us(45)), nil, "")
	assert.NotContains(t, proof, "round trip", "nothing measured, nothing said")
}
