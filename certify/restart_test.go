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
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// certifyRestart starts the orders binary with variant v as a process
// target and runs one check for rounds rounds, with the policy's lease
// set to lease (0: the policy names none).
func certifyRestart(t *testing.T, v orders.Variant, instances, rounds int, check string, lease bool) *certify.Result {
	t.Helper()
	return certifyWithLease(t, v, testLease, instances, rounds, check, lease)
}

// certifyWithLease is certifyRestart with the target's own lease given.
func certifyWithLease(t *testing.T, v orders.Variant, targetLease time.Duration, instances, rounds int, check string, lease bool) *certify.Result {
	t.Helper()
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command:   ordersBinary(t) + " -lease " + targetLease.String() + " -variant " + string(v),
		Instances: instances,
		DSN:       pgtest.DSN(t),
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	if lease {
		cfg.Policy.Lease = testLease
	}
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{check}
	cfg.Options.FaultRounds = rounds
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res
}

// roundsWith says which rounds had an intent with the anomaly kind.
func roundsWith(res *certify.Result, kind idemcheck.Kind) map[int]bool {
	rounds := map[string]int{}
	for _, in := range res.History.Intents {
		rounds[in.ID] = in.Round
	}
	out := map[int]bool{}
	for _, a := range res.Report.Anomalies {
		if a.Kind == kind {
			out[rounds[a.Intent]] = true
		}
	}
	return out
}

// events counts the history's events of one kind per intent.
func events(h *idemcheck.History, kind idemcheck.EventKind) map[string][]idemcheck.Event {
	out := map[string][]idemcheck.Event{}
	for _, e := range h.Events {
		if e.Kind == kind {
			out[e.Intent] = append(out[e.Intent], e)
		}
	}
	return out
}

// Each restart-class variant is caught by its check in the rounds whose
// mechanism reaches its bug, every time: no round depends on timing.
// restart-replay and in-flight-retry catch their variant in every round;
// crash-after-commit alternates the effect write it acts on (the claim,
// then the order's COMMIT), and the variant's window (after the order's
// COMMIT, before the key's UPDATE) is the one of the even rounds.
func TestRestartClassChecksCatchTheirVariantsInEveryRound(t *testing.T) {
	cases := []struct {
		v      orders.Variant
		rounds int
		// every: each round shows the anomaly; else each pair of rounds
		// (1-2, 3-4) does, one of the two landing windows holding the bug.
		every bool
	}{
		{orders.InMemoryKeyStore, 3, true},
		{orders.KeySavedAfterCommit, 4, false},
		{orders.CheckInTransaction, 3, true},
	}
	for _, c := range cases {
		t.Run(string(c.v), func(t *testing.T) {
			check, anomaly := orders.Expectation(c.v)
			res := certifyRestart(t, c.v, 1, c.rounds, check, true)
			got := roundsWith(res, idemcheck.Kind(anomaly))
			for r := 1; r <= c.rounds; r++ {
				if c.every {
					assert.True(t, got[r], "round %d of %s: no %s; found %v", r, check, anomaly, kindsOf(res.Report))
				} else if r%2 == 0 {
					assert.True(t, got[r-1] || got[r], "rounds %d-%d of %s: no %s; found %v", r-1, r, check, anomaly, kindsOf(res.Report))
				}
			}
			for _, a := range res.Report.Anomalies {
				assert.Equal(t, check, a.Check)
			}
			if check == idemcheck.CheckInFlightRetry {
				assert.Len(t, events(res.History, idemcheck.FaultLanded), c.rounds, "a landed hold per round")
			} else {
				assert.Len(t, events(res.History, idemcheck.TargetKilled), c.rounds, "a kill per round")
				assert.Len(t, events(res.History, idemcheck.TargetRestarted), c.rounds, "a restart per round")
			}
		})
	}
}

