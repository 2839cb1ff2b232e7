package certify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A target that exits when its database connection is cut (as a Node
// service using pg without an 'error' handler does): every failed-attempt
// round cuts its link at COMMIT, and each time the exit is recorded at
// that step with its status and last output, the target is restarted, and
// the steps and checks after it are answered.
func TestTargetThatExitsOnACutLinkIsWatchedAndRestarted(t *testing.T) {
	ctx := context.Background()
	logFile := filepath.Join(t.TempDir(), "target.log")
	logs, err := os.Create(logFile)
	require.NoError(t, err)
	defer logs.Close()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command: ordersBinary(t) + " -lease " + testLease.String() + " -exit-on-db-error",
		DSN:     pgtest.DSN(t),
		Logs:    logs,
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckFailedAttempt, idemcheck.CheckSequentialReplay}
	cfg.TargetLog = logFile
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	h := res.History

	var exits, restarts []idemcheck.Event
	for _, e := range h.Events {
		switch e.Kind {
		case idemcheck.TargetExited:
			exits = append(exits, e)
		case idemcheck.TargetRestarted:
			restarts = append(restarts, e)
		case idemcheck.TargetKilled:
			t.Errorf("nothing was killed on purpose, yet: %+v", e)
		}
	}
	// failed-attempt cuts the link in each round of its two halves: before
	// the effect write ran, and after it committed.
	rounds := cfg.Options.FaultRounds
	cuts := 2 * rounds
	require.Len(t, exits, cuts, "one exit per cut: %+v", h.Events)
	require.Len(t, restarts, cuts, "one restart per exit: %+v", h.Events)
	for i, e := range exits {
		assert.Equal(t, idemcheck.CheckFailedAttempt, e.Check)
		assert.Equal(t, i%rounds+1, e.Round)
		assert.Equal(t, 1, e.Step, "placed at the step whose cut killed it")
		assert.NotEmpty(t, e.Intent)
		assert.Equal(t, 0, e.Instance)
		assert.Equal(t, "exit status 1", e.ExitStatus)
		assert.Contains(t, e.LogTail, "orders: database connection terminated unexpectedly")
		assert.LessOrEqual(t, len(strings.Split(e.LogTail, "\n")), 20)
		assert.False(t, e.Time.IsZero())
		assert.NotEmpty(t, e.Detail)
		r := restarts[i]
		assert.Equal(t, [3]any{e.Check, e.Round, e.Step}, [3]any{r.Check, r.Round, r.Step}, "restarted before the next step")
	}

	// The retry of every failed-attempt round and every attempt of the
	// check after it were answered by the restarted target.
	for _, a := range h.Attempts {
		if a.Check == idemcheck.CheckFailedAttempt && a.Step == 1 {
			assert.NotEqual(t, idemcheck.Replied, a.Outcome, "the cut attempt died with the target: %+v", a)
			continue
		}
		assert.Equal(t, idemcheck.Replied, a.Outcome, "%s round %d step %d: %s", a.Check, a.Round, a.Step, a.Error)
	}
	steps := map[[3]any]bool{}
	for _, a := range h.Attempts {
		steps[[3]any{a.Check, a.Round, a.Step}] = true
	}
	assert.Len(t, steps, 2*rounds+2*cfg.Options.Rounds, "every step of every round ran")

	// The crash is a robustness finding apart from the verdict: each round
	// was judged on its retry, which the restarted target replayed or
	// executed once, so the check passes.
	for _, c := range res.Report.Checks {
		assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", c.Name, c.Reason)
	}
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	var findings []idemcheck.Anomaly
	for _, a := range res.Report.Remarks {
		if a.Kind == idemcheck.TargetExitedFinding {
			findings = append(findings, a)
		}
	}
	require.Len(t, findings, 1, "one finding for the check")
	assert.Equal(t, idemcheck.CheckFailedAttempt, findings[0].Check)
	assert.Contains(t, findings[0].Explanation, fmt.Sprintf("the target exited on a dropped database link %d times", cuts))

	// The report names the log, and the log holds the target's own words.
	assert.Equal(t, logFile, res.Report.Target.Log)
	assert.Equal(t, logFile, h.Run.Target.Log)
	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	assert.Equal(t, cuts, strings.Count(string(b), "[orders#0] orders: database connection terminated unexpectedly"), "log:\n%s", b)
}

// The same target without the flag survives the cut: no exit is recorded,
// and a log kept only on exits is not named.
func TestTargetThatSurvivesACutLinkHasNoExit(t *testing.T) {
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command: ordersBinary(t) + " -lease " + testLease.String(),
		DSN:     pgtest.DSN(t),
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckFailedAttempt}
	cfg.TargetLog, cfg.TargetLogOnExit = filepath.Join(t.TempDir(), "target.log"), true
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	for _, e := range res.History.Events {
		assert.NotEqual(t, idemcheck.TargetExited, e.Kind, "%+v", e)
		assert.NotEqual(t, idemcheck.TargetRestarted, e.Kind, "%+v", e)
	}
	assert.Empty(t, res.Report.Target.Log)
	for _, a := range res.History.Attempts {
		if a.Step == 2 {
			assert.Equal(t, idemcheck.Replied, a.Outcome)
		}
	}
}

// A target that exits and then cannot start again stops the run, and the
// error says how it ended and what it said last.
func TestTargetThatCannotRestartStopsTheRun(t *testing.T) {
	ctx := context.Background()
	mark := filepath.Join(t.TempDir(), "started")
	command := `if [ -e "` + mark + `" ]; then echo "orders: refusing a second start"; exit 2; fi; : > "` + mark + `"; exec ` +
		ordersBinary(t) + " -lease " + testLease.String() + " -exit-on-db-error"
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: command, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckFailedAttempt, idemcheck.CheckSequentialReplay}
	cfg.TargetLog = "/some/target.log"
	_, err = certify.Run(ctx, cfg)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"exited on its own during failed-attempt round 1 step 1",
		"exit status 1",
		"could not be restarted",
		"refusing a second start",
		"orders: database connection terminated unexpectedly",
		"/some/target.log",
	} {
		assert.Contains(t, msg, want)
	}
	var ie *idemcheck.Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, idemcheck.ExitUnavailable, ie.Code)
}
