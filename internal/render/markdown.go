package render

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Limits that keep a Markdown summary readable on a pull request page (a
// GitHub job summary also has a size cap); the JSON report holds the rest.
const (
	// MarkdownMaxAnomalies is how many anomalies a failed check shows.
	MarkdownMaxAnomalies = 5
	// MarkdownMaxEvidence is how many witnessing attempts an anomaly shows.
	MarkdownMaxEvidence = 8
	// MarkdownBodyMax is how much of a reply body an evidence line shows.
	MarkdownBodyMax = 200
)

// WriteMarkdown writes a GitHub-flavoured Markdown summary of reports: a
// heading with the overall verdict, a table of checks per report, and for
// each failed check its anomalies (at most MarkdownMaxAnomalies) with their
// explanation and evidence. Text from the target (bodies, errors, reasons)
// is escaped, so it can neither break the table nor become markup.
//
// Nothing is written when a report is inconsistent (an anomaly index out
// of range, an unknown status).
func WriteMarkdown(w io.Writer, reports []idemcheck.Report) error {
	return writeMarkdown(w, reports, "")
}

// writeMarkdown is WriteMarkdown with lead, when not empty, as a paragraph
// after the counts.
func writeMarkdown(w io.Writer, reports []idemcheck.Report, lead string) error {
	var b strings.Builder
	failed, passed, anomalies, attempts := 0, 0, 0, 0
	worst := idemcheck.Pass
	for _, r := range reports {
		switch r.Verdict {
		case idemcheck.Fail:
			failed++
		case idemcheck.Pass:
			passed++
		}
		worst = idemcheck.WorstVerdict(worst, r.Verdict)
		anomalies += len(r.Anomalies)
		attempts += r.Stats.Attempts
	}
	if len(reports) == 0 {
		b.WriteString("## idemcheck: nothing certified\n")
	} else {
		icon, words := verdictMark(worst)
		fmt.Fprintf(&b, "## %s idemcheck: %s\n", icon, words)
	}
	if len(reports) > 0 {
		nothing := ""
		if n := len(reports) - failed - passed; n > 0 {
			nothing = fmt.Sprintf(", %d proved nothing either way", n)
		}
		fmt.Fprintf(&b, "\n%s: %d failed, %d passed%s; %s in %s.\n",
			plural(len(reports), "certification", "certifications"), failed, passed, nothing,
			plural(anomalies, "anomaly", "anomalies"), plural(attempts, "attempt", "attempts"))
	}
	if lead != "" {
		b.WriteString("\n" + lead + "\n")
	}
	for _, r := range reports {
		if err := markdownReport(&b, r); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "status unknown"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// verdictMark is a verdict's icon and words in a heading.
// The words are the verdict's own, in capitals: "no-answers" is NO ANSWERS.
func verdictMark(v idemcheck.Status) (string, string) {
	words := strings.ToUpper(strings.ReplaceAll(string(v), "-", " "))
	switch v {
	case idemcheck.Pass:
		return "✅", words
	case idemcheck.Fail:
		return "❌", words
	}
	return "⚠️", words
}

func markdownReport(b *strings.Builder, r idemcheck.Report) error {
	icon, verdict := verdictMark(r.Verdict)
	fmt.Fprintf(b, "\n### %s %s: %s\n\n", icon, escapeInline(oneLine(suiteName(r), 200)), verdict)
	var facts []string
	if r.Target.Name != "" {
		facts = append(facts, codeSpan(oneLine(r.Target.Method+" "+targetURL(r.Target), 200)))
	}
	if r.Target.Database != "" {
		facts = append(facts, "effects counted in "+codeSpan(oneLine(r.Target.Database, 200)))
	} else if r.Target.ReadBack != "" {
		facts = append(facts, "no database: effects read back through the API with "+codeSpan(oneLine(r.Target.ReadBack, 200)))
	} else {
		facts = append(facts, "no database: judged from the wire alone")
	}
	facts = append(facts, fmt.Sprintf("%s in %ss", plural(r.Stats.Attempts, "attempt", "attempts"), seconds(float64(max(r.Stats.DurationMS, 0)))))
	if !r.StartedAt.IsZero() {
		facts = append(facts, "started "+r.StartedAt.UTC().Format(time.RFC3339))
	}
	if t := r.Tool.String(); t != "" {
		facts = append(facts, escapeInline(oneLine(t, 200)))
	}
	b.WriteString(strings.Join(facts, " · ") + "\n\n")

	b.WriteString("| check | status | intents | attempts | anomalies |\n|---|---|--:|--:|--:|\n")
	type failure struct {
		check string
		as    []idemcheck.Anomaly
	}
	var failures []failure
	for _, ch := range r.Checks {
		if err := checkStatus(r, ch); err != nil {
			return err
		}
		as, err := checkAnomalies(r, ch)
		if err != nil {
			return err
		}
		status := "✅ pass"
		switch ch.Status {
		case idemcheck.Fail:
			status = "❌ fail"
			failures = append(failures, failure{ch.Name, as})
		case idemcheck.Skip:
			status = "⏭️ skip"
		case idemcheck.Inconclusive:
			status = "⚠️ inconclusive"
		}
		if ch.Reason != "" {
			status += ": " + escapeInline(oneLine(ch.Reason, 300))
		}
		if ch.Partial != "" && ch.Status != idemcheck.Skip {
			status += "; not sent: " + escapeInline(oneLine(ch.Partial, 300))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d |\n", escapeInline(oneLine(ch.Name, 100)), status, ch.Intents, ch.Attempts, len(as))
	}

	markdownContract(b, r.Contract)

	for _, e := range r.TargetExits {
		if e.Kind == idemcheck.TargetUnrecovered {
			fmt.Fprintf(b, "\n**target did not recover from a cut database link** during %s, round %d: %s\n",
				escapeInline(oneLine(e.Check, 100)), e.Round, escapeInline(oneLine(e.Detail, 600)))
			continue
		}
		fmt.Fprintf(b, "\n**target exited** (%s) during %s, round %d, step %d", escapeInline(oneLine(orUnknown(e.ExitStatus), 100)),
			escapeInline(oneLine(e.Check, 100)), e.Round, e.Step)
		if e.Fault != "" {
			fmt.Fprintf(b, ", after %s", codeSpan(oneLine(e.Fault, 200)))
		}
		b.WriteString("\n")
		if tail := strings.TrimRight(e.LogTail, "\n"); tail != "" {
			fence := "```"
			for strings.Contains(tail, fence) {
				fence += "`"
			}
			fmt.Fprintf(b, "\n%stext\n%s\n%s\n", fence, clip(tail, 2048), fence)
		}
	}

	markdownRemarks(b, r.Remarks)

	for _, f := range failures {
		fmt.Fprintf(b, "\n#### %s: %s", escapeInline(oneLine(f.check, 100)), plural(len(f.as), "anomaly", "anomalies"))
		if len(f.as) > 0 {
			fmt.Fprintf(b, " (%s)", escapeInline(kindSummary(f.as)))
		}
		b.WriteString("\n")
		for i, a := range f.as {
			if i == MarkdownMaxAnomalies {
				fmt.Fprintf(b, "\n…and %d more in %s; the JSON report has them all.\n", len(f.as)-i, escapeInline(oneLine(f.check, 100)))
				break
			}
			markdownAnomaly(b, a)
		}
	}
	return nil
}

// markdownRemarks states the findings apart from the verdict, each class
// under its own heading.
func markdownRemarks(b *strings.Builder, remarks []idemcheck.Anomaly) {
	for _, class := range []idemcheck.FindingClass{idemcheck.ConformanceFinding, idemcheck.RobustnessFinding} {
		var of []idemcheck.Anomaly
		for _, a := range remarks {
			if a.Finding() == class {
				of = append(of, a)
			}
		}
		if len(of) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n#### %s (%s)\n\nApart from the verdict: %s.\n", ClassHeading(class, len(of)), escapeInline(kindSummary(of)), escapeInline(ClassNote(class)))
		for i, a := range of {
			if i == MarkdownMaxAnomalies {
				fmt.Fprintf(b, "\n…and %d more; the JSON report has them all.\n", len(of)-i)
				break
			}
			markdownAnomaly(b, a)
		}
	}
}

// markdownContract states, for each contract rule the run judged, its
// status and what the verdict rests on (the wire alone, effect counts read
// back through the API, or the database's), so the report can go to a
// review as it is; the rules it did not judge are named after.
func markdownContract(b *strings.Builder, rules []idemcheck.RuleResult) {
	var judged []idemcheck.RuleResult
	var unchecked []string
	for _, rr := range rules {
		if rr.Status == idemcheck.RuleNotChecked {
			unchecked = append(unchecked, rr.Check)
			continue
		}
		judged = append(judged, rr)
	}
	if len(judged) == 0 {
		return
	}
	fmt.Fprintf(b, "\n<details><summary>Contract: what each verdict rests on</summary>\n\n| rule | status | rests on |\n|---|---|---|\n")
	for _, rr := range judged {
		fmt.Fprintf(b, "| %s | %s | %s |\n", escapeInline(oneLine(rr.Check, 100)), escapeInline(oneLine(rr.Status, 40)), escapeInline(oneLine(rr.Basis, 300)))
	}
	if len(unchecked) > 0 {
		fmt.Fprintf(b, "\nNot checked (the JSON report says why): %s.\n", escapeInline(oneLine(strings.Join(unchecked, ", "), 2000)))
	}
	b.WriteString("\n</details>\n")
}

func markdownAnomaly(b *strings.Builder, a idemcheck.Anomaly) {
	// The explanation follows the label on the same line, so whatever it
	// starts with ("-", "1.", "#") cannot open a block of its own.
	fmt.Fprintf(b, "\n**%s**, intent %s, key %s: %s\n",
		escapeInline(oneLine(string(a.Kind), 100)), codeSpan(oneLine(a.Intent, 200)), codeSpan(oneLine(a.Key, 200)),
		escapeInline(oneLine(a.Explanation, 4096)))
	var lines []string
	if o := observedLine(a.Observed); o != "" {
		lines = append(lines, oneLine(o, 1024))
	}
	for i, e := range a.Evidence {
		if i == MarkdownMaxEvidence {
			lines = append(lines, fmt.Sprintf("… %d more witnesses", len(a.Evidence)-i))
			break
		}
		lines = append(lines, evidenceLine(e, MarkdownBodyMax))
	}
	if len(a.Evidence) < len(a.Attempts) {
		lines = append(lines, "Witnesses: attempts "+ints(a.Attempts)+".")
	}
	for i, call := range a.Calls {
		if i == MarkdownMaxEvidence {
			lines = append(lines, fmt.Sprintf("… %d more provider calls", len(a.Calls)-i))
			break
		}
		lines = append(lines, callLine(call, MarkdownBodyMax))
	}
	if len(lines) == 0 {
		return
	}
	text := strings.Join(lines, "\n")
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	fmt.Fprintf(b, "\n%stext\n%s\n%s\n", fence, text, fence)
}

// mdSpecial are the characters that could turn text into Markdown markup,
// a table cell break (|) or, on GitHub, math ($); each is backslash-escaped.
var mdSpecial = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`,
	`|`, `\|`, `~`, `\~`, `&`, `\&`, `#`, `\#`, `$`, `\$`,
)

// escapeInline makes one line of text render as itself.
func escapeInline(s string) string { return mdSpecial.Replace(s) }

// codeSpan wraps one line in a code span whose backtick fence is longer
// than any backtick run inside it, as CommonMark requires; a pipe is still
// escaped, because a GitHub table splits cells on it even inside code.
func codeSpan(s string) string {
	if s == "" {
		return "(none)"
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + strings.ReplaceAll(s, "|", `\|`) + fence
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// GitHubSummaryEnv names the file a GitHub Actions step appends its job
// summary to.
const GitHubSummaryEnv = "GITHUB_STEP_SUMMARY"

// AppendGitHubSummary appends the Markdown summary of reports to the file
// named by $GITHUB_STEP_SUMMARY, creating it if missing, so a run inside
// GitHub Actions shows its verdict on the job's page. Outside GitHub
// Actions (the variable unset or empty) it does nothing. The summary is
// rendered before the file is opened, so a bad report appends nothing.
//
// The summary leads with the key numbers (the checks held, broken,
// inconclusive and skipped; the anomalies; the attempts and the time) and,
// when html names the HTML report the run wrote, a line that says where it
// is: the file, and the run's page whose artefacts hold it when the GitHub
// variables say which run this is.
func AppendGitHubSummary(reports []idemcheck.Report, html string) error {
	return AppendGitHubSummaryRedacted(reports, html, nil)
}

// AppendGitHubSummaryRedacted is AppendGitHubSummary with every secret red
// knows hidden in what it appends (nil hides nothing).
func AppendGitHubSummaryRedacted(reports []idemcheck.Report, html string, red *idemcheck.Redactor) error {
	path := os.Getenv(GitHubSummaryEnv)
	if path == "" {
		return nil
	}
	var b strings.Builder
	if err := writeMarkdown(&b, reports, summaryLead(reports, html, os.Getenv)); err != nil {
		return err
	}
	md := red.String(b.String())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("$%s: %w", GitHubSummaryEnv, err)
	}
	// Another step may have left its summary without a final newline; a
	// blank line keeps our heading from joining its last paragraph.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		md = "\n" + md
	}
	if _, err := io.WriteString(f, md); err != nil {
		f.Close()
		return fmt.Errorf("$%s: %w", GitHubSummaryEnv, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("$%s: %w", GitHubSummaryEnv, err)
	}
	return nil
}

// summaryLead is the key numbers of reports and the line naming the HTML
// report, for the top of a job summary.
func summaryLead(reports []idemcheck.Report, html string, getenv func(string) string) string {
	n := map[idemcheck.Status]int{}
	checks, anomalies, attempts := 0, 0, 0
	var ms int64
	for _, r := range reports {
		for _, ch := range r.Checks {
			n[ch.Status]++
			checks++
		}
		anomalies += len(r.Anomalies)
		attempts += r.Stats.Attempts
		ms += max(r.Stats.DurationMS, 0)
	}
	line := fmt.Sprintf("**Key numbers:** %s: %d held, %d broken, %d inconclusive, %d skipped · %s · %s",
		plural(checks, "check", "checks"), n[idemcheck.Pass], n[idemcheck.Fail], n[idemcheck.Inconclusive], n[idemcheck.Skip],
		plural(anomalies, "anomaly", "anomalies"), plural(attempts, "attempt", "attempts"))
	if ms > 0 {
		line += " in " + seconds(float64(ms)) + "s"
	}
	if html == "" {
		return line
	}
	line += "\n\n**HTML report:** " + codeSpan(oneLine(html, 300)) + ": the verdict, the contract, and each anomaly's attempts on a timeline"
	server, repo, run := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID")
	if server != "" && repo != "" && run != "" && isDigits(run) {
		line += fmt.Sprintf("; download it from [this run's artefacts](%s/%s/actions/runs/%s#artifacts)",
			strings.TrimSuffix(server, "/"), strings.ReplaceAll(repo, ")", "%29"), run)
	}
	return line + "."
}
