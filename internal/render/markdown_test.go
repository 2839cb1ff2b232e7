package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func markdown(t *testing.T, rs []idemcheck.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, rs))
	return b.String()
}

func TestMarkdownGolden(t *testing.T) {
	golden(t, "markdown.golden", []byte(markdown(t, fixtures())))
}

func TestMarkdownVerdictHeading(t *testing.T) {
	rs := fixtures()
	assert.True(t, strings.HasPrefix(markdown(t, rs), "## ❌ idemcheck: FAIL\n"), "one failed report fails the whole")
	assert.True(t, strings.HasPrefix(markdown(t, rs[:1]), "## ✅ idemcheck: PASS\n"))
	assert.True(t, strings.HasPrefix(markdown(t, nil), "## idemcheck: nothing certified\n"))

	for v, want := range map[idemcheck.Status]string{idemcheck.Pass: "✅ PASS", idemcheck.Fail: "❌ FAIL",
		idemcheck.Inconclusive: "⚠️ INCONCLUSIVE", idemcheck.NoAnswers: "⚠️ NO ANSWERS", idemcheck.AllSkipped: "⚠️ ALL SKIPPED",
		idemcheck.Empty: "⚠️ EMPTY"} {
		icon, words := verdictMark(v)
		assert.Equal(t, want, icon+" "+words, v)
	}
}

// unescaped matches a pipe that splits a GitHub table cell.
var unescaped = regexp.MustCompile(`(^|[^\\])\|`)

func TestMarkdownTableRowsKeepFiveColumns(t *testing.T) {
	rs := fixtures()
	rs[1].Checks[2].Reason = "a | b || c \\| d"
	rows := 0
	for _, line := range strings.Split(markdown(t, rs), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		rows++
		assert.Len(t, unescaped.FindAllString(line, -1), 6, "five cells: %q", line)
	}
	assert.Equal(t, 2+2+3, rows, "a header row per table, and a row per check (2 and 3)")
}

func TestMarkdownEscapesContent(t *testing.T) {
	rs := fixtures()
	rs[1].Anomalies[0].Intent = "ic-`odd`-1"
	rs[1].Anomalies[0].Explanation = "- starts like a list, has *stars*, $1 and $2, <b>tags</b> and `ticks`"
	md := markdown(t, rs)
	assert.Contains(t, md, "intent ``ic-`odd`-1``", "a code span's fence outgrows the backticks inside")
	assert.Contains(t, md, `: - starts like a list, has \*stars\*, \$1 and \$2, \<b\>tags\</b\> and \`+"`ticks\\`")
	// The hostile body has a run of three backticks, so its fence has four
	// and the block cannot be closed from inside.
	assert.Contains(t, md, "\n````text\n")
	assert.Contains(t, md, "```fence")
	assert.NotRegexp(t, "[\x00-\x08\x0b-\x1f\x7f]", md, "no control characters reach the page")
	assert.Contains(t, md, `a\x00b\x1b[31mred\xff`)
}

func TestMarkdownShowsAtMostFiveAnomaliesPerCheck(t *testing.T) {
	r := fixtures()[1]
	base := r.Anomalies[0]
	r.Anomalies, r.Checks[0].Anomalies = nil, nil
	for i := range 7 {
		a := base
		a.Intent = fmt.Sprintf("ic-cap-%d", i+1)
		r.Anomalies = append(r.Anomalies, a)
		r.Checks[0].Anomalies = append(r.Checks[0].Anomalies, i)
	}
	md := markdown(t, []idemcheck.Report{r})
	assert.Equal(t, 5, strings.Count(md, "**duplicate-effect**, intent "))
	assert.Contains(t, md, "ic-cap-5")
	assert.NotContains(t, md, "ic-cap-6")
	assert.Contains(t, md, "…and 2 more in concurrent-burst; the JSON report has them all.")
	assert.Contains(t, md, "#### concurrent-burst: 7 anomalies (duplicate-effect x7)")
}

func TestMarkdownCapsEvidence(t *testing.T) {
	r := fixtures()[1]
	a := &r.Anomalies[1]
	a.Evidence, a.Attempts = nil, nil
	for i := range MarkdownMaxEvidence + 3 {
		a.Evidence = append(a.Evidence, idemcheck.Evidence{Attempt: 100 + i, Step: 1, Status: 201, Body: strings.Repeat("x", 1000)})
		a.Attempts = append(a.Attempts, 100+i)
	}
	md := markdown(t, []idemcheck.Report{r})
	assert.Contains(t, md, fmt.Sprintf("Attempt %d (step 1)", 100+MarkdownMaxEvidence-1))
	assert.NotContains(t, md, fmt.Sprintf("Attempt %d (step 1)", 100+MarkdownMaxEvidence))
	assert.Contains(t, md, "… 3 more witnesses")
	assert.Contains(t, md, strings.Repeat("x", MarkdownBodyMax)+"… (800 bytes more)")
}

func TestAppendGitHubSummary(t *testing.T) {
	rs := fixtures()
	var b strings.Builder
	require.NoError(t, writeMarkdown(&b, rs, summaryLead(rs, "", os.Getenv)))
	md := b.String()
	assert.Contains(t, md, "**Key numbers:**")
	path := filepath.Join(t.TempDir(), "summary.md")

	t.Run("appends after another step's summary", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, []byte("build ok"), 0o644))
		t.Setenv(GitHubSummaryEnv, path)
		require.NoError(t, AppendGitHubSummary(rs, ""))
		require.NoError(t, AppendGitHubSummary(rs, ""))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "build ok\n"+md+"\n"+md, string(b))
	})

	t.Run("creates the file", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "new.md")
		t.Setenv(GitHubSummaryEnv, fresh)
		require.NoError(t, AppendGitHubSummary(rs, ""))
		b, err := os.ReadFile(fresh)
		require.NoError(t, err)
		assert.Equal(t, md, string(b))
	})

	t.Run("does nothing outside GitHub Actions", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		t.Setenv(GitHubSummaryEnv, "")
		require.NoError(t, AppendGitHubSummary(rs, ""))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries)
	})

	t.Run("names the variable when the file cannot be written", func(t *testing.T) {
		t.Setenv(GitHubSummaryEnv, filepath.Join(t.TempDir(), "missing", "summary.md"))
		assert.ErrorContains(t, AppendGitHubSummary(rs, ""), "$GITHUB_STEP_SUMMARY")
	})

	t.Run("appends nothing for a bad report", func(t *testing.T) {
		bad := fixtures()
		bad[1].Checks[0].Anomalies = []int{9}
		fresh := filepath.Join(t.TempDir(), "bad.md")
		t.Setenv(GitHubSummaryEnv, fresh)
		require.Error(t, AppendGitHubSummary(bad, ""))
		assert.NoFileExists(t, fresh)
	})
}

