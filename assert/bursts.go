package assert

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// BurstProof states, in one sentence, how tightly a check's bursts were
// released and so which race windows they would catch, and reports loose
// when some round never got a burst within idemcheck.LooseSpread: the check
// is then inconclusive, since a race narrower than its spread may have gone
// unseen. bursts are the check's bursts, loose ones included.
//
// The figures are the client's release spread (from the first final write
// to the end of the last, as idemcheck released them): when the requests
// reached the target is not known to idemcheck, so the sentence says so,
// and it never claims that a window narrower than the target's own intake
// of two requests is entered: the product-path benchmark (BENCHMARKS.md)
// measured arrivals further apart than the release, since a target takes
// a burst in one request after another (on 2026-12-01, bursts of 32
// released over h2c within 7-14 us, median, reached the target over
// 80-600 us, and over HTTP/1.1 within 190-230 us over 1.1-1.5 ms). The figures are
// over the bursts that counted, one per round (the first one released
// within the limit); the loose ones that were repeated are named, and
// their attempts still count for anomalies. "" for no bursts.
func BurstProof(bursts []idemcheck.Burst) (proof string, loose bool) {
	return burstProof(bursts, nil, "")
}

func burstProof(bursts []idemcheck.Burst, words Words, arrival string) (proof string, loose bool) {
	if len(bursts) == 0 {
		return "", false
	}
	// A round is repeated, with a fresh intent, while its burst is loose:
	// it counts when one of its bursts was tight, or its race was
	// scheduled at the database link. A burst without a round (a history
	// written before rounds were recorded) is a round of its own.
	// The bursts in turn are rounds of their own (a second scenario of the
	// check, whose rounds are numbered from 1 too).
	type round struct {
		check  string
		n      int
		inTurn bool
	}
	var order []round
	countedIn := map[round]bool{}
	var tight, sched, all []idemcheck.Burst
	repeated, offered := 0, 0
	for _, b := range bursts {
		r := round{b.Check, b.Round, b.InTurn}
		if b.Round == 0 {
			r = round{b.Check, -b.ID, b.InTurn}
		}
		if _, seen := countedIn[r]; !seen {
			order = append(order, r)
			countedIn[r] = false
		}
		all = append(all, b)
		if b.Scheduled {
			offered++
		}
		switch {
		case countedIn[r]:
		case b.RaceScheduled():
			countedIn[r] = true
			sched = append(sched, b)
		case b.Loose:
			repeated++
		default:
			countedIn[r] = true
			tight = append(tight, b)
		}
	}
	stayed := 0
	for _, r := range order {
		if !countedIn[r] {
			stayed++
		}
	}
	if stayed > 0 {
		med, hi := spreadStats(all)
		limit := idemcheck.LooseSpread(minAttempts(all))
		return fmt.Sprintf("%d of %d rounds got no burst released within %s, client release spread median %s, max %s over %d %s: "+
			"a race window narrower than the spread may have gone unseen (the machine was too busy)",
			stayed, len(order), fmtSpread(limit), fmtSpread(med), fmtSpread(hi), len(all), burstsOf(all)), true
	}
	var parts []string
	if len(sched) > 0 {
		parts = append(parts, scheduledProof(sched, len(order)))
	}
	if len(tight) > 0 {
		med, hi := spreadStats(tight)
		pair := hi / time.Duration(max(minAttempts(tight)-1, 1))
		s := ""
		if len(sched) > 0 {
			s = fmt.Sprintf("%d timed %s: ", len(tight), plural(len(tight), "round", "rounds"))
		}
		reached := "when they reached the target is not measured"
		if arrival != "" {
			reached = arrival
		}
		s += fmt.Sprintf("%d %s, client release spread median %s, max %s (as released; %s): "+
			"in every round at least two attempts left idemcheck within %s of each other, and all of them within %s. "+
			"A target takes a burst in one request after another, so the attempts reached it further apart than they left, by its own intake time, "+
			"which idemcheck does not see: a check-then-insert window is entered by two attempts at once when it is wider than %s and than that intake time; "+
			"a narrower one may be missed",
			len(tight), burstsOf(tight), fmtSpread(med), fmtSpread(hi), reached, fmtSpread(pair), fmtSpread(hi), fmtSpread(pair))
		s += linkClause(tight)
		switch {
		case offered > 0:
			s += " (in those rounds fewer than two writes reached the database link together, so their race was timed, not scheduled)"
		default:
			s += idemcheck.Phrasef(" (timed: idemcheck did not schedule the writes at the target's database link, which it holds only for a target it starts, "+
				"and not with %s)", idemcheck.Field("Timed")).In(words)
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, "; ")
	if repeated > 0 {
		s += fmt.Sprintf(" (%d looser %s repeated; their attempts still count)", repeated, plural(repeated, "burst was", "bursts were"))
	}
	return s, false
}

// scheduledProof states what the scheduled rounds show.
func scheduledProof(sched []idemcheck.Burst, rounds int) string {
	lo, hi := sched[0].Held, sched[0].Held
	reasons := map[string]int{}
	inTurn := 0
	for _, b := range sched {
		lo, hi = min(lo, b.Held), max(hi, b.Held)
		reasons[b.Release]++
		if b.InTurn {
			inTurn++
		}
	}
	held := fmt.Sprint(lo)
	if hi != lo {
		held = fmt.Sprintf("%d-%d", lo, hi)
	}
	var why []string
	for _, r := range []string{idemcheck.ReleaseAllWrites, idemcheck.ReleaseBlocked, idemcheck.ReleaseIdle, idemcheck.ReleaseQuiet, idemcheck.ReleaseBound, idemcheck.ReleaseBurstEnded} {
		if n := reasons[r]; n > 0 {
			why = append(why, fmt.Sprintf("%s x%d", releaseText[r], n))
		}
	}
	proof := fmt.Sprintf("%d of %d rounds scheduled at the database link (deterministic): in each, the first writes of %s attempts were held "+
		"until the burst's other attempts had reached theirs or could not, then released together, so every one of them had done what comes "+
		"before its first write (its read of the key) before any wrote: a read-then-write race shows whatever its window (released when %s)",
		len(sched), rounds, held, strings.Join(why, ", "))
	if inTurn > 0 {
		proof += fmt.Sprintf("; in %d of them the held writes were then released one at a time instead, the last held first, each once the database "+
			"had answered the one before and the target had gone quiet, so every attempt wrote after the ones before it had written and finished: "+
			"a write that overwrites another's (last writer wins) shows whatever the timing", inTurn)
	}
	return proof
}

// releaseText says why a scheduled burst's writes were released.
var releaseText = map[string]string{
	idemcheck.ReleaseAllWrites:  "every attempt had reached its write",
	idemcheck.ReleaseBlocked:    "the others waited on a lock or a held pooled connection",
	idemcheck.ReleaseIdle:       "every other connection of the target was idle",
	idemcheck.ReleaseQuiet:      "nothing else reached the link for a while",
	idemcheck.ReleaseBound:      "the bounded wait passed",
	idemcheck.ReleaseBurstEnded: "the burst ended",
}

// CheckBursts returns the bursts check sent in h, for BurstProof
// (History.CheckBursts).
func CheckBursts(h *idemcheck.History, check string) []idemcheck.Burst {
	return h.CheckBursts(check)
}

// burstsOf says "bursts of 32 over h2", with a size range and "mixed"
// protocols where the bursts differ.
func burstsOf(b []idemcheck.Burst) string {
	lo, hi := b[0].Attempts, b[0].Attempts
	for _, x := range b {
		lo, hi = min(lo, x.Attempts), max(hi, x.Attempts)
	}
	size := fmt.Sprint(lo)
	if hi != lo {
		size = fmt.Sprintf("%d-%d", lo, hi)
	}
	s := plural(len(b), "burst", "bursts") + " of " + size
	if p := burstProtocol(b); p != "" {
		s += " over " + p
	}
	return s
}

func minAttempts(b []idemcheck.Burst) int {
	n := b[0].Attempts
	for _, x := range b {
		n = min(n, x.Attempts)
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// linkClause says what the bursts measured of the link: over HTTP/1.1,
// how long they waited for their prefixes to reach the target before the
// release, and the round trip the wait rested on. "" when nothing was
// measured (a history written before bursts recorded it).
func linkClause(b []idemcheck.Burst) string {
	var waits, rtts, jitters []time.Duration
	acked := 0
	for _, x := range b {
		if x.PrefixWait > 0 {
			waits = append(waits, x.PrefixWait)
			if x.PrefixAcked {
				acked++
			}
		}
		if x.RTT > 0 {
			rtts = append(rtts, x.RTT)
			jitters = append(jitters, x.Jitter)
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	var parts []string
	if len(waits) > 0 {
		parts = append(parts, fmt.Sprintf("%d HTTP/1.1 %s released once %s prefixes had reached the target as far as idemcheck could tell "+
			"(acknowledged by the peer's kernel in %d, and about one round trip passed: a median wait of %s)",
			len(waits), plural(len(waits), "burst was", "bursts were"), plural(len(waits), "its", "their"), acked, fmtSpread(median(waits))))
	}
	if len(rtts) > 0 {
		parts = append(parts, fmt.Sprintf("the link's round trip before them was %s at the quickest, %s more at the median (the target's own time included)",
			fmtSpread(median(rtts)), fmtSpread(median(jitters))))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// spreadStats returns the median and the largest release spread.
func spreadStats(b []idemcheck.Burst) (median, largest time.Duration) {
	d := spreads(b)
	return d[len(d)/2], d[len(d)-1]
}

func spreads(b []idemcheck.Burst) []time.Duration {
	d := make([]time.Duration, len(b))
	for i, x := range b {
		d[i] = x.Spread
	}
	slices.Sort(d)
	return d
}

// fmtSpread writes a spread in microseconds below 1 ms, else in
// milliseconds, rounded up so that it never reads tighter than it was.
func fmtSpread(d time.Duration) string {
	if d < time.Millisecond {
		us := (d + time.Microsecond - 1) / time.Microsecond
		return fmt.Sprintf("%d us", us)
	}
	ms := (d + 100*time.Microsecond - 1) / (100 * time.Microsecond)
	return fmt.Sprintf("%d.%d ms", ms/10, ms%10)
}
