package certify_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// workerProgram is testdata/worker: an orders API whose effect is written
// by a background worker on its own connection, after the reply.
var workerProgram = testbin.New("github.com/idemcheck/idemcheck/certify/testdata/worker")

// crash-after-commit against a target whose work a background worker
// does: the worker's slow COMMIT is let through with its answer held, the
// handler's reply is held first, and the target is killed before the
// database answered the worker. The answer never comes; dropping it once
// waited for ever, past the run's duration cap. Now every round ends,
// with the target killed and restarted, and the run returns.
func TestCrashAfterCommitOnABackgroundWorkerEnds(t *testing.T) {
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: workerProgram.Path(t), DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckCrashAfterCommit}
	cfg.Options.FaultRounds = 4
	cfg.MaxDuration = 2 * time.Minute
	type result struct {
		res *certify.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := certify.Run(ctx, cfg)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Len(t, r.res.Report.Checks, 1)
		t.Logf("%s: %s %s%s", r.res.Report.Checks[0].Name, r.res.Report.Checks[0].Status, r.res.Report.Checks[0].Proof, r.res.Report.Checks[0].Reason)
		require.NotEmpty(t, events(r.res.History, idemcheck.TargetKilled), "the target was killed")
	case <-time.After(cfg.MaxDuration + time.Minute):
		t.Fatalf("the run did not end within its duration cap of %v and a minute", cfg.MaxDuration)
	}
}

// The duration cap stops a run in the middle of the restart class, with
// the target killed and restarted or not: the run ends with the cap's
// error, not after its rounds.
func TestMaxDurationStopsTheRestartClass(t *testing.T) {
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: workerProgram.Path(t), DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{idemcheck.CheckCrashAfterCommit, idemcheck.CheckCrashLease, idemcheck.CheckInFlightRetry, idemcheck.CheckLeaseFencing, idemcheck.CheckRestartReplay}
	cfg.Options.FaultRounds = 50
	cfg.MaxDuration = 5 * time.Second
	done := make(chan error, 1)
	go func() {
		_, err := certify.Run(ctx, cfg)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		require.Contains(t, err.Error(), "duration cap")
	case <-time.After(cfg.MaxDuration + time.Minute):
		t.Fatalf("the run did not end within its duration cap of %v and a minute", cfg.MaxDuration)
	}
}
