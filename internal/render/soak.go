package render

import (
	"fmt"
	"io"
	"time"

	"github.com/idemcheck/idemcheck"
)

// WriteSoak renders a soak's report for a person. counted says whether the
// soak counted effects (an effect query was given): without it, duplicates
// can only be seen on the wire, and the report says so.
func WriteSoak(w io.Writer, rep idemcheck.SoakReport, counted bool) {
	r := rep.Soak
	fmt.Fprintf(w, "soak of %s %s%s, seed %d\n", rep.Target.Method, rep.Target.URL, rep.Target.Path, rep.Seed)
	fmt.Fprintf(w, "  %d intents in %.1fs: %.0f requests/s sent, %.0f/s answered with success (%.1f%%)\n",
		r.Intents, r.Duration.Seconds(), r.Rate, r.Throughput, r.Success*100)
	fmt.Fprintf(w, "  latency p50 %v, p90 %v, p99 %v, max %v\n", r.P50.Round(time.Microsecond), r.P90.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
	fmt.Fprintf(w, "  %d replies cut after commit and retried with the same key (%.2f%%); %.0f%% of those retries were replays; %d never answered\n",
		r.Cut, r.TimeoutRate*100, r.SucceededShare*100, r.Unresolved)
	if counted {
		fmt.Fprintf(w, "  effects counted for %d intents: %d duplicated, %d lost: %.1f duplicates per million intents\n",
			r.Counted, r.Duplicates, r.Lost, r.DuplicatesPerMillion)
	} else {
		fmt.Fprintf(w, "  effects not counted (no --effect-sql): duplicates can only be seen on the wire\n")
	}
	if e := rep.Estimate; e != nil {
		// The cut share is what this soak injected, not what the API's
		// clients see: the cost is stated as the assumption it is, and
		// only the replay share is the API's own figure.
		fmt.Fprintf(w, "  the cut share was injected by this soak, not measured from the API. If %.2f%% of your real requests timed out after commit\n"+
			"  at %.0f requests a day, retries without idempotency would make %.0f duplicates a day, and a client without\n"+
			"  retries would leave %.0f customers a month unanswered. With your own traffic's figures:\n"+
			"    idemcheck estimate --requests-per-day N --timeout-rate SHARE --succeeded-share %.2f\n",
			e.Inputs.TimeoutRate*100, e.Inputs.RequestsPerDay, e.DuplicatesPerDay, e.UnansweredPerMonth, e.Inputs.SucceededShare)
	}
	fmt.Fprintf(w, "  verdict %s\n", map[idemcheck.Status]string{idemcheck.Pass: "PASS", idemcheck.Fail: "FAIL"}[rep.Verdict])
}
