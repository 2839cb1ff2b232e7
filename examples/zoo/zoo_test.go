package zoo_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

var binDir string

func TestMain(m *testing.M) {
	pgtest.Main(m, func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	})
}

func bins(t *testing.T) *zoo.Bins {
	t.Helper()
	if binDir == "" {
		dir, err := os.MkdirTemp("", "idemcheck-zoo-test-")
		require.NoError(t, err)
		binDir = dir
	}
	root, err := zoo.ModuleRoot()
	require.NoError(t, err)
	b, err := zoo.Build(context.Background(), root, binDir)
	require.NoError(t, err)
	return b
}

// Every variant is caught by its expected check with its expected anomaly.
func TestEveryVariantIsCaught(t *testing.T) {
	b := bins(t)
	for _, e := range zoo.Entries() {
		if e.Reference() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			if e.App == "ordersmysql" {
				mysqltest.NeedBinary(t)
			}
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: []string{e.Check}, Options: zoo.Options(), DSN: pgtest.DSN(t)})
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			assert.True(t, row.Caught(), "%s: expected %s from %s, found %v", e.Name(), e.Anomaly, e.Check, row.Found)
		})
	}
}

// The references never cry wolf: 20 full certifications each, every
// check, zero anomalies.
func TestReferencesAreCleanOverTwentyCertifications(t *testing.T) {
	b := bins(t)
	o := zoo.Options()
	o.BurstRounds, o.Rounds, o.FaultRounds = 2, 1, 1
	for _, e := range zoo.Entries() {
		if !e.Reference() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			if e.App == "ordersmysql" {
				mysqltest.NeedBinary(t)
			}
			dsn := pgtest.DSN(t)
			for run := 1; run <= 20; run++ {
				res, err := b.Certify(context.Background(), e, zoo.Config{Options: o, DSN: dsn})
				require.NoError(t, err, "run %d", run)
				for _, a := range res.Report.Anomalies {
					t.Errorf("run %d: %s in %s: %s", run, a.Kind, a.Check, a.Explanation)
				}
				require.Positive(t, res.Report.Stats.Attempts, fmt.Sprint("run ", run))
			}
		})
	}
}
