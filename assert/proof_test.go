package assert

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

const (
	failed = idemcheck.CheckFailedAttempt
	seq    = idemcheck.CheckSequentialReplay
)

// status returns the named check's result.
func status(t *testing.T, r idemcheck.Report, name string) idemcheck.CheckResult {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "no such check", "%s", name)
	return idemcheck.CheckResult{}
}

// fault marks the attempts of step 1 of intent as sent through f, a fault
// on the database link.
func (b *histBuilder) fault(intent, f string) {
	for i := range b.h.Attempts {
		if a := &b.h.Attempts[i]; a.Intent == intent && a.Step == 1 {
			a.Fault, a.FaultLinks = f, []string{idemcheck.LinkDB}
		}
	}
}

func (b *histBuilder) event(e idemcheck.Event) { b.h.Events = append(b.h.Events, e) }

// A dead target passed: "2 intents, 4 attempts" without one reply.
func TestNothingAnsweredIsNeverAPass(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed, seq)
	in := b.intent(failed, 0, `1 0-1 unknown`, `2 2-3 not-sent`)
	b.fault(in, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Landing: idemcheck.LandedCommit})
	b.intent(seq, 0, `1 4-5 not-sent`, `2 6-7 not-sent`)
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, failed).Status)
	assert.Contains(t, status(t, r, failed).Reason, "none of its 2 attempts was answered")
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, seq).Status)
	assert.Equal(t, idemcheck.NoAnswers, r.Verdict)
	assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.VerdictExit(r.Verdict, true), "no opt-out for a target that answered nothing")
}

// A fault that never fired passed: an autocommitting handler never sent
// the COMMIT that failed-attempt waits for.
func TestFaultThatNeverLandedIsInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed, seq)
	for range 2 {
		in := b.intent(failed, 1, `1 0-1 201 {"orderId":"A"}`, `2 2-3 201 {"orderId":"A"} replayed`)
		b.fault(in, "db-cut")
		b.event(idemcheck.Event{Kind: idemcheck.FaultMissed, Intent: in, Check: failed,
			Detail: "the target sent no COMMIT and no autocommitted write while the attempt ran"})
	}
	b.intent(seq, 1, `1 4-5 201 {"orderId":"B"}`, `2 6-7 201 {"orderId":"B"} replayed`)
	r := Report(&b.h)
	c := status(t, r, failed)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "in none of its 2 rounds: the target sent no COMMIT and no autocommitted write while the attempt ran (2 rounds)")
	assert.Equal(t, idemcheck.Pass, status(t, r, seq).Status)
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
	assert.Equal(t, idemcheck.ExitInconclusive, idemcheck.VerdictExit(r.Verdict, false))
	assert.Equal(t, idemcheck.ExitHeld, idemcheck.VerdictExit(r.Verdict, true), "--allow-inconclusive")
	var rule idemcheck.RuleResult
	for _, rr := range r.Contract {
		if rr.Check == failed {
			rule = rr
		}
	}
	assert.Equal(t, idemcheck.RuleInconclusive, rule.Status)

	// A history without any event for the faulted intent proves nothing
	// either: the fault's landing is what shows it happened.
	b.h.Events = nil
	c = status(t, Report(&b.h), failed)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "its fault (db-cut) never landed")
}

