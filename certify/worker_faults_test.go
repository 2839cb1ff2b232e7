package certify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// certifyWorker certifies testdata/worker, started with env, with the
// given checks and effects counted once settled.
func certifyWorker(t *testing.T, env []string, checks ...string) *certify.Result {
	t.Helper()
	ctx := context.Background()
	env = append(env, "REPLY_DELAY=0s", "COMMIT_DELAY=0s")
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: workerProgram.Path(t), DSN: pgtest.DSN(t), Env: env})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = checks
	cfg.Options.Settle = 5 * time.Second
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res
}

// assertSecondEffect fails unless res found a second effect, at once or
// late.
func assertSecondEffect(t *testing.T, res *certify.Result) {
	t.Helper()
	kinds := map[idemcheck.Kind]bool{}
	for _, a := range res.Report.Anomalies {
		kinds[a.Kind] = true
	}
	assert.True(t, kinds[idemcheck.DuplicateEffect] || kinds[idemcheck.LateDuplicateEffect], "found %v", kinds)
}

// workerLandings are the landings of the database faults that met a
// background worker's write: those of the rounds whose first attempt was
// answered accepted before the fault acted.
func workerLandings(h *idemcheck.History, fault string) []idemcheck.Event {
	var out []idemcheck.Event
	for _, e := range h.Events {
		if e.Kind == idemcheck.FaultLanded && e.Fault == fault {
			out = append(out, e)
		}
	}
	return out
}

// Where effects land after the reply, the database faults reach the
// worker's write, which idemcheck tells from the handler's by the intent's
// marks its transaction carries. failed-attempt cuts the link after the
// worker's effect committed: a worker that commits its effect with its
// job's done mark leaves one order (PASS); one that marks the job done in
// a second transaction runs the job again and leaves two, caught though
// nothing in it fails on its own. The landings name the worker's
// connection, another than the handler's.
func TestWorkerFaultsThroughTheOwnedLink(t *testing.T) {
	ok := certifyWorker(t, nil, idemcheck.CheckFailedAttempt)
	for _, a := range ok.Report.Anomalies {
		t.Errorf("reference: %s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, ok.Report.Verdict)
	cuts := workerLandings(ok.History, "db-cut-after:nth=2")
	require.NotEmpty(t, cuts, "the worker's write was cut after its commit")
	handler := workerLandings(ok.History, "db-cut-after:nth=1")
	require.NotEmpty(t, handler, "the handler's write was cut after its commit")
	for _, c := range cuts {
		assert.NotZero(t, c.Conn, "the landing names its connection")
		assert.NotEqual(t, handler[0].Conn, c.Conn, "the worker writes on a connection of its own")
	}

	bad := certifyWorker(t, []string{"WORKER_EFFECT=apart"}, idemcheck.CheckFailedAttempt)
	assert.Equal(t, idemcheck.Fail, bad.Report.Verdict)
	assertSecondEffect(t, bad)
}

// crash-after-commit kills the target once the database has committed the
// worker's effect and before the worker learnt it: a worker that marks
// its job done in the effect's own transaction leaves one order after the
// restart (PASS); one that marks it apart runs the job again in the
// restarted process and leaves two.
func TestWorkerKilledBetweenItsEffectAndItsJobsEnd(t *testing.T) {
	ok := certifyWorker(t, nil, idemcheck.CheckCrashAfterCommit)
	for _, a := range ok.Report.Anomalies {
		t.Errorf("reference: %s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	assert.Equal(t, idemcheck.Pass, ok.Report.Verdict)
	var worker int
	for _, evs := range events(ok.History, idemcheck.TargetKilled) {
		for _, e := range evs {
			if strings.Contains(e.Detail, "the worker's statement") {
				worker++
			}
		}
	}
	assert.NotZero(t, worker, "the target was killed at the worker's commit")

	bad := certifyWorker(t, []string{"WORKER_EFFECT=apart"}, idemcheck.CheckCrashAfterCommit)
	assert.Equal(t, idemcheck.Fail, bad.Report.Verdict)
	assertSecondEffect(t, bad)
}
