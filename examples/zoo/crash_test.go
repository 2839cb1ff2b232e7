package zoo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A correct service that dies whenever failed-attempt cuts its database
// link passes: each crash is a robustness finding apart from the verdict,
// and every retry after the restart replayed or executed once. Its twin
// that also keeps its keys in memory loses them with the process, and the
// retry after the restart executes again: FAIL.
func TestServicesThatDieOnADroppedLink(t *testing.T) {
	b := bins(t)
	var entries []zoo.Entry
	for _, e := range zoo.Entries() {
		if e.Flags == zoo.ExitOnDBError {
			entries = append(entries, e)
		}
	}
	require.Len(t, entries, 2, "a correct service and its buggy twin")
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			checks := []string{idemcheck.CheckFailedAttempt, idemcheck.CheckSequentialReplay}
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: checks, Options: zoo.Options(), DSN: pgtest.DSN(t)})
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			assert.True(t, row.Caught(), "%s: found %v, inconclusive %v", e.Name(), row.Found, row.Inconclusive)
			assert.Contains(t, row.Robustness[idemcheck.CheckFailedAttempt], idemcheck.TargetExitedFinding, "the crashes are reported")
			assert.NotEmpty(t, res.Report.TargetExits)
			if e.Reference() {
				assert.Equal(t, idemcheck.Pass, res.Report.Verdict)
			} else {
				assert.Equal(t, idemcheck.Fail, res.Report.Verdict)
			}
		})
	}
}
