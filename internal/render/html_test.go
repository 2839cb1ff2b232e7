package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/history"
	testify "github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture reads a history recorded from a real run (assert/testdata) and
// judges it as `idemcheck check` does.
func fixture(t *testing.T, name string) (*idemcheck.History, idemcheck.Report) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "assert", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, name)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	return hs[0], assert.Report(hs[0])
}

func htmlOf(t *testing.T, pages ...*HTMLPage) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, pages))
	return b.String()
}

func TestHTMLDrawsTheDuplicateBurstAsATimeline(t *testing.T) {
	h, rep := fixture(t, "check-then-insert.jsonl")
	require.Equal(t, idemcheck.Fail, rep.Verdict)
	page := htmlOf(t, NewHTMLPage(rep, h))
	has(t, page, `id="verdict"`, "idemcheck: FAIL", `class="contract"`, `class="timeline"`, "Burst sensitivity:")
	// Every witness of the first anomaly is outlined on its timeline.
	a := rep.Anomalies[0]
	for _, id := range a.Attempts {
		has(t, page, ">#"+strconv.Itoa(id)+" ★<")
	}
	selfContained(t, page)
}

// selfContained fails when the page could fetch anything: a script, a
// style sheet, an image or a font from elsewhere. Text from the target
// may say anything: only markup counts.
func selfContained(t *testing.T, page string) {
	t.Helper()
	testify.False(t, fetchingTag.MatchString(page), "the page holds %q", fetchingTag.FindString(page))
	testify.False(t, fetchingAttr.MatchString(page), "the page holds %q", fetchingAttr.FindString(page))
	style := between(page, "<style>", "</style>")
	for _, bad := range []string{"url(", "@import"} {
		testify.False(t, strings.Contains(style, bad), "the style sheet holds %q", bad)
	}
}

var (
	fetchingTag  = regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed|audio|video|source)\b`)
	fetchingAttr = regexp.MustCompile(`(?i)<[^>]*\s(src|href|srcset|action|xlink:href)\s*=\s*"?\s*(https?:|//|data:)`)
)

// TestHTMLPagesOfTheFixtures draws both recorded histories, and writes the
// pages where IDEMCHECK_HTML_OUT names a folder, to look at them.
func TestHTMLPagesOfTheFixtures(t *testing.T) {
	for _, name := range []string{"check-then-insert.jsonl", "reference.jsonl"} {
		h, rep := fixture(t, name)
		page := htmlOf(t, NewHTMLPage(rep, h))
		selfContained(t, page)
		t.Logf("%s: %d attempts, page %d bytes", name, len(h.Attempts), len(page))
		if dir := os.Getenv("IDEMCHECK_HTML_OUT"); dir != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".jsonl")+".html"), []byte(page), 0o644))
		}
	}
}

// has fails for each of want the page lacks, without printing the page.
func has(t *testing.T, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		testify.True(t, strings.Contains(page, w), "the page lacks %q", w)
	}
}

// burstHistory is a history of one check whose n attempts of one intent
// were released together and all created an order: n witnesses.
func burstHistory(n int) (*idemcheck.History, idemcheck.Report) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := &idemcheck.History{Run: idemcheck.Run{Target: idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Checks: []idemcheck.PlannedCheck{{Name: "concurrent-burst", Rule: "one intent, one effect"}}}}
	h.Intents = []idemcheck.Intent{{ID: "i1", Key: "k1", Seq: 1, Check: "concurrent-burst", Round: 1}}
	an := idemcheck.Anomaly{Kind: idemcheck.MultipleCreated, Check: "concurrent-burst", Intent: "i1", Key: "k1", Explanation: "many created"}
	for i := 1; i <= n; i++ {
		start := t0.Add(time.Duration(i) * time.Microsecond)
		h.Attempts = append(h.Attempts, idemcheck.Attempt{ID: i, Intent: "i1", Key: "k1", Check: "concurrent-burst", Round: 1, Step: 1, Burst: 1,
			Start: start, FirstByte: start.Add(time.Duration(i) * 100 * time.Microsecond), End: start.Add(time.Duration(i)*100*time.Microsecond + 50*time.Microsecond),
			Outcome: idemcheck.Replied, Status: 201, RespBody: fmt.Sprintf(`{"orderId":"order-%d"}`, i)})
		an.Attempts = append(an.Attempts, i)
		an.Evidence = append(an.Evidence, idemcheck.Evidence{Attempt: i, Step: 1, Status: 201, Body: fmt.Sprintf(`{"orderId":"order-%d"}`, i)})
	}
	h.Bursts = []idemcheck.Burst{{ID: 1, Attempts: n, Check: "concurrent-burst", Round: 1, Spread: 200 * time.Microsecond, Protocol: "h2"}}
	rep := idemcheck.Report{Version: 1, Verdict: idemcheck.Fail, Target: h.Run.Target, Anomalies: []idemcheck.Anomaly{an},
		Checks: []idemcheck.CheckResult{{Name: "concurrent-burst", Status: idemcheck.Fail, Anomalies: []int{0}, Intents: 1, Attempts: n, Answered: n}},
		Stats:  idemcheck.Stats{Intents: 1, Attempts: n}}
	return h, rep
}