func TestLandedFaultWithAnsweredRetryPasses(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-1 unknown`, `2 2-3 201 {"orderId":"A"}`)
	b.fault(in, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Landing: idemcheck.LandedAutocommitWrite})
	// The second round's fault missed: it does not count, and says why.
	in2 := b.intent(failed, 1, `1 4-5 201 {"orderId":"B"}`, `2 6-7 201 {"orderId":"B"}`)
	b.fault(in2, "db-cut")
	// The third round's fault landed, but its retry was never answered.
	in3 := b.intent(failed, 0, `1 8-9 500 {"error":"connection lost"}`, `2 10-11 unknown`)
	b.fault(in3, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in3, Check: failed, Landing: idemcheck.LandedCommit})
	r := Report(&b.h)
	c := status(t, r, failed)
	require.Equal(t, idemcheck.Pass, c.Status, c.Reason)
	assert.Contains(t, c.Proof, "1 of 3 rounds happened as meant")
	assert.Contains(t, c.Proof, "fault landed in 2 of 3 (on autocommit-write x1, commit x1)")
	assert.Contains(t, c.Proof, "its fault (db-cut) never landed (1 round)")
	assert.Contains(t, c.Proof, "the fault landed, but no retry after it was answered (1 round)")
	assert.Equal(t, 4, c.Answered, "answered counts complete replies")
	assert.Equal(t, idemcheck.Pass, r.Verdict)
}

// A target that exits under the fault idemcheck applied (its database
// link cut) and answers the retry once restarted: the round is judged on
// that retry, and the crash is a robustness finding apart from the
// verdict, which stays PASS.
func TestTargetExitUnderAFaultIsAFindingNotTheEndOfTheCheck(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-1 unknown`, `2 2-3 201 {"orderId":"A"}`)
	b.fault(in, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Landing: idemcheck.LandedCommit})
	b.event(idemcheck.Event{Kind: idemcheck.TargetExited, Intent: in, Check: failed, Round: 1, Step: 1,
		ExitStatus: "exit status 1", LogTail: "Connection terminated unexpectedly"})
	r := Report(&b.h)
	c := status(t, r, failed)
	require.Equal(t, idemcheck.Pass, c.Status, c.Reason)
	assert.Contains(t, c.Proof, "target exited under its fault 1 time and was restarted")
	assert.Empty(t, r.Anomalies, "a robustness finding is no anomaly")
	require.Len(t, r.Remarks, 1)
	a := r.Remarks[0]
	assert.Equal(t, idemcheck.TargetExitedFinding, a.Kind)
	assert.Equal(t, idemcheck.RobustnessFinding, a.Finding())
	assert.Equal(t, failed, a.Check)
	assert.Contains(t, a.Explanation, "the target exited on a dropped database link 1 time")
	assert.Equal(t, []int{0}, c.Remarks, "the finding is listed with its check, apart from the verdict")
	require.Len(t, r.TargetExits, 1)
	assert.Equal(t, "Connection terminated unexpectedly", r.TargetExits[0].LogTail)
	assert.Equal(t, idemcheck.Pass, r.Verdict)

	// The same crash with the restarted target executing the retry again
	// (it lost its keys with the process): the round fails on that.
	b2 := newHist(t, idemcheck.IETF(), failed)
	in2 := b2.intent(failed, 2, `1 0-1 unknown`, `2 2-3 201 {"orderId":"B"}`)
	b2.fault(in2, "db-cut")
	b2.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in2, Check: failed, Landing: idemcheck.LandedCommit})
	b2.event(idemcheck.Event{Kind: idemcheck.TargetExited, Intent: in2, Check: failed, Round: 1, Step: 1, ExitStatus: "exit status 1"})
	r2 := Report(&b2.h)
	assert.Equal(t, idemcheck.Fail, status(t, r2, failed).Status)
	assert.Equal(t, idemcheck.Fail, r2.Verdict)
	kinds := map[idemcheck.Kind]bool{}
	for _, a := range r2.Anomalies {
		kinds[a.Kind] = true
	}
	assert.True(t, kinds[idemcheck.DuplicateEffect], "%v", r2.Anomalies)
	assert.False(t, kinds[idemcheck.TargetExitedFinding], "%v", r2.Anomalies)
	require.Len(t, r2.Remarks, 1)
	assert.Equal(t, idemcheck.TargetExitedFinding, r2.Remarks[0].Kind)
}

