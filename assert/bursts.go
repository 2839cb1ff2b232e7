package assert

import (
	"fmt"
	"slices"
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
	if len(bursts) == 0 {
		return "", false
	}
	// A round is repeated, with a fresh intent, while its burst is loose:
	// it counts when one of its bursts was tight. A burst without a round
	// (a history written before rounds were recorded) is a round of its own.
	type round struct {
		check string
		n     int
	}
	var order []round
	tightIn := map[round]bool{}
	var tight, all []idemcheck.Burst
	repeated := 0
	for _, b := range bursts {
		r := round{b.Check, b.Round}
		if b.Round == 0 {
			r = round{b.Check, -b.ID}
		}
		if _, seen := tightIn[r]; !seen {
			order = append(order, r)
			tightIn[r] = false
		}
		all = append(all, b)
		if b.Loose {
			repeated++
			continue
		}
		if !tightIn[r] {
			tightIn[r] = true
			tight = append(tight, b)
		}
	}
	stayed := 0
	for _, r := range order {
		if !tightIn[r] {
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
	med, hi := spreadStats(tight)
	pair := hi / time.Duration(max(minAttempts(tight)-1, 1))
	s := fmt.Sprintf("%d %s, client release spread median %s, max %s (as released; when they reached the target is not measured): "+
		"in every round at least two attempts left idemcheck within %s of each other, and all of them within %s. "+
		"A target takes a burst in one request after another, so the attempts reached it further apart than they left, by its own intake time, "+
		"which idemcheck does not see: a check-then-insert window is entered by two attempts at once when it is wider than %s and than that intake time; "+
		"a narrower one may be missed",
		len(tight), burstsOf(tight), fmtSpread(med), fmtSpread(hi), fmtSpread(pair), fmtSpread(hi), fmtSpread(pair))
	if repeated > 0 {
		s += fmt.Sprintf(" (%d looser %s repeated; their attempts still count)", repeated, plural(repeated, "burst was", "bursts were"))
	}
	return s, false
}

// CheckBursts returns the bursts check sent in h, for BurstProof. A burst
// recorded without its check (a history written before bursts named it)
// belongs to the check of the attempts that carry its number.
func CheckBursts(h *idemcheck.History, check string) []idemcheck.Burst {
	byAttempts := map[int]string{}
	for _, a := range h.Attempts {
		if a.Burst != 0 {
			byAttempts[a.Burst] = a.Check
		}
	}
	var out []idemcheck.Burst
	for _, b := range h.Bursts {
		c := b.Check
		if c == "" {
			c = byAttempts[b.ID]
		}
		if c == check {
			out = append(out, b)
		}
	}
	return out
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
