package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
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
}