// A target that exits at a step no fault broke (the retry, say) leaves
// the check inconclusive: what followed tested a restarted target.
func TestTargetExitOutsideAFaultMakesTheCheckInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-1 unknown`, `2 2-3 201 {"orderId":"A"}`)
	b.fault(in, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Landing: idemcheck.LandedCommit})
	b.event(idemcheck.Event{Kind: idemcheck.TargetExited, Intent: in, Check: failed, Round: 1, Step: 2,
		ExitStatus: "exit status 1", LogTail: "panic"})
	r := Report(&b.h)
	c := status(t, r, failed)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "the target exited on its own (exit status 1) during round 1, step 2")
	assert.Empty(t, r.Anomalies, "no finding: it was not under a fault")
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
}

// An anomaly witnessed on the wire fails the check, whatever else
// happened: the contract was broken where it shows.
func TestAnomalyWinsOverInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), burst, failed)
	b.intent(burst, 2, `1 0-5 201 {"orderId":"A"}`, `1 0-5 201 {"orderId":"B"}`)
	in := b.intent(failed, 0, `1 6-7 unknown`, `2 8-9 unknown`)
	b.fault(in, "db-cut")
	r := Report(&b.h)
	assert.Equal(t, idemcheck.Fail, status(t, r, burst).Status)
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, failed).Status)
	assert.Equal(t, idemcheck.Fail, r.Verdict)
}

func TestRunsWithNothingToJudge(t *testing.T) {
	// Every check skipped: a URL target asked only for the fault checks.
	b := newHist(t, idemcheck.IETF())
	for _, c := range []string{failed, idemcheck.CheckCrashLease} {
		b.h.Run.Checks = append(b.h.Run.Checks, idemcheck.PlannedCheck{Name: c, Skip: "needs control of the target"})
	}
	assert.Equal(t, idemcheck.AllSkipped, Report(&b.h).Verdict)

	// A history holding only its run record.
	e := newHist(t, idemcheck.IETF(), burst, seq)
	r := Report(&e.h)
	assert.Equal(t, idemcheck.Empty, r.Verdict)
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, burst).Status)
	assert.Equal(t, idemcheck.ExitInconclusive, idemcheck.VerdictExit(r.Verdict, true), "no opt-out for an empty run")
}

func TestWorstVerdict(t *testing.T) {
	assert.Equal(t, idemcheck.Pass, idemcheck.WorstVerdict())
	assert.Equal(t, idemcheck.Inconclusive, idemcheck.WorstVerdict(idemcheck.Pass, idemcheck.Inconclusive, idemcheck.Empty))
	assert.Equal(t, idemcheck.Fail, idemcheck.WorstVerdict(idemcheck.NoAnswers, idemcheck.Fail, idemcheck.Pass))
}

// A key still in progress after a crash, with no lease declared: stuck for
// ever or a lease longer than the wait? The round proves nothing, and the
// check says what to give; with a lease declared it is a stuck key.
func TestStuckKeyWithoutALeaseIsInconclusive(t *testing.T) {
	const c = idemcheck.CheckCrashLease
	b := newHist(t, idemcheck.IETF(), c)
	in := b.intent(c, 0, `1 0-5 unknown`, `2 10-12 409 {}`, `2 2000-2002 409 {}`)
	b.fault(in, "kill-at-commit+db-hold:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.TargetKilled, Intent: in, Check: c})
	r := Report(&b.h)
	assert.Empty(t, r.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, status(t, r, c).Status)
	assert.Contains(t, status(t, r, c).Reason, "the policy declares no lease")

	b.h.Run.Policy.Lease = time.Second
	r = Report(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(r.Anomalies))
}

// failed-attempt cut the database link and landed, but the provider faults
// armed in its other rounds never acted (the target never called the
// double handed to it): the downstream half never happened, and the
// check cannot pass on the database half alone.
func TestAFaultKindThatNeverLandedIsInconclusive(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-1 unknown`, `2 2-3 201 {"orderId":"A"}`)
	b.fault(in, "db-cut")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Landing: idemcheck.LandedCommit})
	for _, f := range []string{"provider-cut-reply", "provider-5xx"} {
		in := b.intent(failed, 1, `1 4-5 201 {"orderId":"B"}`, `2 6-7 201 {"orderId":"B"}`)
		for i := range b.h.Attempts {
			if a := &b.h.Attempts[i]; a.Intent == in && a.Step == 1 {
				a.Fault, a.FaultLinks = f, []string{idemcheck.LinkProvider}
			}
		}
		b.event(idemcheck.Event{Kind: idemcheck.FaultMissed, Intent: in, Check: failed, Fault: f,
			Detail: "the target called no provider double while the attempt ran"})
	}
	c := status(t, Report(&b.h), failed)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Equal(t, "its faults on the provider link landed in none of their 2 rounds (the target called no provider double while the attempt ran): "+
		"that part of its scenario never happened, and its other rounds cannot stand for it", c.Reason)

	// Once one provider fault lands, each kind has happened: the check
	// passes, and says which rounds did not count.
	b.h.Events[len(b.h.Events)-1] = idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: b.h.Intents[2].ID, Check: failed,
		Fault: "provider-5xx", Landing: idemcheck.LandedProviderCall}
	c = status(t, Report(&b.h), failed)
	require.Equal(t, idemcheck.Pass, c.Status, c.Reason)
	assert.Contains(t, c.Proof, "2 of 3 rounds happened as meant")
	assert.Contains(t, c.Proof, "the target called no provider double while the attempt ran (1 round)")
}

