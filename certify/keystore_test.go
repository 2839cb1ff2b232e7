package certify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// fileKeysProgram is testdata/filekeys: an orders API that claims its keys
// in a store apart from its database (files, where production uses Redis),
// inserts the order, then stores the reply under the key.
var fileKeysProgram = testbin.New("github.com/idemcheck/idemcheck/certify/testdata/filekeys")

// A key store the database link does not see still shows its window
// between the order's commit and the reply's save: crash-after-commit lets
// the order's write through, holds the database's answer to it, and kills
// the target there, so the claim outlives the order, expires with its
// lease, and the retry creates a second order. The write is a COMMIT or an
// autocommitted INSERT; the first round acts on it, the second (no second
// write comes) at the reply, which the target sends after saving it.
func TestCrashAfterCommitCatchesAKeyStoreOutsideTheDatabase(t *testing.T) {
	for _, mode := range []struct{ name, tx, sql string }{
		{"autocommit", "0", "INSERT"},
		{"transaction", "1", "commit"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
				Command: fileKeysProgram.Path(t), DSN: pgtest.DSN(t),
				Env: []string{"KEYS_DIR=" + t.TempDir(), "LEASE=" + testLease.String(), "TX=" + mode.tx},
			})
			require.NoError(t, err)
			defer pt.Close()
			cfg := ordersConfig(pt.URL, pt.DB.Pool)
			cfg.Policy.ReplayHeader, cfg.Policy.Lease = "", testLease
			cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
			cfg.Checks = []string{idemcheck.CheckCrashAfterCommit}
			cfg.Options.FaultRounds = 2
			res, err := certify.Run(ctx, cfg)
			require.NoError(t, err)

			require.Len(t, res.Report.Checks, 1)
			assert.Equal(t, idemcheck.Fail, res.Report.Checks[0].Status, res.Report.Checks[0].Reason)
			assert.Equal(t, map[int]bool{1: true}, roundsWith(res, idemcheck.Kind("duplicate-effect")), "found %v", kindsOf(res.Report))
			landings := map[int]idemcheck.Event{}
			rounds := map[string]int{}
			for _, in := range res.History.Intents {
				rounds[in.ID] = in.Round
			}
			for _, evs := range events(res.History, idemcheck.TargetKilled) {
				for _, e := range evs {
					landings[rounds[e.Intent]] = e
				}
			}
			require.Len(t, landings, 2, "a kill per round")
			first := landings[1]
			assert.Equal(t, runner.LandedAfterCommit, first.Landing)
			assert.True(t, strings.HasPrefix(strings.ToUpper(first.SQL), strings.ToUpper(mode.sql)), first.SQL)
			assert.Contains(t, first.Detail, "effects counted right after the kill: 1", "the order had committed when the target died")
			assert.Equal(t, idemcheck.LandedReply, landings[2].Landing, "no second write: the kill lands at the reply, after the reply was saved")
		})
	}
}
