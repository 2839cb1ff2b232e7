package zoo_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// referenceRuns is how many times the references are certified: once in
// make test, which must stay short on a busy 2-core machine, and as many
// times as IDEMCHECK_ZOO_RUNS says otherwise. The 20-run matrix, the
// evidence that a reference never cries wolf, is `make zoo
// ZOO_FLAGS="-runs 20 -expected-only"` (docs/bug-classes.md).
func referenceRuns(t *testing.T) int {
	t.Helper()
	v := os.Getenv("IDEMCHECK_ZOO_RUNS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("IDEMCHECK_ZOO_RUNS=%q: give a whole number, 1 or more", v)
	}
	return n
}

// The references never cry wolf: full certifications, every check, zero
// anomalies (once each here; see referenceRuns).
func TestReferencesAreClean(t *testing.T) {
	b := bins(t)
	o := zoo.Options()
	o.BurstRounds, o.Rounds, o.FaultRounds = 2, 1, 1
	runs := referenceRuns(t)
	for _, e := range zoo.Entries() {
		// The flaky reference has its own test, with every check proven
		// as well (TestFlakyReferenceIsCleanUnderRedelivery), and so has
		// the signed reference under the presets other than
		// standard-webhooks (TestSignedConsumers).
		if !e.Reference() || e.Name() == "webhooks/flaky-reference" || e.Scheme != "" {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			// Side by side (as many as -parallel, the cores by default):
			// each reference is a target of its own on a database of its
			// own, as `make zoo`'s processes run side by side.
			t.Parallel()
			if e.App == "ordersmysql" {
				mysqltest.NeedBinary(t)
			}
			dsn := pgtest.DSN(t)
			for run := 1; run <= runs; run++ {
				res, err := b.Certify(context.Background(), e, zoo.Config{Options: o, DSN: dsn})
				require.NoError(t, err, "run %d", run)
				for _, a := range res.Report.Anomalies {
					if zoo.Robust(a.Kind) {
						continue // a crash of a correct service, reported apart
					}
					t.Errorf("run %d: %s in %s: %s", run, a.Kind, a.Check, a.Explanation)
				}
				require.Positive(t, res.Report.Stats.Attempts, fmt.Sprint("run ", run))
			}
		})
	}
}