// lease-fencing froze the first attempt past the declared lease, but the
// target's own lease was longer: every retry sent meanwhile was told the
// key was in progress, the first resumed and finished, and nothing was
// duplicated. No retry took the key over, so no fence was tested: the
// check is inconclusive, never a pass, and says what to give.
func TestLeaseFencingWithoutATakeoverIsInconclusive(t *testing.T) {
	const c = idemcheck.CheckLeaseFencing
	p := idemcheck.IETF()
	p.Lease = time.Second
	b := newHist(t, p, c)
	in := b.intent(c, 1, `1 0-2600 201 {"orderId":"A"}`, `2 1500-1502 409 {}`, `2 1700-1702 409 {}`, `2 2500-2502 409 {}`,
		`3 2700-2702 201 {"orderId":"A"} replayed`)
	b.fault(in, "db-hold:match=BEGIN,nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: c, Landing: idemcheck.LandedWrite})
	r := Report(&b.h)
	assert.Empty(t, r.Anomalies)
	got := status(t, r, c)
	assert.Equal(t, idemcheck.Inconclusive, got.Status)
	assert.Contains(t, got.Reason, "3 retries sent while the first attempt was frozen (the first 1.5s after the first attempt, past the declared lease of 1s) "+
		"were all told the key was still in progress (409)")

	// The last retry was still on its way when the wait ended, and was
	// answered once the first had finished: the two before it, told the
	// key was in progress, say why there was no takeover.
	b.h.Attempts[3].Status, b.h.Attempts[3].End = 201, t0.Add(2650*time.Millisecond)
	b.h.Attempts[3].RespBody, b.h.Attempts[3].RespHeader = b.h.Attempts[4].RespBody, b.h.Attempts[4].RespHeader
	r = Report(&b.h)
	require.Empty(t, r.Anomalies)
	got = status(t, r, c)
	assert.Equal(t, idemcheck.Inconclusive, got.Status)
	assert.Contains(t, got.Reason, "2 retries sent while the first attempt was frozen")

	// A lone retry answered only once the first had resumed waited for it
	// (on the frozen write's row lock, say).
	w := newHist(t, p, c)
	in = w.intent(c, 1, `1 0-2600 201 {"orderId":"A"}`, `2 1500-2610 201 {"orderId":"A"} replayed`, `3 2700-2702 201 {"orderId":"A"} replayed`)
	w.fault(in, "db-hold:nth=2")
	w.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: c, Landing: idemcheck.LandedAutocommitWrite})
	r = Report(&w.h)
	require.Empty(t, r.Anomalies)
	got = status(t, r, c)
	assert.Equal(t, idemcheck.Inconclusive, got.Status)
	assert.Contains(t, got.Reason, "was answered only after the first had resumed")

	// Both let go at once, the waiting retry's answer may come before the
	// first's: the release, where the history has it, tells them apart.
	w.h.Attempts[1].End = t0.Add(2590 * time.Millisecond)
	w.event(idemcheck.Event{Kind: idemcheck.HoldReleased, Intent: in, Check: c, Time: t0.Add(2580 * time.Millisecond)})
	r = Report(&w.h)
	require.Empty(t, r.Anomalies)
	got = status(t, r, c)
	assert.Equal(t, idemcheck.Inconclusive, got.Status, "answered after the release, before the first: no takeover")
	assert.Contains(t, got.Reason, "was answered only after the first had resumed")
	w.h.Attempts[1].End = t0.Add(2570 * time.Millisecond)
	got = status(t, Report(&w.h), c)
	assert.Equal(t, idemcheck.Pass, got.Status, "answered before the release: a takeover. %s", got.Reason)

	// The last retry took the key over while the first was frozen (the
	// first, resumed, was then refused by the fence): the fence was tested.
	b.h.Attempts[0].Status, b.h.Attempts[0].RespBody = 409, `{}`
	b.h.Attempts[3].End = t0.Add(2520 * time.Millisecond)
	b.h.Attempts[3].RespHeader = nil
	r = Report(&b.h)
	require.Empty(t, r.Anomalies)
	got = status(t, r, c)
	require.Equal(t, idemcheck.Pass, got.Status, got.Reason)
}

