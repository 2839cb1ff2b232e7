package certify_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
)

// faultLandings checks that every attempt sent through a database fault
// has a FaultLanded event for its intent, and that no fault was missed,
// and returns the landings of check by kind, then SQL.
func faultLandings(t *testing.T, h *idemcheck.History, check string) map[string][]string {
	t.Helper()
	landed := map[string]bool{}
	byKind := map[string][]string{}
	for _, ev := range h.Events {
		if ev.Check != check || ev.Kind == idemcheck.TargetKilled || ev.Kind == idemcheck.TargetRestarted || ev.Kind == idemcheck.HoldReleased {
			continue // the kills and restarts of crash-lease, lease-fencing's releases
		}
		require.Equal(t, idemcheck.FaultLanded, ev.Kind, "%s: %s", check, ev.Detail)
		assert.NotEmpty(t, ev.SQL)
		assert.LessOrEqual(t, len(ev.SQL), 203, "clipped")
		assert.Contains(t, ev.Fault, "db-")
		landed[ev.Intent] = true
		byKind[ev.Landing] = append(byKind[ev.Landing], ev.SQL)
	}
	faulted := 0
	for _, a := range h.Attempts {
		if a.Check == check && strings.Contains(a.Fault, "db-") {
			faulted++
			assert.True(t, landed[a.Intent], "%s: attempt %d went through %s and its intent has no landing", check, a.ID, a.Fault)
		}
	}
	require.Positive(t, faulted, "%s sent nothing through a database fault", check)
	return byKind
}

// A handler that autocommits (the orders API with -autocommit: a claim and
// a work statement, each committing on its own, no BEGIN or COMMIT on the
// wire) still meets its faults: failed-attempt's cuts and crash-lease's
// holds land on its writes, each round on another one (the claim, then the
// work), and the history says so. The API is correct: no anomaly.
func TestFaultsLandOnAnAutocommittingTarget(t *testing.T) {
	res := certifyOrders(t, "-autocommit", 1, idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	for _, check := range []string{idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease} {
		byKind := faultLandings(t, res.History, check)
		assert.Empty(t, byKind[idemcheck.LandedCommit], "%s: this target sends no COMMIT", check)
		sqls := strings.Join(byKind[idemcheck.LandedAutocommitWrite], "\n")
		assert.Contains(t, sqls, "INSERT INTO idempotency_keys", "%s: the claim", check)
		assert.Contains(t, sqls, "UPDATE idempotency_keys", "%s: the work", check)
	}
}

// lease-fencing freezes an attempt at the BEGIN of its work transaction; a
// handler that autocommits has none, so, once a clean attempt showed that
// its last write commits on its own, the attempt is frozen at that write,
// its work's, past the lease, never left unfrozen for want of a BEGIN. The
// write is frozen where it commits (the Sync that ends its implicit
// transaction): it has run, and holds its row locks. The autocommitting
// orders API's work and its takeover both update the key's row, so the
// retry waits on the frozen owner's lock and replays the owner's order
// once it resumes: no takeover, no fence put to the test, and the check
// says so, never a pass.
func TestLeaseFencingFreezesAnAutocommittingTargetAtItsWork(t *testing.T) {
	res := certifyOrders(t, "-autocommit", 1, idemcheck.CheckSequentialReplay, idemcheck.CheckLeaseFencing)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	for _, c := range res.Report.Checks {
		if c.Name == idemcheck.CheckLeaseFencing {
			assert.Equal(t, idemcheck.Inconclusive, c.Status, "%s", c.Proof)
			assert.Contains(t, c.Reason, "instead of taking the key over")
		}
	}
	byKind := faultLandings(t, res.History, idemcheck.CheckLeaseFencing)
	require.NotEmpty(t, byKind[idemcheck.LandedAutocommitWrite], "%v", byKind)
	for _, sql := range byKind[idemcheck.LandedAutocommitWrite] {
		assert.Contains(t, sql, "UPDATE idempotency_keys", "frozen at the work, after the claim")
	}
}

// The reference claims its key with an autocommitted INSERT and commits its
// work in a transaction: its rounds land on both, and the work's INSERT
// inside the transaction is never taken for an effect write.
func TestFaultsLandOnTheReferencesClaimAndCommit(t *testing.T) {
	res := certifyOrders(t, "", 1, idemcheck.CheckCrashLease)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	byKind := faultLandings(t, res.History, idemcheck.CheckCrashLease)
	require.Len(t, byKind[idemcheck.LandedCommit], 1, "%v", byKind)
	assert.Equal(t, "commit", byKind[idemcheck.LandedCommit][0])
	require.Len(t, byKind[idemcheck.LandedAutocommitWrite], 1, "%v", byKind)
	assert.Contains(t, byKind[idemcheck.LandedAutocommitWrite][0], "INSERT INTO idempotency_keys")
}

// A request the target rejects before it touches its database (a negative
// total: 400) sends no effect write, so failed-attempt's cut and
// crash-lease's hold never act: each faulted intent gets a FaultMissed
// saying what the fault waited for, never a FaultLanded.
func TestFaultsThatNeverActAreRecordedAsMissed(t *testing.T) {
	res := certifyOrdersWith(t, "", 1, func(c *certify.Config) {
		c.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":-1}`)
		c.Endpoint.FailingBody = nil
	}, idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease)
	missed := map[string]map[string]bool{}
	for _, ev := range res.History.Events {
		if ev.Kind == idemcheck.TargetKilled || ev.Kind == idemcheck.TargetRestarted {
			t.Errorf("nothing was held, so nothing is killed: %+v", ev)
			continue
		}
		require.Equal(t, idemcheck.FaultMissed, ev.Kind, "%+v", ev)
		assert.Contains(t, ev.Detail, "the target sent no COMMIT and no autocommitted write while the attempt ran")
		assert.Empty(t, ev.Landing)
		if missed[ev.Check] == nil {
			missed[ev.Check] = map[string]bool{}
		}
		missed[ev.Check][ev.Intent] = true
	}
	for _, a := range res.History.Attempts {
		if strings.Contains(a.Fault, "db-") {
			assert.Equal(t, 400, a.Status)
			assert.True(t, missed[a.Check][a.Intent], "attempt %d (%s) has no FaultMissed", a.ID, a.Check)
		}
	}
	assert.Len(t, missed[idemcheck.CheckFailedAttempt], 4, "two rounds of each half: the cut before the write and the cut after it")
	assert.Len(t, missed[idemcheck.CheckCrashLease], 2)
}
