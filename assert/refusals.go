package assert

import (
	"fmt"
	"maps"
	"slices"

	"github.com/idemcheck/idemcheck"
)

// A refusal (idemcheck.IsRefusal: a 429, or a 503 with Retry-After) came
// from in front of the handler: the request never reached the idempotency
// layer. The rules judge only the attempts a target admitted, so that a
// correct service behind a rate limiter is neither failed for its limiter's
// answers (unexpected-status) nor passed on them: a round whose scenario
// the limiter kept from the handler did not happen, and a burst counts as
// concurrency only where two same-key attempts were admitted, whatever the
// policy's in-progress statuses.

// withoutRefusals returns atts without the attempts refused before the
// handler; atts itself when there are none.
func withoutRefusals(atts []idemcheck.Attempt) []idemcheck.Attempt {
	if !slices.ContainsFunc(atts, idemcheck.Attempt.Refusal) {
		return atts
	}
	out := make([]idemcheck.Attempt, 0, len(atts))
	for _, a := range atts {
		if !a.Refusal() {
			out = append(out, a)
		}
	}
	return out
}

// refusedRound says why the refusals among one intent's attempts kept its
// scenario from happening, or "": a burst of which fewer than two attempts
// were admitted (so nothing ran concurrently inside the handler), or a step
// every attempt of which was refused.
func refusedRound(atts []idemcheck.Attempt) (why string, burst bool) {
	type tally struct{ admitted, refused int }
	bursts, steps := map[int]*tally{}, map[int]*tally{}
	var order []int
	for _, a := range atts {
		m, k := steps, a.Step
		if a.Burst != 0 {
			m, k = bursts, a.Burst
		} else if _, seen := steps[k]; !seen {
			order = append(order, k)
		}
		t := m[k]
		if t == nil {
			t = &tally{}
			m[k] = t
		}
		switch {
		case a.Refusal():
			t.refused++
		case a.Admitted():
			t.admitted++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(bursts)) {
		if t := bursts[id]; t.refused > 0 && t.admitted < 2 {
			return fmt.Sprintf("the rate limit let %d of its burst's %d same-key attempts reach the handler, so none ran concurrently there", t.admitted, t.admitted+t.refused), true
		}
	}
	for _, step := range order {
		if t := steps[step]; t.refused > 0 && t.admitted == 0 {
			return fmt.Sprintf("the rate limit refused every send of its step %d (%s), so that step never reached the handler", step, count(t.refused, "refusal")), false
		}
	}
	return "", false
}

// admission tallies a check's bursts by round: how many rounds admitted
// two or more same-key attempts into the handler together in one of their
// bursts, of how many, and how many of the bursts' attempts were refused.
func admission(h *idemcheck.History, check string) (rounds, admitted, refused, attempts int) {
	type tally struct{ admitted int }
	perBurst := map[int]*tally{}
	for _, a := range h.Attempts {
		if a.Check != check || a.Burst == 0 {
			continue
		}
		t := perBurst[a.Burst]
		if t == nil {
			t = &tally{}
			perBurst[a.Burst] = t
		}
		attempts++
		switch {
		case a.Refusal():
			refused++
		case a.Admitted():
			t.admitted++
		}
	}
	type round struct {
		n      int
		inTurn bool
	}
	seen := map[round]bool{}
	for _, b := range h.Bursts {
		if b.Check != check {
			continue
		}
		r := round{b.Round, b.InTurn}
		if b.Round == 0 {
			r = round{-b.ID, b.InTurn}
		}
		ok := perBurst[b.ID] != nil && perBurst[b.ID].admitted >= 2
		if was, known := seen[r]; !known || !was && ok {
			seen[r] = ok
		}
	}
	for _, ok := range seen {
		rounds++
		if ok {
			admitted++
		}
	}
	return rounds, admitted, refused, attempts
}

// admissionProof states, for a check whose bursts met refusals, how many
// of its rounds really ran concurrently inside the handler; "" when no
// burst attempt was refused. none says that no round did: the check's
// concurrency was never exercised.
func admissionProof(h *idemcheck.History, check string, words Words) (proof string, none bool) {
	rounds, admitted, refused, attempts := admission(h, check)
	if refused == 0 || rounds == 0 {
		return "", false
	}
	if admitted == 0 {
		return fmt.Sprintf("the target refused %d of its bursts' %d attempts before the handler (a rate limit: 429, or 503 with Retry-After), "+
			"and in none of its %s did two same-key attempts reach the handler together, even sent again after Retry-After: "+
			"its concurrency was never exercised. %s",
			refused, attempts, count(rounds, "round"), rateLimitAdvice(words)), true
	}
	return fmt.Sprintf("%d of %d rounds admitted two or more same-key attempts into the handler together "+
		"(%d of the bursts' %d attempts were refused before it, and prove nothing about concurrency)",
		admitted, rounds, refused, attempts), false
}

// rateLimitAdvice says what lets a rate-limited check run.
func rateLimitAdvice(words Words) string {
	return idemcheck.Phrasef("Raise the limit for the test's client (a staging environment), send fewer attempts at once (%s), or fewer per second (%s)",
		idemcheck.Field("Options.BurstSize"), idemcheck.Field("Rate")).In(words)
}

// stepLimitAdvice says what lets a check run whose steps were refused: a
// retry sent while an earlier attempt is held in the handler needs a limit
// that admits two requests of the client at once.
func stepLimitAdvice(words Words) string {
	return idemcheck.Phrasef("A retry sent while an earlier attempt is still in the handler needs a limit that admits two requests of the client at once: "+
		"raise it for the test's client (a staging environment); where the limit counts requests per second, send fewer (%s)",
		idemcheck.Field("Rate")).In(words)
}