// A failed attempt whose write had committed before its database link was
// cut (db-cut-after), then a retry that executed again: the duplicate's
// explanation says that the failure hid a committed effect; a duplicate
// without that fault does not.
func TestDuplicateAfterCutAfterCommitSaysTheWriteHadCommitted(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 2, `1 0-10 500 {"error":"internal error"}`, `2 20-30 201 {"id":"8"}`)
	b.fault(in, "db-cut-after:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: failed, Fault: "db-cut-after:nth=1", Landing: idemcheck.LandedAutocommitWrite})
	crashed := b.intent(failed, 2, `1 40-50 unknown`, `2 60-70 201 {"id":"9"}`)
	b.fault(crashed, "db-cut-after:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: crashed, Check: failed, Fault: "db-cut-after:nth=1", Landing: idemcheck.LandedAutocommitWrite})
	before := b.intent(failed, 2, `1 80-90 500 {"error":"internal error"}`, `2 100-110 201 {"id":"10"}`)
	b.fault(before, "db-cut:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: before, Check: failed, Fault: "db-cut:nth=1", Landing: idemcheck.LandedAutocommitWrite})
	r := Report(&b.h)
	got := map[string]string{}
	for _, a := range r.Anomalies {
		if a.Kind == idemcheck.DuplicateEffect {
			got[a.Intent] = a.Explanation
		}
	}
	require.Len(t, got, 3)
	assert.Contains(t, got[in], "Attempt 1's effect write reached the database, which committed it")
	assert.Contains(t, got[in], "the attempt was answered 500, and the retry with the same key was executed again")
	assert.Contains(t, got[crashed], "the attempt got no reply (the target died of the dropped connection")
	assert.NotContains(t, got[before], "committed it", "a cut before the write says nothing of a commit")
}

// A kill the harness could not confirm (a process of the target outlived
// it) leaves its round uncounted, whatever its retry got: it met the old
// process, not a restarted one.
func TestTargetNotDeadLeavesTheRoundUncounted(t *testing.T) {
	rr := idemcheck.CheckRestartReplay
	b := newHist(t, idemcheck.IETF(), rr)
	in := b.intent(rr, 1, `1 0-1 201 {"orderId":"A"}`, `2 2-3 201 {"orderId":"A"} replayed`)
	for i := range b.h.Attempts {
		if a := &b.h.Attempts[i]; a.Step == 1 {
			a.Fault = "kill-after-reply"
		}
	}
	b.event(idemcheck.Event{Kind: idemcheck.TargetNotDead, Intent: in, Check: rr, Round: 1, Step: 1,
		Detail: "the target was told to die and could not be confirmed dead, so its retry met the old process: port 4000 still accepts connections"})
	r := Report(&b.h)
	c := status(t, r, rr)
	assert.Equal(t, idemcheck.Inconclusive, c.Status)
	assert.Contains(t, c.Reason, "could not be confirmed dead")
	assert.Equal(t, idemcheck.Inconclusive, r.Verdict)
}

// A database fault that landed after its attempt had been answered met a
// background worker's write, not the handler's: the proof says how many.
// One without a connection (a client-link fault) or before the reply does
// not count.
func TestProofNamesFaultsOnAWorkersWrite(t *testing.T) {
	b := newHist(t, idemcheck.IETF(), failed)
	in := b.intent(failed, 1, `1 0-1 202 {"paymentId":"A"}`, `2 2000-2001 202 {"paymentId":"A"} replayed`)
	b.fault(in, "db-cut-after")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Time: t0.Add(300 * time.Millisecond), Intent: in, Check: failed, Step: 1,
		Landing: idemcheck.LandedCommit, Conn: 3})
	in2 := b.intent(failed, 1, `1 4000-4100 500 {"error":"connection lost"}`, `2 4200-4201 202 {"paymentId":"B"}`)
	b.fault(in2, "db-cut-after")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Time: t0.Add(4050 * time.Millisecond), Intent: in2, Check: failed, Step: 1,
		Landing: idemcheck.LandedCommit, Conn: 2})
	c := status(t, Report(&b.h), failed)
	assert.Contains(t, c.Proof, "fault landed in 2 of 2 (on commit x2, 1 of them a background worker's, after the attempt was answered)")
}
