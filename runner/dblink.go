package runner

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// DBLinkFaults says whether database-link faults (a cut, a held
// statement, a write barrier) can act on the target, and why not: the
// Runner's NoDBLinkFaults (a reason its caller knows), the Powers' own
// (targets.NoDBLink: no link, known before any traffic, whose checks
// scenarios.Plan skips already), or Powers that report no database traffic through
// the link they offered (targets.DBLinkReporter: no session of the
// database's engine, PostgreSQL or MySQL, came through it, so the
// target's database is another engine, it connects elsewhere, or the link
// refused its stream). A
// target without Powers has no database link at all, and the checks that
// need one are skipped by the plan already: it reports true.
func (r *Runner) DBLinkFaults() (bool, string) {
	if r.Powers == nil {
		return true, ""
	}
	if r.NoDBLinkFaults != "" {
		return false, r.NoDBLinkFaults
	}
	if why := scenarios.NoDBLink(r.Powers); why != "" {
		return false, why
	}
	if rep, ok := r.Powers.(targets.DBLinkReporter); ok {
		return rep.DBLinkFaults()
	}
	return true, ""
}

// actsOnDBLink reports whether a scenario acts on the database link: a step
// cuts or holds a statement there. A kill after commit does not need it:
// without a statement to hold it kills at the reply, which is held on the
// client link.
func actsOnDBLink(sc scenarios.Scenario) bool {
	for _, st := range sc.Steps {
		if !st.DBFault.IsNone() && st.Send != scenarios.HoldKillAfterCommit {
			return true
		}
	}
	return false
}

// withoutDBLink drops the scenarios that need the database link, and marks
// skipped, with why, each check in h's plan left with none: the verdict
// rests on the checks that ran. A check that keeps other scenarios (the
// saved error of failed-attempt, say) runs those.
func withoutDBLink(scs []scenarios.Scenario, h *idemcheck.History, why string) []scenarios.Scenario {
	kept := map[string]bool{}
	dropped := map[string]bool{}
	var out []scenarios.Scenario
	for _, sc := range scs {
		if actsOnDBLink(sc) {
			dropped[sc.Check] = true
			continue
		}
		kept[sc.Check] = true
		sc.Steps = slices.Clone(sc.Steps)
		for i := range sc.Steps {
			// A kill after commit then waits for the reply alone.
			sc.Steps[i].DBFault = faults.Fault{}
		}
		out = append(out, sc)
	}
	checks := slices.Clone(h.Run.Checks)
	for i, pc := range checks {
		if pc.Skip == "" && dropped[pc.Name] && !kept[pc.Name] {
			checks[i].Skip = fmt.Sprintf("its faults act on the database link, and none can: %s", why)
		}
	}
	h.Run.Checks = checks
	return out
}