// The reference, on two instances as the zoo runs it, is clean on the
// restart class, and every kill and restart is in the history, tied to
// its intent; the killed attempt names its kill.
func TestReferenceIsCleanOnTheRestartClassWithEventsRecorded(t *testing.T) {
	for _, check := range []string{idemcheck.CheckRestartReplay, idemcheck.CheckCrashAfterCommit, idemcheck.CheckInFlightRetry, idemcheck.CheckCrashLease} {
		t.Run(check, func(t *testing.T) {
			res := certifyRestart(t, orders.Reference, 2, 2, check, true)
			afterEffect := 0
			for _, a := range res.Report.Anomalies {
				t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
			}
			require.Len(t, res.Report.Checks, 1)
			assert.Equal(t, idemcheck.Pass, res.Report.Checks[0].Status, res.Report.Checks[0].Reason)
			for _, o := range res.History.Observations {
				assert.EqualValues(t, 1, o.Effects, o.Intent)
			}
			killed := events(res.History, idemcheck.TargetKilled)
			restarted := events(res.History, idemcheck.TargetRestarted)
			for _, in := range res.History.Intents {
				if check == idemcheck.CheckInFlightRetry {
					assert.Empty(t, killed[in.ID])
					assert.Len(t, events(res.History, idemcheck.FaultLanded)[in.ID], 1, in.ID)
					continue
				}
				if check == idemcheck.CheckCrashLease && len(killed[in.ID]) == 0 {
					// The reference commits once per attempt: a second
					// COMMIT that round 2 waits for never comes, and the
					// history says so instead of recording a kill.
					assert.Equal(t, 2, in.Round)
					assert.Len(t, events(res.History, idemcheck.FaultMissed)[in.ID], 1)
					continue
				}
				require.Len(t, killed[in.ID], 1, "round %d", in.Round)
				require.Len(t, restarted[in.ID], 1, "round %d", in.Round)
				k := killed[in.ID][0]
				assert.Equal(t, check, k.Check)
				assert.Equal(t, in.Round, k.Round)
				assert.Equal(t, 1, k.Step)
				assert.NotEmpty(t, k.Detail)
				assert.False(t, restarted[in.ID][0].Time.Before(k.Time))
				var first idemcheck.Attempt
				for _, a := range res.History.Attempts {
					if a.Intent == in.ID && a.Step == 1 {
						first = a
					}
				}
				assert.Equal(t, k.Fault, first.Fault)
				switch check {
				case idemcheck.CheckRestartReplay:
					assert.Equal(t, scenarios.KillAfterReply, first.Fault)
					assert.Equal(t, 201, first.Status, "the intent completed before the kill")
				case idemcheck.CheckCrashAfterCommit:
					assert.Contains(t, first.Fault, scenarios.KillAfterCommit)
					assert.NotEqual(t, idemcheck.Replied, first.Outcome, "the reply never reached the client")
					assert.Contains(t, k.Detail, "effects counted right after the kill: ")
					switch k.Landing {
					case idemcheck.LandedReply:
						assert.Contains(t, k.Detail, "effects counted right after the kill: 1", "a held reply comes after the commit")
						afterEffect++
					case runner.LandedAfterCommit:
						// The claim's answer (no effect yet) or the order's
						// COMMIT's (the effect committed, unknown to the
						// target).
						if strings.Contains(k.Detail, "effects counted right after the kill: 1") {
							afterEffect++
						}
					}
				case idemcheck.CheckCrashLease:
					assert.Contains(t, first.Fault, scenarios.KillAtCommit)
				}
			}
			if check == idemcheck.CheckCrashAfterCommit {
				assert.Positive(t, afterEffect, "a round killed the target after its effect and before its reply")
			}
		})
	}
}

// A target without a lease is still put through the crash checks: a key
// left running by a killed attempt is reported as stuck, and the report
// says that the policy declares no lease.
func TestCrashChecksRunWithoutALease(t *testing.T) {
	// Two rounds: the first acts on the first effect write (the claim)
	// while the handler's writes are not counted yet, the second on its
	// last (the COMMIT), after which the claim stays in progress.
	res := certifyRestart(t, orders.NoLease, 1, 2, idemcheck.CheckCrashLease, false)
	require.Len(t, res.Report.Checks, 1)
	assert.NotEqual(t, idemcheck.Skip, res.Report.Checks[0].Status)
	// The key stays in progress after the crash: without a declared lease
	// that cannot be told from a long lease, so the check is inconclusive,
	// never a pass, and says why.
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, res.Report.Checks[0].Status)
	assert.Contains(t, res.Report.Checks[0].Reason, "declares no lease")
}

// lease-fencing against a target whose lease is longer than the one
// declared: its retries past the declared lease are told the key is in
// progress, none takes the key over, and the fence is never put to the
// test. The check is inconclusive and says so; with the lease declared
// right, the retry takes over and the reference's fence holds: a pass.
func TestLeaseFencingWithALongerLeaseThanDeclaredIsInconclusive(t *testing.T) {
	res := certifyWithLease(t, orders.Reference, 30*time.Second, 1, 1, idemcheck.CheckLeaseFencing, true)
	require.Len(t, res.Report.Checks, 1)
	c := res.Report.Checks[0]
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.Inconclusive, c.Status, c.Proof)
	assert.Contains(t, c.Reason, "told the key was still in progress (409)")

	res = certifyWithLease(t, orders.Reference, testLease, 1, 1, idemcheck.CheckLeaseFencing, true)
	c = res.Report.Checks[0]
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, idemcheck.Pass, c.Status, c.Reason)
}