// A timeline draws at most HTMLMaxBars attempts and says how many it
// left out, so the page stays small however many attempts a burst sent.
func TestHTMLTimelineIsBounded(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{16, 48, 480, 4800} {
		h, rep := burstHistory(n)
		page := htmlOf(t, NewHTMLPage(rep, h))
		sizes[n] = len(page)
		bars := strings.Count(page, `<g class="attempt`)
		testify.Equal(t, min(n, HTMLMaxBars), bars, "attempts drawn of %d", n)
		if n > HTMLMaxBars {
			has(t, page, fmt.Sprintf("%d more attempts of this intent are not drawn", n-HTMLMaxBars))
		}
		t.Logf("%d attempts: page %d bytes", n, len(page))
	}
	// Timelines and evidence lists are bounded: a hundred times the
	// attempts make the same page, but for the figures.
	testify.Less(t, sizes[4800], sizes[48]*11/10)
}

// soakReport is a soak of a minute with a duplicate in its middle.
func soakReport() idemcheck.SoakReport {
	var series []idemcheck.SoakBucket
	for i := range 60 {
		b := idemcheck.SoakBucket{At: time.Duration(i) * time.Second, Width: time.Second, Intents: 100, Succeeded: 99, Cut: 1,
			P50: 2 * time.Millisecond, P90: 4 * time.Millisecond, P99: 9 * time.Millisecond}
		if i == 30 {
			b.Duplicates = 1
		}
		series = append(series, b)
	}
	return idemcheck.SoakReport{Version: 1, Verdict: idemcheck.Fail, Seed: 1,
		Target: idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Soak: &idemcheck.SoakResult{Intents: 6000, Attempts: 6060, Cut: 60, Duplicates: 1, Counted: 6000, Duration: time.Minute,
			Rate: 100, Throughput: 99, Success: 0.99, Series: series}}
}

func TestSoakHTMLPlotsTheSeries(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteSoakHTML(&b, soakReport(), true))
	page := b.String()
	selfContained(t, page)
	has(t, page, "idemcheck: FAIL", "Throughput", "Latency", "Success share and cut share", "Duplicated and lost effects", "1 duplicated")
	testify.Equal(t, 4, strings.Count(page, `<svg class="chart"`))
	// Each line has a point per stretch.
	testify.Equal(t, 59, strings.Count(between(page, `class="line l-dup" points="`, `"`), " "))
	if dir := os.Getenv("IDEMCHECK_HTML_OUT"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "soak.html"), []byte(page), 0o644))
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	return s[:strings.Index(s, to)]
}

// Without its history a report is still drawn, and says what it lacks; a
// report that is not consistent is not drawn at all.
func TestHTMLWithoutHistoryAndBadReports(t *testing.T) {
	h, rep := fixture(t, "check-then-insert.jsonl")
	page := htmlOf(t, NewHTMLPage(rep, nil), NewHTMLPage(rep, h))
	has(t, page, "Drawn from the report alone", "2 certifications", `<svg class="timeline"`)

	bad := rep
	bad.Checks = append([]idemcheck.CheckResult(nil), rep.Checks...)
	bad.Checks[0].Anomalies = []int{99}
	var b bytes.Buffer
	testify.ErrorContains(t, WriteHTML(&b, []*HTMLPage{NewHTMLPage(bad, h)}), "anomaly index 99")
	testify.Zero(t, b.Len())
}

// What the target sent is text on the page, never markup.
func TestHTMLEscapesTheTarget(t *testing.T) {
	h, rep := burstHistory(4)
	evil := `</title></svg><script>alert(1)</script><img src=x onerror=alert(2)>`
	h.Attempts[0].RespBody = evil
	rep.Anomalies[0].Evidence[0].Body = evil
	rep.Anomalies[0].Explanation = evil
	rep.Target.Name = evil
	page := htmlOf(t, NewHTMLPage(rep, h))
	selfContained(t, page)
	has(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	// The check itself sees markup that would fetch.
	testify.True(t, fetchingTag.MatchString(`<p><IMG alt=x>`))
	testify.True(t, fetchingAttr.MatchString(`<a class="x" href="https://example.invalid/">`))
	testify.False(t, fetchingAttr.MatchString(`<a href="#anomaly-1">`))
}
