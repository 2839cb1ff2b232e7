package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/history"
)

// certify … --history - | check, as two processes joined by a real pipe,
// against the example orders API on loopback: standard output carries the
// history alone (the report goes to stderr), and check, given no file,
// reads the pipe and reaches the certification's verdict.
func TestCertifyPipesItsHistoryIntoCheck(t *testing.T) {
	for _, c := range []struct {
		name    string
		variant orders.Variant
		code    int
		verdict string
	}{
		{"reference", orders.Reference, idemcheck.ExitHeld, "verdict PASS"},
		{"check-then-insert", orders.CheckThenInsert, idemcheck.ExitAnomalies, "verdict FAIL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, dsn := ordersAPI(t, c.variant)
			self, err := os.Executable()
			require.NoError(t, err)
			certifyCmd := exec.Command(self, append([]string{subcommand}, certifyArgs(url, dsn, "--checks", "concurrent-burst,sequential-replay", "--history", "-")...)...)
			checkCmd := exec.Command(self, subcommand, "check", "--no-color")
			pipe, err := certifyCmd.StdoutPipe()
			require.NoError(t, err)
			checkCmd.Stdin = pipe
			var certErr, checkOut, checkErr bytes.Buffer
			certifyCmd.Stderr, checkCmd.Stdout, checkCmd.Stderr = &certErr, &checkOut, &checkErr
			require.NoError(t, certifyCmd.Start())
			require.NoError(t, checkCmd.Start())
			certifyErr := certifyCmd.Wait()
			checkErrRun := checkCmd.Wait()
			require.Equal(t, c.code, exitCode(certifyErr), "certify's stderr:\n%s", certErr.String())
			assert.Equal(t, c.code, exitCode(checkErrRun), "check's stdout:\n%s\nstderr:\n%s", checkOut.String(), checkErr.String())
			assert.Contains(t, certErr.String(), c.verdict, "certify's report went to stderr")
			assert.Contains(t, checkOut.String(), c.verdict)
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// check takes several files, a glob it expands itself, and - for standard
// input; each history is judged, the reports come one after another as a
// suite's do, a JSON report holds them all, and the exit code is the
// worst verdict's.
func TestCheckManyFilesGlobsAndStdin(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass.jsonl")
	fail := filepath.Join(dir, "fail.jsonl")
	copyFixture(t, "reference.jsonl", pass)
	copyFixture(t, "check-then-insert.jsonl", fail)

	code, out, errOut := cli(t, "check", "--no-color", pass)
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "verdict PASS"))

	// Two files: both judged, the worst verdict wins.
	js := filepath.Join(dir, "both.json")
	code, out, errOut = cli(t, "check", "--no-color", "--json", js, pass, fail)
	require.Equal(t, idemcheck.ExitAnomalies, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "verdict PASS"), out)
	assert.Equal(t, 1, strings.Count(out, "verdict FAIL"), out)
	var suite struct {
		Verdict idemcheck.Status   `json:"verdict"`
		Reports []idemcheck.Report `json:"reports"`
	}
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &suite))
	assert.Equal(t, idemcheck.Fail, suite.Verdict)
	assert.Len(t, suite.Reports, 2)

	// A glob the shell left alone: expanded here, in name order.
	code, out, _ = cli(t, "check", "--no-color", filepath.Join(dir, "*.jsonl"))
	assert.Equal(t, idemcheck.ExitAnomalies, code)
	assert.Less(t, strings.Index(out, "verdict FAIL"), strings.Index(out, "verdict PASS"), "fail.jsonl before pass.jsonl")

	// - reads standard input, beside a file.
	piped, err := os.ReadFile(pass)
	require.NoError(t, err)
	withStdin(t, string(piped))
	code, out, _ = cli(t, "check", "--no-color", fail, "-")
	assert.Equal(t, idemcheck.ExitAnomalies, code)
	assert.Equal(t, 1, strings.Count(out, "verdict PASS"), out)

	// Without a file, standard input (not a terminal here) is read.
	withStdin(t, string(piped))
	code, out, _ = cli(t, "check", "--no-color")
	assert.Equal(t, idemcheck.ExitHeld, code)
	assert.Contains(t, out, "verdict PASS")

	// Mistakes name what to fix, before any report is printed.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", pass, filepath.Join(dir, "nope.jsonl")}, "nope.jsonl"},
		{[]string{"check", filepath.Join(dir, "*.none")}, "matches no file"},
		{[]string{"check", dir}, "is a folder"},
		{[]string{"check", "-", "-"}, "named twice"},
	} {
		code, out, errOut := cli(t, c.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, c.want)
		assert.Empty(t, out, c.want)
		assert.Contains(t, errOut, c.want)
	}
	// A bad record names its input and line, standard input too.
	withStdin(t, "{\"run\":{}}\nnot json\n")
	code, _, errOut = cli(t, "check", "-")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "standard input:2:")
	// An input that is not a history asks whether it came from --history:
	// the library names the setting, the command says it as its flag.
	empty := filepath.Join(dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	headless := filepath.Join(dir, "headless.jsonl")
	require.NoError(t, os.WriteFile(headless, []byte(`{"attempt":{"id":1}}`+"\n"), 0o644))
	for file, want := range map[string]string{
		empty:    "idemcheck: check: " + empty + ": no run record: is this a history written by --history?\n",
		headless: "idemcheck: check: " + headless + ":1: a record before the first run record: is this a history written by --history?\n",
	} {
		code, _, errOut = cli(t, "check", file)
		assert.Equal(t, idemcheck.ExitUsage, code)
		assert.Equal(t, want, errOut)
	}
}

