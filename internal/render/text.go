package render

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// MaxEvidence is how many witnessing attempts an anomaly shows; the JSON
// report has them all.
const MaxEvidence = 4

type palette struct{ red, green, yellow, bold, dim, reset string }

func colours(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{red: "\033[31m", green: "\033[32m", yellow: "\033[33m", bold: "\033[1m", dim: "\033[2m", reset: "\033[0m"}
}

// IsTerminal reports whether w is a terminal, where colour and a live
// progress line make sense.
func IsTerminal(w io.Writer) bool {
	// A writer that passes to another (idemcheck.RedactWriter) is a
	// terminal when that one is.
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Colour decides whether text written to w is coloured: never with
// noColour (--no-color) or NO_COLOR (https://no-color.org: set and not
// empty), always with FORCE_COLOR set to anything but empty, 0 or false (a
// CI log that renders colour), else only on a terminal. getenv is
// os.Getenv outside tests.
func Colour(noColour bool, w io.Writer, getenv func(string) string) bool {
	if noColour || getenv("NO_COLOR") != "" {
		return false
	}
	switch f := strings.ToLower(getenv("FORCE_COLOR")); f {
	case "", "0", "false":
	default:
		return true
	}
	return IsTerminal(w)
}

// WriteText renders r for a person at a terminal. With colour, statuses
// are coloured.
func WriteText(w io.Writer, r idemcheck.Report, colour bool) {
	c := colours(colour)
	t := r.Target
	name := t.Name
	if name == "" {
		name = t.URL
	}
	fmt.Fprintf(w, "%s%s%s  %s %s%s\n", c.bold, name, c.reset, t.Method, strings.TrimSuffix(t.URL, "/"), t.Path)
	if t.Database != "" {
		fmt.Fprintf(w, "  effects counted in %s\n", t.Database)
	} else if t.ReadBack != "" {
		fmt.Fprintf(w, "  no database: effects read back through the API with %s\n", t.ReadBack)
	} else {
		fmt.Fprintf(w, "  %sno database: effects not counted, judged from the wire alone%s\n", c.dim, c.reset)
	}
	if t.Insecure {
		fmt.Fprintf(w, "  insecure: the target's TLS certificate was not verified (--insecure)\n")
	}
	if t.Log != "" {
		fmt.Fprintf(w, "  target output in %s\n", t.Log)
	}
	if tool := r.Tool.String(); tool != "" && !r.StartedAt.IsZero() {
		fmt.Fprintf(w, "  %sstarted %s by %s%s\n", c.dim, r.StartedAt.UTC().Format(time.RFC3339), tool, c.reset)
	}
	for _, ch := range r.Checks {
		status := strings.ToUpper(string(ch.Status))
		col := c.green
		switch ch.Status {
		case idemcheck.Fail:
			col = c.red
		case idemcheck.Skip, idemcheck.Inconclusive:
			col = c.yellow
		}
		if ch.Status == idemcheck.Inconclusive {
			status = "INCONCL"
		}
		detail := fmt.Sprintf("%d intents, %d attempts", ch.Intents, ch.Attempts)
		if p := ch.Provider; p != nil {
			detail += fmt.Sprintf(", provider: %s calls per intent (max %d), %d charges", strconv.FormatFloat(p.CallsPerIntent, 'f', -1, 64), p.MaxCallsPerIntent, p.Charges)
		}
		if len(ch.Anomalies) > 0 {
			detail += fmt.Sprintf(", %d anomalies (%s)", len(ch.Anomalies), kindTally(r.Anomalies, ch.Anomalies))
		}
		if len(ch.Remarks) > 0 {
			detail += fmt.Sprintf(", %s apart from the verdict (%s)", plural(len(ch.Remarks), "remark", "remarks"), kindTally(r.Remarks, ch.Remarks))
		}
		if ch.Status == idemcheck.Skip || ch.Status == idemcheck.Inconclusive {
			detail = Printable(ch.Reason)
		}
		fmt.Fprintf(w, "  %s%-7s%s  %-18s %s\n", col, status, c.reset, ch.Name, detail)
		if ch.Status == idemcheck.Pass && ch.Proof != "" {
			fmt.Fprintf(w, "  %s%s%s\n", c.dim, indent(wrap(ch.Proof, 90), "           "), c.reset)
		}
		if ch.Partial != "" && ch.Status != idemcheck.Skip {
			fmt.Fprintf(w, "  %s%s%s\n", c.dim, indent(wrap("not sent: "+Printable(ch.Partial), 90), "           "), c.reset)
		}
	}
	writeFindings(w, r.Anomalies, c, true)
	if len(r.Anomalies) > 0 {
		fmt.Fprintf(w, "\n")
	}
	writeRemarks(w, r, c)
	writeExits(w, r, c)
	verdict := c.green + "PASS" + c.reset
	switch r.Verdict {
	case idemcheck.Fail:
		verdict = c.red + "FAIL" + c.reset
	case idemcheck.Pass:
	default:
		verdict = c.yellow + VerdictWords(r.Verdict) + c.reset
	}
	spread := ""
	if r.Stats.BurstSpreadMedianUS > 0 {
		spread = fmt.Sprintf(", client burst release spread %d us (median", r.Stats.BurstSpreadMedianUS)
		if r.Stats.BurstProtocol != "" {
			spread += ", " + r.Stats.BurstProtocol
		}
		spread += ")"
	}
	remarks := ""
	if len(r.Remarks) > 0 {
		remarks = fmt.Sprintf(" (and %s apart from it)", plural(len(r.Remarks), "remark", "remarks"))
	}
	fmt.Fprintf(w, "  verdict %s%s%s: %d anomalies%s, %d attempts in %.1fs%s\n",
		c.bold, verdict, c.bold+c.reset, len(r.Anomalies), remarks, r.Stats.Attempts, float64(r.Stats.DurationMS)/1000, spread)
}

// writeFindings shows findings: one of each kind and check in full, and
// the others of that kind in other intents named by intent, so a run
// with many bursts stays readable. A second finding in the same intent
// (two malformed keys accepted) is shown in full too: naming its intent
// again would hide it.
func writeFindings(w io.Writer, as []idemcheck.Anomaly, c palette, counted bool) {
	col := c.yellow
	if counted {
		col = c.red
	}
	type group struct {
		first  idemcheck.Anomaly
		others []string
	}
	var order []*group
	groups := map[string]*group{}
	for _, a := range as {
		k := a.Check + "\x00" + string(a.Kind)
		if g, ok := groups[k]; ok && g.first.Intent != a.Intent {
			if !slices.Contains(g.others, a.Intent) {
				g.others = append(g.others, a.Intent)
			}
			continue
		}
		g := &group{first: a}
		if _, ok := groups[k]; !ok {
			groups[k] = g
		}
		order = append(order, g)
	}
	for _, g := range order {
		a := g.first
		class := ""
		if a.Finding() == idemcheck.ConformanceFinding && counted {
			class = " (a conformance remark the policy requires)"
		}
		fmt.Fprintf(w, "\n  %s%s%s%s in %s, intent %s, key %s\n", col, a.Kind, c.reset, class, a.Check, a.Intent, a.Key)
		fmt.Fprintf(w, "%s\n", indent(wrap(a.Explanation, 96), "    "))
		for i, e := range a.Evidence {
			if i == MaxEvidence {
				fmt.Fprintf(w, "    %s… %d more witnesses: attempts %s%s\n", c.dim, len(a.Attempts)-MaxEvidence, intList(a.Attempts[MaxEvidence:], 12), c.reset)
				break
			}
			line := fmt.Sprintf("attempt %d (step %d): ", e.Attempt, e.Step)
			switch {
			case e.Error != "":
				line += "no reply: " + e.Error
			default:
				line += fmt.Sprintf("%d %s", e.Status, flatten(e.Body, 100))
			}
			if e.Replayed != "" {
				line += "  [replayed: " + e.Replayed + "]"
			}
			fmt.Fprintf(w, "    %s%s%s\n", c.dim, line, c.reset)
		}
		for i, call := range a.Calls {
			if i == MaxEvidence {
				fmt.Fprintf(w, "    %s… %d more provider calls%s\n", c.dim, len(a.Calls)-i, c.reset)
				break
			}
			fmt.Fprintf(w, "    %s%s%s\n", c.dim, callLine(call, 100), c.reset)
		}
		if len(g.others) > 0 {
			fmt.Fprintf(w, "    and in %s of %s: %s\n", plural(len(g.others), "more intent", "more intents"), a.Check, strList(g.others, 4))
		}
	}
}

// writeRemarks shows the findings apart from the verdict, each class
// under its own heading: conformance remarks the policy does not
// require, then robustness findings.
func writeRemarks(w io.Writer, r idemcheck.Report, c palette) {
	for _, class := range []idemcheck.FindingClass{idemcheck.ConformanceFinding, idemcheck.RobustnessFinding} {
		var of []idemcheck.Anomaly
		for _, a := range r.Remarks {
			if a.Finding() == class {
				of = append(of, a)
			}
		}
		if len(of) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s%s, apart from the verdict:%s %s\n", c.yellow, ClassHeading(class, len(of)), c.reset, ClassNote(class))
		writeFindings(w, of, c, false)
		fmt.Fprintln(w)
	}
}

// ClassHeading names a section of findings apart from the verdict:
// "1 conformance remark", "2 robustness findings".
func ClassHeading(class idemcheck.FindingClass, n int) string {
	if class == idemcheck.ConformanceFinding {
		return plural(n, "conformance remark", "conformance remarks")
	}
	return plural(n, string(class)+" finding", string(class)+" findings")
}

// ClassNote says why a class of findings leaves the verdict alone.
func ClassNote(class idemcheck.FindingClass) string {
	if class == idemcheck.ConformanceFinding {
		return "nothing was lost or duplicated, and the policy does not require key syntax (key_syntax: required in the policy makes these fail)"
	}
	return "how the target bore the faults idemcheck applied, not how it kept its keys"
}

// VerdictWords names a verdict for a person: PASS, FAIL, and for a run
// that proved nothing, what happened instead.
func VerdictWords(v idemcheck.Status) string {
	switch v {
	case idemcheck.Pass:
		return "PASS"
	case idemcheck.Fail:
		return "FAIL"
	case idemcheck.Inconclusive:
		return "INCONCLUSIVE (some check's scenario did not happen)"
	case idemcheck.NoAnswers:
		return "NO ANSWERS (the target answered none of the attempts)"
	case idemcheck.AllSkipped:
		return "ALL SKIPPED (no check applied to this target)"
	case idemcheck.Empty:
		return "EMPTY (nothing was sent)"
	}
	return strings.ToUpper(string(v))
}

// MaxExitTails is how many target exits the terminal report shows with
// their last output; the rest are named by where they happened.
const MaxExitTails = 3

// writeExits shows each time the target died on its own (where in the
// run, how it ended and, for the first few, its last output lines) and
// each time it outlived a cut database link without recovering.
func writeExits(w io.Writer, r idemcheck.Report, c palette) {
	if len(r.TargetExits) == 0 {
		return
	}
	exited, unrecovered := 0, 0
	for _, e := range r.TargetExits {
		if e.Kind == idemcheck.TargetUnrecovered {
			unrecovered++
		} else {
			exited++
		}
	}
	var what []string
	if exited > 0 {
		what = append(what, "exited on its own "+times(exited))
	}
	if unrecovered > 0 {
		what = append(what, "did not recover from a cut database link "+times(unrecovered)+" (it failed fresh requests until restarted)")
	}
	fmt.Fprintf(w, "  %sthe target %s%s: a robustness finding apart from the idempotency verdict\n", c.red, strings.Join(what, ", and "), c.reset)
	tails := 0
	for _, e := range r.TargetExits {
		where := "after the run"
		if e.Check != "" {
			where = fmt.Sprintf("during %s round %d step %d", e.Check, e.Round, e.Step)
		}
		if e.Kind == idemcheck.TargetUnrecovered {
			fmt.Fprintf(w, "    %s: %s\n", where, Printable(e.Detail))
			continue
		}
		status := e.ExitStatus
		if status == "" {
			status = "ended"
		}
		fmt.Fprintf(w, "    instance %d %s: %s\n", e.Instance, where, status)
		if tails >= MaxExitTails || e.LogTail == "" {
			continue
		}
		tails++
		fmt.Fprintf(w, "      %slast output:%s\n", c.dim, c.reset)
		for _, line := range strings.Split(strings.TrimRight(e.LogTail, "\n"), "\n") {
			fmt.Fprintf(w, "      %s| %s%s\n", c.dim, Printable(line), c.reset)
		}
	}
	if r.Target.Log != "" {
		fmt.Fprintf(w, "    its whole output: %s\n", r.Target.Log)
	}
	fmt.Fprintln(w)
}

// times says how many times: "1 time", "3 times".
func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// kindTally counts the anomalies idx names by kind, "kind xN" each, in
// the order of the kinds' names.
func kindTally(as []idemcheck.Anomaly, idx []int) string {
	n := map[idemcheck.Kind]int{}
	for _, i := range idx {
		if i >= 0 && i < len(as) {
			n[as[i].Kind]++
		}
	}
	var parts []string
	for k, v := range n {
		parts = append(parts, fmt.Sprintf("%s x%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// flatten puts s on one line, whitespace runs one space, cut to n bytes.
func flatten(s string, n int) string {
	s = strings.Join(strings.Fields(Printable(s)), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func wrap(s string, width int) string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(s) {
		word = Printable(word)
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// Progress draws a run's progress on w: on a terminal one line redrawn in
// place, elsewhere a line when a check starts, so logs stay readable.
type Progress struct {
	W     io.Writer
	TTY   bool
	Label string

	mu        sync.Mutex
	lastCheck string
	lastDraw  time.Time
	drawn     bool
}

// Step is where a run is: the check, its round of Rounds, and the
// attempts Sent so far of the whole run's Total. It has the fields of
// runner.Progress, so a runner's callback converts one:
// p.Update(render.Step(s)), and this package needs nothing of scenarios.
type Step struct {
	Check         string
	Round, Rounds int
	Sent, Total   int
}

// Update draws s.
func (p *Progress) Update(s Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.TTY {
		if s.Check != p.lastCheck {
			fmt.Fprintf(p.W, "%s: %s ...\n", p.Label, s.Check)
			p.lastCheck = s.Check
		}
		return
	}
	if time.Since(p.lastDraw) < 50*time.Millisecond && s.Sent < s.Total {
		return
	}
	p.lastDraw = time.Now()
	pct := 100 * s.Sent / max(s.Total, 1)
	fmt.Fprintf(p.W, "\r\033[K%s: %s round %d/%d, %d/%d attempts (%d%%)", p.Label, s.Check, s.Round, s.Rounds, s.Sent, s.Total, pct)
	p.drawn = true
}

// Done clears the progress line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.TTY && p.drawn {
		fmt.Fprint(p.W, "\r\033[K")
		p.drawn = false
	}
}

func intList(v []int, n int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strList(s, n)
}

func strList(v []string, n int) string {
	if len(v) <= n {
		return strings.Join(v, ", ")
	}
	return strings.Join(v[:n], ", ") + fmt.Sprintf(" and %d more", len(v)-n)
}

// WriteSuiteVerdict prints the one line that ends a suite's run: the
// suite's verdict (the worst of its endpoints') and how many endpoints
// ended each way, so a long run's outcome is its last line.
func WriteSuiteVerdict(w io.Writer, name string, reports []idemcheck.Report, verdict idemcheck.Status, colour bool) {
	c := colours(colour)
	word := c.green + "PASS" + c.reset
	switch verdict {
	case idemcheck.Fail:
		word = c.red + "FAIL" + c.reset
	case idemcheck.Pass:
	default:
		word = c.yellow + VerdictWords(verdict) + c.reset
	}
	pass, fail := 0, 0
	for _, r := range reports {
		switch r.Verdict {
		case idemcheck.Pass:
			pass++
		case idemcheck.Fail:
			fail++
		}
	}
	endpoints := "endpoints"
	if len(reports) == 1 {
		endpoints = "endpoint"
	}
	fmt.Fprintf(w, "\nsuite %s: %s%s%s: %d %s, %d passed, %d failed, %d neither\n",
		name, c.bold, word, c.bold+c.reset, len(reports), endpoints, pass, fail, len(reports)-pass-fail)
}