// The contract section says, for each rule judged, what its verdict rests
// on; a report without a database names the read-back it counted with.
func TestMarkdownContractStatesTheBasis(t *testing.T) {
	r := fixtures()[0]
	r.Target.Database = ""
	r.Target.ReadBack = "GET /orders?customerId={{intent}} (count at /data)"
	r.Contract = []idemcheck.RuleResult{
		{Check: "sequential-replay", Status: idemcheck.RuleHeld, Basis: "the wire and effect counts read back through the API (HTTP GET)"},
		{Check: "missing-key", Status: idemcheck.RuleBroken, Basis: "the wire alone"},
		{Check: "crash-lease", Status: idemcheck.RuleNotChecked, Reason: "needs a target idemcheck starts"},
	}
	md := markdown(t, []idemcheck.Report{r})
	assert.Contains(t, md, "effects read back through the API with `GET /orders?customerId={{intent}} (count at /data)`")
	assert.Contains(t, md, "| sequential-replay | held | the wire and effect counts read back through the API (HTTP GET) |")
	assert.Contains(t, md, "| missing-key | broken | the wire alone |")
	assert.Contains(t, md, "Not checked (the JSON report says why): crash-lease.")
	assert.NotContains(t, md, "| crash-lease |")
}

// A job summary leads with the key numbers, and a line that says where the
// HTML report is: in the run's artefacts, linked, when the runner says
// which run this is.
func TestGitHubSummaryLead(t *testing.T) {
	rs := fixtures()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	var checks, held, broken int
	for _, r := range rs {
		for _, ch := range r.Checks {
			checks++
			switch ch.Status {
			case idemcheck.Pass:
				held++
			case idemcheck.Fail:
				broken++
			}
		}
	}
	lead := summaryLead(rs, "", getenv)
	assert.Contains(t, lead, fmt.Sprintf("**Key numbers:** %d checks: %d held, %d broken,", checks, held, broken))
	assert.NotContains(t, lead, "HTML report")

	lead = summaryLead(rs, "reports/idemcheck.html", getenv)
	assert.Contains(t, lead, "**HTML report:** `reports/idemcheck.html`")
	assert.NotContains(t, lead, "](")

	env["GITHUB_SERVER_URL"], env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = "https://github.com", "acme/api", "1234"
	lead = summaryLead(rs, "reports/idemcheck.html", getenv)
	assert.Contains(t, lead, "[this run's artefacts](https://github.com/acme/api/actions/runs/1234#artifacts)")
}
