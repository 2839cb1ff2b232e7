package render

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// The strict structs below hold exactly the elements and attributes that
// Jenkins' junit-10.xsd allows where WriteJUnit writes them; anything else
// lands in an Extra or Other field, which the test requires to be empty.

type xAny struct {
	XMLName xml.Name
}

type xRoot struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Name     string     `xml:"name,attr"`
	Tests    string     `xml:"tests,attr"`
	Failures string     `xml:"failures,attr"`
	Errors   string     `xml:"errors,attr"`
	Time     string     `xml:"time,attr"`
	Extra    []xml.Attr `xml:",any,attr"`
	Suites   []xSuite   `xml:"testsuite"`
	Other    []xAny     `xml:",any"`
	Text     string     `xml:",chardata"`
}

type xSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      string      `xml:"tests,attr"`
	Failures   string      `xml:"failures,attr"`
	Errors     string      `xml:"errors,attr"`
	Skipped    string      `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Timestamp  string      `xml:"timestamp,attr"`
	Extra      []xml.Attr  `xml:",any,attr"`
	Properties []xProperty `xml:"properties>property"`
	Cases      []xCase     `xml:"testcase"`
	Other      []xAny      `xml:",any"`
	Text       string      `xml:",chardata"`
}

type xProperty struct {
	Name  string     `xml:"name,attr"`
	Value string     `xml:"value,attr"`
	Extra []xml.Attr `xml:",any,attr"`
}

type xCase struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Time      string     `xml:"time,attr"`
	Extra     []xml.Attr `xml:",any,attr"`
	Skipped   []struct {
		Message string     `xml:"message,attr"`
		Extra   []xml.Attr `xml:",any,attr"`
	} `xml:"skipped"`
	Failures []struct {
		Message string     `xml:"message,attr"`
		Type    string     `xml:"type,attr"`
		Extra   []xml.Attr `xml:",any,attr"`
		Text    string     `xml:",chardata"`
	} `xml:"failure"`
	Errors []struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
	} `xml:"error"`
	SystemOut []string `xml:"system-out"`
	Other     []xAny   `xml:",any"`
	Text      string   `xml:",chardata"`
}

// timePattern is a subset of junit-10.xsd's SUREFIRE_TIME: digits, a point
// and three decimals, never an exponent or a sign.
var timePattern = regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)

func decodeJUnit(t *testing.T, b []byte) xRoot {
	t.Helper()
	var root xRoot
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	require.NoError(t, dec.Decode(&root), "the output must be well-formed XML 1.0")
	return root
}

func count(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "a count must be an integer, got %q", s)
	return n
}

func TestJUnitIsValidAgainstTheJenkinsLayout(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, fixtures()))
	require.True(t, strings.HasPrefix(b.String(), `<?xml version="1.0" encoding="UTF-8"?>`))
	root := decodeJUnit(t, b.Bytes())

	assert.Empty(t, root.Extra, "testsuites allows only name, time, tests, failures, errors")
	assert.Empty(t, root.Other, "testsuites holds only testsuite elements")
	assert.Empty(t, strings.TrimSpace(root.Text))
	assert.Equal(t, "idemcheck", root.Name)
	assert.Equal(t, 5, count(t, root.Tests))
	assert.Equal(t, 1, count(t, root.Failures))
	assert.Equal(t, 0, count(t, root.Errors))
	assert.Equal(t, "0.762", root.Time, "the sum of the runs' durations")
	require.Len(t, root.Suites, 2)

	tests, failures := 0, 0
	for _, s := range root.Suites {
		assert.Empty(t, s.Extra, "suite %s: unexpected attributes", s.Name)
		assert.Empty(t, s.Other, "suite %s: unexpected elements", s.Name)
		assert.Empty(t, strings.TrimSpace(s.Text))
		assert.NotEmpty(t, s.Name, "name is required")
		assert.Regexp(t, timePattern, s.Time)
		nFail, nSkip := 0, 0
		for _, c := range s.Cases {
			assert.Empty(t, c.Extra, "case %s: unexpected attributes", c.Name)
			assert.Empty(t, c.Other, "case %s: unexpected elements", c.Name)
			assert.Empty(t, strings.TrimSpace(c.Text))
			assert.NotEmpty(t, c.Name)
			assert.Equal(t, s.Name, c.Classname, "classname is the suite's name")
			assert.Regexp(t, timePattern, c.Time)
			nFail += len(c.Failures)
			nSkip += len(c.Skipped)
			assert.LessOrEqual(t, len(c.Failures)+len(c.Skipped), 1, "a case fails, is skipped, or neither")
		}
		assert.Equal(t, len(s.Cases), count(t, s.Tests), "suite %s: tests", s.Name)
		assert.Equal(t, nFail, count(t, s.Failures), "suite %s: failures", s.Name)
		assert.Equal(t, nSkip, count(t, s.Skipped), "suite %s: skipped", s.Name)
		assert.Equal(t, 0, count(t, s.Errors))
		tests += len(s.Cases)
		failures += nFail
	}
	assert.Equal(t, tests, count(t, root.Tests))
	assert.Equal(t, failures, count(t, root.Failures))

	pass, fail := root.Suites[0], root.Suites[1]
	assert.Equal(t, "orders (reference)", pass.Name, "a target's name names its suite")
	assert.Equal(t, "POST /orders", fail.Name, "without a name: method and path, never the port")
	for _, c := range fail.Cases {
		assert.Equal(t, "POST /orders", c.Classname)
	}
	assert.Contains(t, fail.Properties, xProperty{Name: "url", Value: "http://127.0.0.1:8081/orders"}, "the URL is a property")
	assert.Equal(t, "0.512", pass.Time)
	assert.Equal(t, []string{"0.493", "0.019"}, []string{pass.Cases[0].Time, pass.Cases[1].Time},
		"the run's 512 ms shared by attempts, 160 and 6")
	for _, p := range pass.Properties {
		assert.NotEqual(t, "seed", p.Name, "a certification makes no random choice: no seed property")
	}
	assert.Contains(t, pass.Properties, xProperty{Name: "database", Value: "postgres://app:xxxxx@127.0.0.1:5432/app"})

	require.Len(t, fail.Cases, 3)
	burst, skipped := fail.Cases[0], fail.Cases[2]
	require.Len(t, burst.Failures, 1)
	f := burst.Failures[0]
	assert.Equal(t, "2 anomalies: duplicate-effect, multiple-created", f.Message)
	assert.Equal(t, "idemcheck.duplicate-effect", f.Type, "the type names the first anomaly's kind")
	for _, want := range []string{
		"duplicate-effect in concurrent-burst, intent ic-8281213f-1, key cc3e414c-414c-463f-a066-df441ea4d635:",
		"One intent must leave exactly one effect.",
		"Observed: effects 2.",
		`Attempt 3 (step 1) was answered 201 with {"orderId":"o-1", "customerId":"ic-8281213f-1"}`,
		"multiple-created in concurrent-burst",
		`Attempt 17 (step 1) was answered 201 with {"orderId":"o-2"} [replayed: false]`,
		"Attempt 21 (step 1) got no reply: read: connection reset by peer",
		"Witnesses: attempts 3, 17, 21, 22.",
		// The hostile body survives the round trip, its forbidden bytes
		// shown as escapes and its markup and CDATA terminator intact.
		`a\x00b\x1b[31mred\xff ]]> <x>&amp; | ` + "`tick`",
	} {
		assert.Contains(t, f.Text, want)
	}
	assert.Empty(t, fail.Cases[1].Failures)
	assert.Empty(t, fail.Cases[1].Skipped)
	require.Len(t, skipped.Skipped, 1)
	assert.Equal(t, "the target cannot cut | replies: no <proxy>", skipped.Skipped[0].Message)
	assert.Equal(t, "0.000", skipped.Time, "a skipped check sent nothing")
	assert.Equal(t, []string{"rule: a replay returns the original reply\n3 intents, 6 attempts"}, fail.Cases[1].SystemOut)
}

// The same target certified twice, on two ports and at two times, gives
// the same test names, and its failure text holds no Go syntax.
func TestJUnitNamesAreStableAcrossRuns(t *testing.T) {
	names := func(port string, start time.Time) ([]string, string) {
		r := fixtures()[1]
		r.Target.URL = "http://127.0.0.1:" + port
		r.StartedAt = start
		r.Tool = idemcheck.Tool{Name: "idemcheck", Version: "v1.2.3", Go: "go1.26.0"}
		r.Anomalies[0].Observed = map[string]any{"effects": int64(2), "statuses": map[int]int{201: 32, 409: 3}, "args": []string{"ic-1"}}
		var b bytes.Buffer
		require.NoError(t, WriteJUnit(&b, []idemcheck.Report{r}))
		s := decodeJUnit(t, b.Bytes()).Suites[0]
		assert.Contains(t, s.Properties, xProperty{Name: "tool", Value: "idemcheck v1.2.3 (go1.26.0)"})
		assert.Contains(t, s.Properties, xProperty{Name: "started_at", Value: start.UTC().Format(time.RFC3339Nano)})
		assert.Equal(t, start.UTC().Format("2006-01-02T15:04:05"), s.Timestamp)
		out := []string{s.Name}
		for _, c := range s.Cases {
			out = append(out, c.Classname+" / "+c.Name)
		}
		return out, s.Cases[0].Failures[0].Text
	}
	a, text := names("41234", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	b, _ := names("52345", time.Date(2026, 12, 2, 11, 30, 0, 0, time.UTC))
	assert.Equal(t, a, b)
	for _, n := range a {
		assert.NotContains(t, n, "41234")
	}
	assert.Contains(t, text, "Observed: args ic-1; effects 2; statuses 201 x32, 409 x3.")
	assert.NotContains(t, text, "map[")
}

func TestJUnitGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, fixtures()))
	golden(t, "junit.golden", b.Bytes())
}

func TestJUnitOfNoReportsIsAnEmptyRoot(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, nil))
	root := decodeJUnit(t, b.Bytes())
	assert.Equal(t, "0", root.Tests)
	assert.Empty(t, root.Suites)
}

func TestJUnitFailedCheckWithoutAnomalies(t *testing.T) {
	r := fixtures()[1]
	r.Checks[0].Anomalies = nil
	r.Checks[0].Reason = "the checker gave up"
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, []idemcheck.Report{r}))
	f := decodeJUnit(t, b.Bytes()).Suites[0].Cases[0].Failures
	require.Len(t, f, 1)
	assert.Equal(t, "idemcheck.failure", f[0].Type)
	assert.Equal(t, "failed without a recorded anomaly: the checker gave up", f[0].Message)
}

// An inconclusive check is an error of its own type: neither a pass nor a
// failure of the target.
func TestJUnitInconclusiveCheckIsAnError(t *testing.T) {
	r := fixtures()[0]
	r.Verdict = idemcheck.Inconclusive
	r.Checks[1].Status = idemcheck.Inconclusive
	r.Checks[1].Reason = "its fault never landed"
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, []idemcheck.Report{r}))
	root := decodeJUnit(t, b.Bytes())
	assert.Equal(t, 1, count(t, root.Errors))
	assert.Equal(t, 1, count(t, root.Suites[0].Errors))
	e := root.Suites[0].Cases[1].Errors
	require.Len(t, e, 1)
	assert.Equal(t, "idemcheck.inconclusive", e[0].Type)
	assert.Equal(t, "inconclusive: its fault never landed", e[0].Message)

	var md bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, []idemcheck.Report{r}))
	assert.Contains(t, md.String(), "## ⚠️ idemcheck: INCONCLUSIVE")
	assert.Contains(t, md.String(), "⚠️ inconclusive: its fault never landed")
}
