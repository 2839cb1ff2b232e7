package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// JUnitBodyMax is how much of a reply body a JUnit failure shows per
// witnessing attempt; CI pages show failure text whole, and the JSON report
// keeps every body in full.
const JUnitBodyMax = 512

// The JUnit layout is the one Jenkins' junit-10.xsd describes and GitLab
// and the GitHub test reporters read: testsuites > testsuite > testcase >
// failure | skipped | system-out. Field order is element order.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	// Timestamp is when the run started (ISO 8601, UTC), from the Report.
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	// Error marks an inconclusive check: it ran, but its scenario did not
	// happen, so it neither held nor failed.
	Error     *junitFailure `xml:"error"`
	Failure   *junitFailure `xml:"failure"`
	SystemOut *junitText    `xml:"system-out"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	// Text is written as CDATA so its lines stay lines in the file.
	Text string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes reports as JUnit XML: one testsuite per Report, named
// after the target (its label, or "METHOD /path": never its URL, whose port
// changes from run to run), and one testcase per check, named after the
// check, its classname the suite's name, so that CI servers follow each
// test across runs. The URL is a property of the suite.
// A failed check carries a failure whose message counts its anomalies by
// kind and whose type is "idemcheck.<kind>" of the first, so a CI rule can
// match on it; its text holds every anomaly with its explanation and
// evidence. A skipped check carries its reason. An inconclusive check (its
// scenario did not happen) is an error of type "idemcheck.inconclusive"
// with the reason, so CI shows it as neither passed nor failed.
//
// The Report records one duration for the whole run, so a suite's time is
// that duration and each testcase's time is its share by attempts. The
// suite's timestamp is the Report's start time, and the tool that made the
// report is a property, so the output is the same for the same report. The root has no skipped
// count because junit-10.xsd allows none there; each suite has one.
//
// Nothing is written when a report is inconsistent (an anomaly index out
// of range, an unknown status).
func WriteJUnit(w io.Writer, reports []idemcheck.Report) error {
	root := junitSuites{Name: "idemcheck"}
	var rootMS int64
	for _, r := range reports {
		s, err := junitSuiteOf(r)
		if err != nil {
			return err
		}
		root.Suites = append(root.Suites, s)
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		rootMS += max(r.Stats.DurationMS, 0)
	}
	root.Time = seconds(float64(rootMS))

	var b strings.Builder
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func junitSuiteOf(r idemcheck.Report) (junitSuite, error) {
	name := clean(stableName(r))
	ms := max(r.Stats.DurationMS, 0)
	s := junitSuite{Name: name, Time: seconds(float64(ms))}
	if !r.StartedAt.IsZero() {
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	s.Properties = []junitProperty{
		{"verdict", string(r.Verdict)},
		{"method", r.Target.Method},
		{"url", targetURL(r.Target)},
	}
	if t := r.Tool.String(); t != "" {
		s.Properties = append(s.Properties, junitProperty{"tool", t})
	}
	if !r.StartedAt.IsZero() {
		s.Properties = append(s.Properties, junitProperty{"started_at", r.StartedAt.UTC().Format(time.RFC3339Nano)})
	}
	if r.Target.Database != "" {
		s.Properties = append(s.Properties, junitProperty{"database", r.Target.Database})
	}
	for i := range s.Properties {
		s.Properties[i].Value = clean(s.Properties[i].Value)
	}
	total := 0
	for _, ch := range r.Checks {
		total += max(ch.Attempts, 0)
	}
	for _, ch := range r.Checks {
		if err := checkStatus(r, ch); err != nil {
			return s, err
		}
		as, err := checkAnomalies(r, ch)
		if err != nil {
			return s, err
		}
		c := junitCase{Name: clean(ch.Name), Classname: name, Time: seconds(0)}
		if total > 0 {
			c.Time = seconds(float64(ms) * float64(max(ch.Attempts, 0)) / float64(total))
		}
		out := fmt.Sprintf("%s, %s", plural(ch.Intents, "intent", "intents"), plural(ch.Attempts, "attempt", "attempts"))
		if ch.Rule != "" {
			out = "rule: " + ch.Rule + "\n" + out
		}
		if ch.Partial != "" && ch.Status != idemcheck.Skip {
			out += "\nnot sent: " + oneLine(ch.Partial, 1<<12)
		}
		for _, i := range ch.Remarks {
			if i < 0 || i >= len(r.Remarks) {
				return s, fmt.Errorf("report %q, check %s: remark index %d is outside the report's %d remarks", suiteName(r), ch.Name, i, len(r.Remarks))
			}
			// JUnit has no warning: a remark apart from the verdict is
			// said in the test's output, never as a failure.
			a := r.Remarks[i]
			out += fmt.Sprintf("\n%s (a %s finding apart from the verdict), intent %s, key %s: %s", a.Kind, a.Finding(), a.Intent, a.Key, oneLine(a.Explanation, 1<<12))
		}
		c.SystemOut = &junitText{Text: clean(out)}
		s.Tests++
		switch ch.Status {
		case idemcheck.Skip:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: oneLine(ch.Reason, 1024)}
		case idemcheck.Fail:
			s.Failures++
			c.Failure = junitFailureOf(ch, as)
		case idemcheck.Inconclusive:
			s.Errors++
			msg := oneLine("inconclusive: "+ch.Reason, 1024)
			c.Error = &junitFailure{Message: msg, Type: "idemcheck.inconclusive", Text: msg}
		}
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

func junitFailureOf(ch idemcheck.CheckResult, as []idemcheck.Anomaly) *junitFailure {
	if len(as) == 0 {
		// A check can fail without a recorded anomaly only if the report
		// was made elsewhere; say so rather than invent a kind.
		msg := "failed without a recorded anomaly"
		if ch.Reason != "" {
			msg += ": " + ch.Reason
		}
		return &junitFailure{Message: oneLine(msg, 1024), Type: "idemcheck.failure", Text: oneLine(msg, 1024)}
	}
	f := &junitFailure{
		Message: fmt.Sprintf("%s: %s", plural(len(as), "anomaly", "anomalies"), kindSummary(as)),
		Type:    "idemcheck." + clean(string(as[0].Kind)),
	}
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s in %s, intent %s, key %s:\n", a.Kind, a.Check, a.Intent, a.Key)
		fmt.Fprintf(&b, "  %s\n", oneLine(a.Explanation, 1<<16))
		if o := observedLine(a.Observed); o != "" {
			fmt.Fprintf(&b, "  %s\n", o)
		}
		for _, e := range a.Evidence {
			fmt.Fprintf(&b, "  %s\n", evidenceLine(e, JUnitBodyMax))
		}
		if len(a.Evidence) < len(a.Attempts) {
			fmt.Fprintf(&b, "  Witnesses: attempts %s.\n", ints(a.Attempts))
		}
	}
	f.Text = clean(b.String())
	return f
}

// seconds formats milliseconds as seconds with three decimals, which the
// schema's time pattern accepts and which never uses an exponent.
func seconds(ms float64) string {
	return strconv.FormatFloat(ms/1000, 'f', 3, 64)
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
