package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/apikit"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// Certified by URL, as a user pointing idemcheck at a running service with
// its database: the reference is clean, with the checks that need a hold on
// its processes or links skipped, not inconclusive; a bug on the wire is
// caught; a bug that only a restart shows is not reachable, and says why.
func TestByURL(t *testing.T) {
	b := bins(t)
	ref, ok := zoo.Lookup("orders", string(orders.Reference))
	require.True(t, ok)
	res, err := b.Certify(context.Background(), ref, zoo.Config{Options: zoo.Options(), DSN: pgtest.DSN(t), ByURL: true})
	require.NoError(t, err)
	row := zoo.NewRow(ref, res.Report)
	assert.True(t, row.Caught(), "the reference by URL: found %v, inconclusive %v", row.Found, row.Inconclusive)
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict, "found %v, inconclusive %v", row.Found, row.Inconclusive)
	assert.Contains(t, row.Skipped, idemcheck.CheckRestartReplay, "a restart needs a hold on the process")
	assert.Contains(t, row.Skipped, idemcheck.CheckCrashAfterCommit, "a crash at commit needs a hold on the process and its link")
	for c, why := range row.Skipped {
		t.Logf("skipped %s: %s", c, why)
	}
	// The orders API says when it received each request: the timed
	// bursts' proof states how tightly they arrived, by its clock.
	for _, c := range res.Report.Checks {
		if c.Name == idemcheck.CheckConcurrentBurst {
			assert.Contains(t, c.Proof, "arrived at the target (its X-Received-At, by its own clock) within median")
		}
	}

	bug, ok := zoo.Lookup("orders", string(orders.CheckThenInsert))
	require.True(t, ok)
	res, err = b.Certify(context.Background(), bug, zoo.Config{Checks: []string{bug.Check}, Options: zoo.Options(), DSN: pgtest.DSN(t), ByURL: true})
	require.NoError(t, err)
	row = zoo.NewRow(bug, res.Report)
	assert.Empty(t, row.Unreachable())
	assert.True(t, row.Caught(), "check-then-insert by URL: found %v", row.Found)

	lost, ok := zoo.Lookup("orders", string(orders.InMemoryKeyStore))
	require.True(t, ok)
	res, err = b.Certify(context.Background(), lost, zoo.Config{Checks: []string{lost.Check}, Options: zoo.Options(), DSN: pgtest.DSN(t), ByURL: true})
	require.NoError(t, err)
	row = zoo.NewRow(lost, res.Report)
	assert.NotEmpty(t, row.Unreachable(), "a restart's bug by URL")
	assert.False(t, row.Caught())

	// failed-attempt applies by URL, on the failing body alone: a bug
	// that only a failure inside the server shows passes there, and the
	// report says what was not sent, so the zoo counts it out of reach.
	stuck, ok := zoo.Lookup("orders", string(orders.ClaimNeverReleased))
	require.True(t, ok)
	res, err = b.Certify(context.Background(), stuck, zoo.Config{Checks: []string{stuck.Check}, Options: zoo.Options(), DSN: pgtest.DSN(t), ByURL: true})
	require.NoError(t, err)
	row = zoo.NewRow(stuck, res.Report)
	require.Len(t, res.Report.Checks, 1)
	assert.Equal(t, idemcheck.Pass, res.Report.Checks[0].Status)
	assert.Contains(t, res.Report.Checks[0].Partial, "cut database link")
	assert.Contains(t, row.Unreachable(), "cut database link")
}

// A buggy variant's run is out of reach only when it missed the bug for
// want of what the bug needs (Entry.Needs); a run that caught it, or that
// had all it needed, is judged as usual.
func TestUnreachableIsForWantOfWhatTheBugNeeds(t *testing.T) {
	e := zoo.Entry{App: "orders", Variant: "v", Check: idemcheck.CheckFailedAttempt, Anomaly: string(idemcheck.StuckKey), Needs: apikit.NeedsLink}
	rep := func(partial string, kinds ...idemcheck.Kind) idemcheck.Report {
		r := idemcheck.Report{Checks: []idemcheck.CheckResult{{Name: e.Check, Status: idemcheck.Pass, Partial: partial}}}
		for i, k := range kinds {
			r.Anomalies = append(r.Anomalies, idemcheck.Anomaly{Kind: k, Check: e.Check})
			r.Checks[0].Anomalies = append(r.Checks[0].Anomalies, i)
			r.Checks[0].Status = idemcheck.Fail
		}
		return r
	}
	assert.Contains(t, zoo.NewRow(e, rep("no link")).Unreachable(), "no link")
	assert.Empty(t, zoo.NewRow(e, rep("no link", idemcheck.StuckKey)).Unreachable(), "caught all the same")
	assert.True(t, zoo.NewRow(e, rep("no link", idemcheck.StuckKey)).Caught())
	assert.Empty(t, zoo.NewRow(e, rep("")).Unreachable(), "it had the link: a miss")

	e.Needs = ""
	assert.Empty(t, zoo.NewRow(e, rep("no link")).Unreachable(), "the bug needs nothing the run lacked: a miss")

	e.Needs, e.Anomaly = apikit.NeedsProvider, string(idemcheck.ProviderDuplicateCharge)
	assert.Contains(t, zoo.NewRow(e, rep("")).Unreachable(), "payment provider")
	watched := rep("")
	watched.Checks[0].Provider = &idemcheck.ProviderTraffic{Calls: 2}
	assert.Empty(t, zoo.NewRow(e, watched).Unreachable(), "the double was watched: a miss")
}
