package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// certifyCmdArgs certifies the orders example started by idemcheck itself,
// with extra flags for the example server and for certify.
func certifyCmdArgs(t *testing.T, serverFlags string, extra ...string) []string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	args := []string{"certify", "--cmd", self + " " + exampleServerCommand + " orders -lease 1s " + serverFlags,
		"--path", "/orders", "--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", pgtest.DSN(t), "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--replay-header", "Idempotent-Replayed", "--lease", "1s", "--fault-rounds", "1", "--rounds", "1",
		"--checks", "failed-attempt,sequential-replay", "--no-color"}
	return append(args, extra...)
}

// --target-log: the target's output goes to the file, which the report
// names; a target that dies on a cut database link says so in it, and the
// history holds the exit and the restart.
func TestCertifyTargetLog(t *testing.T) {
	dir := t.TempDir()
	logPath, jsonPath, histPath := filepath.Join(dir, "target.log"), filepath.Join(dir, "report.json"), filepath.Join(dir, "history.jsonl")
	code, out, errOut := cli(t, certifyCmdArgs(t, "-exit-on-db-error", "--target-log", logPath, "--json", jsonPath, "--history", histPath)...)
	require.NotContains(t, []int{idemcheck.ExitUsage, idemcheck.ExitUnavailable}, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "target output in "+logPath)

	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	// One round of each of failed-attempt's two halves: the link cut
	// before the effect write ran, and after it committed.
	assert.Equal(t, 2, strings.Count(string(b), "orders: database connection terminated unexpectedly"), "log:\n%s", b)
	assert.Contains(t, string(b), "#0] ", "lines are labelled with the instance")

	var rep struct {
		Target idemcheck.Target `json:"target"`
	}
	b, err = os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, logPath, rep.Target.Log)

	f, err := os.Open(histPath)
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, histPath)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	var kinds []idemcheck.EventKind
	for _, e := range hs[0].Events {
		if e.Kind == idemcheck.TargetExited || e.Kind == idemcheck.TargetRestarted {
			kinds = append(kinds, e.Kind)
		}
	}
	assert.Equal(t, []idemcheck.EventKind{idemcheck.TargetExited, idemcheck.TargetRestarted, idemcheck.TargetExited, idemcheck.TargetRestarted}, kinds)
}

// Without --target-log the output goes to a temporary file, in a folder
// of the run's own, that is kept, and named, only when the target died on
// its own.
func TestCertifyTargetLogDefault(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	code, out, errOut := cli(t, certifyCmdArgs(t, "")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	left, err := filepath.Glob(filepath.Join(tmp, "*"))
	require.NoError(t, err)
	assert.Empty(t, left, "a target that lived leaves no log, and no folder, behind")
	assert.NotContains(t, out, "target output in")
	assert.NotContains(t, errOut, "the target's output is in")

	code, out, errOut = cli(t, certifyCmdArgs(t, "-exit-on-db-error")...)
	require.NotContains(t, []int{idemcheck.ExitUsage, idemcheck.ExitUnavailable}, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	left, err = filepath.Glob(filepath.Join(tmp, "idemcheck-run-*", "idemcheck-target-*.log"))
	require.NoError(t, err)
	require.Len(t, left, 1, "the log of a target that died is kept, in its run's folder")
	assert.Contains(t, out, "target output in "+left[0])
	assert.Contains(t, errOut, "idemcheck: the target's output is in "+left[0])
	b, err := os.ReadFile(left[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), "orders: database connection terminated unexpectedly")
}

func TestTargetLogNeedsAStartedTarget(t *testing.T) {
	code, _, errOut := cli(t, "certify", "--url", "http://127.0.0.1:1", "--target-log", filepath.Join(t.TempDir(), "x.log"))
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--target-log goes with --cmd or --image")
}

// A suite's target.log is where its started target's output goes, and the
// report names it.
func TestRunSuiteTargetLog(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("DATABASE_URL", "")
	t.Setenv("SELF", self)
	logPath := filepath.Join(t.TempDir(), "target.log")
	p := suiteFile(t, "  cmd: ${SELF} "+exampleServerCommand+" orders -lease 1s\n  log: "+logPath)
	code, out, errOut := cli(t, "run", "-f", p, "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "target output in "+logPath)
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), exampleServerCommand+" orders: stopped", "the log holds the target's own output, to its end")
}
