package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// WriteSoak renders a soak's report for a person. counted says whether the
// soak counted effects (an effect query was given): without it, duplicates
// can only be seen on the wire, and the report says so.
func WriteSoak(w io.Writer, rep idemcheck.SoakReport, counted bool) {
	r := rep.Soak
	fmt.Fprintf(w, "soak of %s %s%s, seed %d\n", rep.Target.Method, rep.Target.URL, rep.Target.Path, rep.Seed)
	if rep.Target.Insecure {
		fmt.Fprintf(w, "  insecure: the target's TLS certificate was not verified (--insecure)\n")
	}
	writeSoakParts(w, rep)
	fmt.Fprintf(w, "  %d intents in %.1fs: %.0f requests/s sent, %.0f/s answered with success (%.1f%%)\n",
		r.Intents, r.Duration.Seconds(), r.Rate, r.Throughput, r.Success*100)
	fmt.Fprintf(w, "  latency p50 %v, p90 %v, p99 %v, max %v\n", r.P50.Round(time.Microsecond), r.P90.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
	lost := "replies cut after commit"
	if !r.CutsOnly() {
		lost = "first attempts left without a reply"
	}
	fmt.Fprintf(w, "  %d %s and retried with the same key (%.2f%%); %.0f%% of those retries were replays; %d never answered\n",
		r.Cut, lost, r.TimeoutRate*100, r.SucceededShare*100, r.Unresolved)
	writeSoakFaults(w, r)
	if counted {
		fmt.Fprintf(w, "  effects counted for %d intents: %d duplicated, %d lost: %.1f duplicates per million intents\n",
			r.Counted, r.Duplicates, r.Lost, r.DuplicatesPerMillion)
		for _, l := range soakSettleLines(r) {
			fmt.Fprintf(w, "  %s\n", l)
		}
	} else {
		fmt.Fprintf(w, "  effects not counted (no --effect-sql): duplicates can only be seen on the wire\n")
	}
	if e := rep.Estimate; e != nil && r.Cut == 0 {
		// No reply was cut: only the late duplicates the soak measured
		// make duplicates.
		fmt.Fprintf(w, "  %.2f%% of this soak's intents were done again after the reply (measured). At %.0f requests a day that is\n"+
			"  %.0f duplicates a day, whatever the client does. With your own traffic's figures:\n"+
			"    idemcheck estimate --requests-per-day N --timeout-rate SHARE --succeeded-share SHARE --late-duplicate-rate %.4f\n",
			e.Inputs.LateDuplicateRate*100, e.Inputs.RequestsPerDay, e.LateDuplicatesPerDay, e.Inputs.LateDuplicateRate)
	} else if e != nil {
		// The cut share is what this soak injected, not what the API's
		// clients see: the cost is stated as the assumption it is, and
		// only the replay share is the API's own figure.
		share, timedOut := "cut share", "timed out after commit"
		if !r.CutsOnly() {
			// Some of the lost replies were lost before the server did
			// anything (a request cut or swallowed): the succeeded share
			// says how many had been carried out.
			share, timedOut = "share of first attempts without a reply", "timed out"
		}
		late, lateFlag := "", ""
		if e.LateDuplicatesPerDay > 0 {
			// The late duplicates were measured: they are said apart.
			late = fmt.Sprintf(" (%.0f of them late duplicates, the %.2f%% of intents this soak measured done again after the reply)",
				e.LateDuplicatesPerDay, e.Inputs.LateDuplicateRate*100)
			lateFlag = fmt.Sprintf(" --late-duplicate-rate %.4f", e.Inputs.LateDuplicateRate)
		}
		fmt.Fprintf(w, "  the %s was injected by this soak, not measured from the API. If %.2f%% of your real requests %s\n"+
			"  at %.0f requests a day, retries without idempotency would make %.0f duplicates a day%s, and a client without\n"+
			"  retries would leave %.0f customers a month unanswered. With your own traffic's figures:\n"+
			"    idemcheck estimate --requests-per-day N --timeout-rate SHARE --succeeded-share %.2f%s\n",
			share, e.Inputs.TimeoutRate*100, timedOut, e.Inputs.RequestsPerDay, e.DuplicatesPerDay, late, e.UnansweredPerMonth, e.Inputs.SucceededShare, lateFlag)
	}
	fmt.Fprintf(w, "  verdict %s\n", strings.ToUpper(string(rep.Verdict)))
	if rep.Reason != "" {
		fmt.Fprintf(w, "  %s\n", rep.Reason)
	}
}

// soakSettleLines say how a soak's effects settled, what counting them
// again after the load found, and how many intents could not be judged:
// lines for a person, shared by the terminal and the HTML page; none for
// a soak that counted each intent once, at the reply.
func soakSettleLines(r *idemcheck.SoakResult) []string {
	var out []string
	if st := r.Settle; st != nil {
		state := "settled: the last pass counted what the one before it did"
		switch {
		case st.Settled:
		case r.Operations != nil && r.Operations.Pending > 0 && r.Pending+r.Unsettled == 0:
			state = "the bound ran out with status monitors still pending"
		case r.Operations != nil && r.Operations.Pending > 0:
			state = "the bound ran out with counts still changing and status monitors still pending"
		default:
			state = "the bound ran out with counts still changing"
		}
		out = append(out, fmt.Sprintf("effects counted once settled: %s over %v after the load (bound %v, quiet period %v); %s",
			plural(st.Passes, "pass", "passes"), st.Waited.Round(time.Millisecond), st.Bound, st.Quiet, state))
	}
	if ops := r.Operations; ops != nil {
		l := fmt.Sprintf("status monitors followed: %d (%s): %d done, %d failed, %d still pending or unreadable at the bound",
			ops.Monitors, plural(int(ops.Reads), "read", "reads"), ops.Done, ops.Failed, ops.Pending)
		if ops.Unnamed > 0 {
			l += fmt.Sprintf("; %s named no monitor idemcheck could read", plural(int(ops.Unnamed), "accepted reply", "accepted replies"))
		}
		if ops.OwedNothing > 0 {
			l += fmt.Sprintf("; %s owed no effect, their operation failed", plural(int(ops.OwedNothing), "intent", "intents"))
		}
		out = append(out, l)
	}
	if r.Recounted > 0 {
		out = append(out, fmt.Sprintf("effects counted again for %d intents once the settle bound had passed after the load: %d late duplicates (%.2f%%), effects that appeared after their intent was judged",
			r.Recounted, r.LateDuplicates, r.LateDuplicateRate*100))
		const shown = 3
		for i, a := range r.Anomalies {
			if i == shown {
				break
			}
			out = append(out, "  "+lateLine(a))
		}
		if more := r.LateDuplicates - int64(min(len(r.Anomalies), shown)); more > 0 {
			out = append(out, fmt.Sprintf("  and %d more", more))
		}
	}
	if r.Pending > 0 || r.Unsettled > 0 {
		out = append(out, fmt.Sprintf("not judged: %d intents answered with an accepted status whose effect may still be pending, %d whose count was still changing at the settle bound",
			r.Pending, r.Unsettled))
	}
	if ops := r.Operations; ops != nil && ops.Unjudged > 0 {
		out = append(out, fmt.Sprintf("not judged: %s whose status monitor was still pending, or unreadable, at the settle bound",
			plural(int(ops.Unjudged), "intent", "intents")))
	}
	return out
}

// lateLine says one late duplicate in a line: the intent, both counts
// and how far apart they were taken.
func lateLine(a idemcheck.Anomaly) string {
	o := a.Observed
	after := ""
	if at, ok := o["effects_at"].(time.Time); ok && !at.IsZero() {
		if late, ok := o["late_at"].(time.Time); ok && !late.IsZero() {
			after = fmt.Sprintf(" %v later", late.Sub(at).Round(time.Millisecond))
		}
	}
	return fmt.Sprintf("%s %s: %v effects when judged, %v when counted again%s", a.Kind, a.Intent, o["effects"], o["late_effects"], after)
}

// writeSoakParts says which part of a sharded soak a report is of, or
// which histories it merged, and which shards it lacks.
func writeSoakParts(w io.Writer, rep idemcheck.SoakReport) {
	m := rep.Merged
	switch {
	case m == nil && rep.Shard != nil:
		fmt.Fprintf(w, "  shard %s: this shard's intents only; merge every shard's history with idemcheck check\n", rep.Shard)
	case m == nil:
	case m.Shards > 0:
		fmt.Fprintf(w, "  %d histories merged, of %d shards", m.Histories, m.Shards)
		if len(m.Missing) > 0 {
			idx := make([]string, len(m.Missing))
			for i, n := range m.Missing {
				idx[i] = fmt.Sprint(n)
			}
			fmt.Fprintf(w, "; missing shard %s: its intents are not counted", strings.Join(idx, ", "))
		}
		fmt.Fprintln(w)
	case m.Histories > 1:
		fmt.Fprintf(w, "  %d histories merged\n", m.Histories)
	}
}

// writeSoakFaults states each fault the soak ran under and what it hit,
// when there is more than the cut replies the line above counts: a fault
// on single attempts with the first attempts it hit, those of them left
// without a reply and retried, and how many of those retries were replays;
// a fault on a whole link with the attempts that went through it.
func writeSoakFaults(w io.Writer, r *idemcheck.SoakResult) {
	if len(r.Faults) == 0 || len(r.Faults) == 1 && r.Faults[0].Fault == "cut-reply" {
		return
	}
	const none = "no fault"
	width, faulted := len(none), int64(0)
	for _, f := range r.Faults {
		width = max(width, len(f.Fault))
		faulted += f.Retried
	}
	fmt.Fprintf(w, "  faults:\n")
	if r.Cut > faulted {
		// A first attempt no fault hit got no reply either: the target,
		// or a slow link, did not answer it in time.
		fmt.Fprintf(w, "    %-*s  %d first attempts left without a reply and retried\n", width, none, r.Cut-faulted)
	}
	for _, f := range r.Faults {
		if f.WholeLink {
			link := "client link"
			if f.Link == idemcheck.LinkDB {
				link = "database link"
			}
			fmt.Fprintf(w, "    %-*s  the whole %s: every attempt (%d)\n", width, f.Fault, link, f.Attempts)
			continue
		}
		hit := 0.0
		if r.Intents > 0 {
			hit = float64(f.Attempts) / float64(r.Intents) * 100
		}
		line := fmt.Sprintf("    %-*s  %d first attempts (%.2f%%, share %g): %d left without a reply and retried", width, f.Fault, f.Attempts, hit, f.Share, f.Retried)
		if f.Retried > 0 {
			line += fmt.Sprintf(", %d of those retries replays", f.Replayed)
		}
		fmt.Fprintln(w, line)
	}
}

// SoakProgressLine is a soak's running count as one line for a person.
func SoakProgressLine(p idemcheck.SoakProgress) string {
	shard := ""
	if p.Shard != nil {
		shard = " shard " + p.Shard.String()
	}
	return fmt.Sprintf("soak%s %s: %d sent, %.0f/s, %.1f%% success, %d cut and retried, %d errors",
		shard, p.Elapsed.Truncate(100*time.Millisecond), p.Sent, p.Rate, p.Success()*100, p.Cut, p.Errors)
}

// SoakProgressWriter writes a soak's running count for a person on W. On a
// Terminal it redraws one line in place (a carriage return, then erase to
// the end of the line, then the count), and Done ends that line with a
// newline, so the last count stays on screen above whatever follows, even
// when the report goes elsewhere; anywhere else each count is a line of
// its own. Update and Done are called from one goroutine at a time.
type SoakProgressWriter struct {
	W        io.Writer
	Terminal bool

	drawn bool
}

// Update writes p.
func (s *SoakProgressWriter) Update(p idemcheck.SoakProgress) {
	if s.Terminal {
		fmt.Fprintf(s.W, "\r\033[K%s", SoakProgressLine(p))
		s.drawn = true
		return
	}
	fmt.Fprintln(s.W, SoakProgressLine(p))
}

// Done ends the line a terminal shows, if one was drawn.
func (s *SoakProgressWriter) Done() {
	if s.Terminal && s.drawn {
		fmt.Fprintln(s.W)
		s.drawn = false
	}
}

// soakProgressJSON is one progress line for a log collector: flat, with
// its time, so that each line stands alone.
type soakProgressJSON struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Shard    string    `json:"shard,omitempty"`
	ElapsedS float64   `json:"elapsed_s"`
	Sent     int64     `json:"sent"`
	Rate     float64   `json:"rate"`
	Success  float64   `json:"success"`
	Cut      int64     `json:"cut"`
	Errors   int64     `json:"errors"`
	Retried  int64     `json:"retried"`
}

// WriteSoakProgressJSON writes a soak's running count as one JSON line,
// {"event":"soak-progress",...}, stamped with now.
func WriteSoakProgressJSON(w io.Writer, p idemcheck.SoakProgress, now time.Time) error {
	line := soakProgressJSON{Time: now.UTC().Truncate(time.Millisecond), Event: "soak-progress", ElapsedS: p.Elapsed.Seconds(),
		Sent: p.Sent, Rate: p.Rate, Success: p.Success(), Cut: p.Cut, Errors: p.Errors, Retried: p.Retried}
	if p.Shard != nil {
		line.Shard = p.Shard.String()
	}
	return json.NewEncoder(w).Encode(line)
}