// Several histories in one stream (a suite's, or certify's piped one
// after another) are each judged.
func TestCheckSeveralHistoriesInOneStream(t *testing.T) {
	var buf bytes.Buffer
	for _, name := range []string{"reference.jsonl", "check-then-insert.jsonl", "reference.jsonl"} {
		f, err := os.Open(filepath.Join("..", "..", "assert", "testdata", name))
		require.NoError(t, err)
		hs, err := history.ReadAll(f, name)
		f.Close()
		require.NoError(t, err)
		require.NoError(t, history.Write(&buf, hs...))
	}
	withStdin(t, buf.String())
	code, out, _ := cli(t, "check", "--no-color", "-")
	assert.Equal(t, idemcheck.ExitAnomalies, code)
	assert.Equal(t, 2, strings.Count(out, "verdict PASS"), out)
	assert.Equal(t, 1, strings.Count(out, "verdict FAIL"), out)
}

// copyFixture copies one of assert's recorded histories.
func copyFixture(t *testing.T, name, to string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "assert", "testdata", name))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// A history cut to its first lines, or with its effect counts taken out,
// proves nothing of what it lacks: check says INCONCLUSIVE (exit 4),
// never PASS, where the whole history passes.
func TestCheckOnAHistoryMissingItsRecordsIsInconclusive(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "assert", "testdata", "reference.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	var noCounts []string
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"observation":`) {
			noCounts = append(noCounts, l)
		}
	}
	require.Less(t, len(noCounts), len(lines), "the fixture counted effects")
	dir := t.TempDir()
	for name, text := range map[string]string{
		"first-lines.jsonl": strings.Join(lines[:5], ""),
		"cut.jsonl":         strings.Join(lines[:len(lines)/2], ""),
		"no-counts.jsonl":   strings.Join(noCounts, ""),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		code, out, errOut := cli(t, "check", "--no-color", p)
		assert.Equal(t, idemcheck.ExitInconclusive, code, "%s:\n%s%s", name, out, errOut)
		assert.NotContains(t, out, "verdict PASS", name)
		if name != "first-lines.jsonl" { // its lines hold no attempt: EMPTY
			assert.Contains(t, out, "verdict INCONCLUSIVE", name)
		}
	}
}
