package render

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Limits that keep an HTML report small whatever the size of its history:
// a page draws what a reader can take in, states what it left out, and the
// history holds the rest.
const (
	// HTMLMaxBars is how many attempts an anomaly's timeline draws; the
	// witnesses come first.
	HTMLMaxBars = 48
	// HTMLMaxTimelines is how many anomalies of one check get a timeline;
	// the others are listed with their explanation only.
	HTMLMaxTimelines = 8
	// HTMLMaxBursts is how many bursts of one check the burst chart draws.
	HTMLMaxBursts = 60
	// HTMLMaxEvidence is how many witnessing attempts an anomaly lists.
	HTMLMaxEvidence = 16
	// HTMLBodyMax is how much of a reply body an evidence line shows.
	HTMLBodyMax = 300
	// htmlTitleBody is how much of a body an attempt's tooltip shows.
	htmlTitleBody = 72
)

// HTMLPage is what the HTML report shows of one certification: its report,
// and from its history what the report does not carry (each check's
// statuses and bursts, each anomaly's attempts on a time axis), already cut
// to the limits above. It holds no history, so `idemcheck check` can judge
// histories one at a time and still draw them all on one page.
type HTMLPage struct {
	Report idemcheck.Report
	// checks are by check name; nil without a history.
	checks map[string]*htmlCheck
	// timelines are by anomaly index; sameAs points an anomaly whose
	// intent's attempts are drawn already to the anomaly drawn with them.
	timelines map[int]*timeline
	sameAs    map[int]int
}

// htmlCheck is what the history shows of one check.
type htmlCheck struct {
	Scenario string
	Statuses []statusBar
	Bursts   *burstChart
	// Example is one round of a check that broke the target on purpose
	// and found nothing: what its fault did, and the retry after it.
	Example      *timeline
	ExampleRound int
}

// NewHTMLPage gathers what the HTML report draws of one certification. h
// may be nil (a report read without its history): the page then shows the
// report alone.
func NewHTMLPage(rep idemcheck.Report, h *idemcheck.History) *HTMLPage {
	p := &HTMLPage{Report: rep}
	if h == nil {
		return p
	}
	p.checks = map[string]*htmlCheck{}
	attempts := map[string][]idemcheck.Attempt{}
	intents := map[string]int{}
	for _, in := range h.Intents {
		intents[in.Check]++
	}
	for _, a := range h.Attempts {
		attempts[a.Check] = append(attempts[a.Check], a)
	}
	for _, ch := range rep.Checks {
		as := attempts[ch.Name]
		p.checks[ch.Name] = &htmlCheck{
			Scenario: scenarioLine(intents[ch.Name], as),
			Statuses: statusBars(as),
			Bursts:   newBurstChart(h.CheckBursts(ch.Name)),
		}
	}
	for _, ch := range rep.Checks {
		if len(ch.Anomalies) > 0 {
			continue
		}
		for _, a := range attempts[ch.Name] {
			if a.Fault != "" {
				c := p.checks[ch.Name]
				c.Example = newTimeline(h, idemcheck.Anomaly{Check: ch.Name, Intent: a.Intent})
				c.ExampleRound = a.Round
				break
			}
		}
	}
	p.timelines, p.sameAs = map[int]*timeline{}, map[int]int{}
	perCheck := map[string]int{}
	drawn := map[string]int{}
	for i, a := range rep.Anomalies {
		// Two anomalies of one intent (a burst that created several
		// orders, and left several rows) share one drawing.
		if j, ok := drawn[a.Check+"\x00"+a.Intent]; ok && a.Intent != "" {
			p.sameAs[i] = j
			continue
		}
		if perCheck[a.Check] >= HTMLMaxTimelines {
			continue
		}
		drawn[a.Check+"\x00"+a.Intent] = i
		if tl := newTimeline(h, a); tl != nil {
			p.timelines[i] = tl
			perCheck[a.Check]++
		}
	}
	return p
}

// scenarioLine says what a check sent: its rounds, the steps of a round,
// the faults and the request variants.
func scenarioLine(intents int, as []idemcheck.Attempt) string {
	if len(as) == 0 {
		return "nothing was sent"
	}
	steps, faults, variants := map[int]bool{}, map[string]bool{}, map[string]bool{}
	bursts, redeliveries := map[int]bool{}, 0
	for _, a := range as {
		steps[a.Step] = true
		if a.Fault != "" {
			faults[a.Fault] = true
		}
		if a.Variant != idemcheck.Original {
			variants[string(a.Variant)] = true
		}
		if a.Burst > 0 {
			bursts[a.Burst] = true
		}
		if a.Redelivery > 0 {
			redeliveries++
		}
	}
	parts := []string{plural(intents, "round", "rounds") + " (one intent, one key each)",
		plural(len(steps), "step", "steps") + " a round"}
	if len(bursts) > 0 {
		parts = append(parts, plural(len(bursts), "burst", "bursts"))
	}
	if len(faults) > 0 {
		parts = append(parts, "faults: "+strings.Join(slices.Sorted(mapKeys(faults)), ", "))
	}
	if len(variants) > 0 {
		parts = append(parts, "variants: "+strings.Join(slices.Sorted(mapKeys(variants)), ", "))
	}
	if redeliveries > 0 {
		parts = append(parts, plural(redeliveries, "redelivery", "redeliveries"))
	}
	return strings.Join(parts, "; ")
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// statusBar is one row of a status histogram.
type statusBar struct {
	Label string
	Count int
	Class string
	// W is the bar's width in the chart, in pixels.
	W string
}

// statusBars counts a check's attempts by what they got: each status,
// "no reply" (sent, no complete reply) and "not sent".
func statusBars(as []idemcheck.Attempt) []statusBar {
	type key struct {
		status int
		label  string
	}
	n := map[key]int{}
	for _, a := range as {
		switch a.Outcome {
		case idemcheck.Replied:
			n[key{a.Status, strconv.Itoa(a.Status)}]++
		case idemcheck.NotSent:
			n[key{1001, "not sent"}]++
		default:
			n[key{1000, "no reply"}]++
		}
	}
	keys := slices.SortedFunc(mapKeys(n), func(a, b key) int { return cmp.Compare(a.status, b.status) })
	most := 0
	for _, k := range keys {
		most = max(most, n[k])
	}
	out := make([]statusBar, len(keys))
	for i, k := range keys {
		out[i] = statusBar{Label: k.label, Count: n[k], Class: statusClass(k.status),
			W: px(float64(n[k]) / float64(most) * 240)}
	}
	return out
}

// statusClass is the CSS class a status is drawn in.
func statusClass(status int) string {
	switch {
	case status >= 1000:
		return "s-none"
	case status >= 500:
		return "s-5xx"
	case status >= 400:
		return "s-4xx"
	case status >= 200 && status < 300:
		return "s-2xx"
	}
	return "s-other"
}

func px(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// burstChart shows how tightly a check's bursts were released: each
// burst's spread beside the limit above which it is loose, on a log axis.
type burstChart struct {
	Total, Scheduled, Loose int
	Median, Largest         string
	Protocols               string
	Bars                    []burstBar
	// Omitted counts the bursts not drawn.
	Omitted int
	H       int
	// Ticks are the axis labels.
	Ticks []tick
}

type burstBar struct {
	Y, Y2, TY, W, LimitX string
	Label, Title         string
	Class                string
}

type tick struct {
	X, Label string
	// Y2 is where its grid line ends, TY where its label sits.
	Y2, TY string
}

func newBurstChart(bs []idemcheck.Burst) *burstChart {
	if len(bs) == 0 {
		return nil
	}
	c := &burstChart{Total: len(bs)}
	protos := map[string]int{}
	spreads := make([]time.Duration, 0, len(bs))
	for _, b := range bs {
		if b.RaceScheduled() {
			c.Scheduled++
		}
		if b.Loose {
			c.Loose++
		}
		if b.Protocol != "" {
			protos[b.Protocol]++
		}
		spreads = append(spreads, b.Spread)
	}
	slices.Sort(spreads)
	c.Median, c.Largest = fmtDur(spreads[len(spreads)/2]), fmtDur(spreads[len(spreads)-1])
	var ps []string
	for _, p := range slices.Sorted(mapKeys(protos)) {
		ps = append(ps, fmt.Sprintf("%s x%d", p, protos[p]))
	}
	c.Protocols = strings.Join(ps, ", ")
	if len(bs) > HTMLMaxBursts {
		c.Omitted = len(bs) - HTMLMaxBursts
		bs = bs[:HTMLMaxBursts]
	}
	// A log axis from 1 us to 1 s: spreads range from microseconds
	// (scheduled, h2) to milliseconds (a busy machine).
	const w = 360.0
	x := func(d time.Duration) float64 {
		us := max(float64(d)/float64(time.Microsecond), 1)
		return min(logScale(us, 1, 1e6)*w, w)
	}
	c.H = len(bs)*10 + 24
	for _, t := range []struct {
		d time.Duration
		l string
	}{{time.Microsecond, "1µs"}, {10 * time.Microsecond, "10µs"}, {100 * time.Microsecond, "100µs"}, {time.Millisecond, "1ms"}, {10 * time.Millisecond, "10ms"}, {100 * time.Millisecond, "100ms"}, {time.Second, "1s"}} {
		c.Ticks = append(c.Ticks, tick{X: px(x(t.d) + 60), Label: t.l, Y2: strconv.Itoa(c.H - 14), TY: strconv.Itoa(c.H - 2)})
	}
	for i, b := range bs {
		class, how := "b-timed", "timed"
		switch {
		case b.RaceScheduled() && b.InTurn:
			class, how = "b-sched", fmt.Sprintf("scheduled: %d writes held and released one at a time, the last held first", b.Held)
		case b.RaceScheduled():
			class, how = "b-sched", fmt.Sprintf("scheduled: %d writes held and released together", b.Held)
		case b.Loose:
			class, how = "b-loose", "loose"
		}
		title := fmt.Sprintf("burst %d, round %d: %d attempts over %s, spread %s (loose above %s); %s",
			b.ID, b.Round, b.Attempts, orDash(b.Protocol), fmtDur(b.Spread), fmtDur(idemcheck.LooseSpread(b.Attempts)), how)
		if b.Fallback != "" {
			title += "; fell back to HTTP/1.1: " + b.Fallback
		}
		y := i*10 + 2
		c.Bars = append(c.Bars, burstBar{
			Y: strconv.Itoa(y), Y2: strconv.Itoa(y + 7), TY: strconv.Itoa(y + 7), W: px(max(x(b.Spread), 1)), LimitX: px(x(idemcheck.LooseSpread(b.Attempts)) + 60),
			Label: fmt.Sprintf("#%d", b.ID), Title: clean(title), Class: class,
		})
	}
	return c
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logScale places v between lo and hi on a log axis, from 0 to 1.
func logScale(v, lo, hi float64) float64 {
	if v <= lo {
		return 0
	}
	return math.Log(v/lo) / math.Log(hi/lo)
}

// fmtDur writes a duration rounded for a reader: 3.2ms, 41µs.
func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 0, 64) + "s"
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d >= time.Microsecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
	}
	return d.String()
}

// timeline is one anomaly's evidence on a shared time axis: each attempt
// a bar from its start to its end, the reply's first byte marked, cuts
// crossed, fault events as lines across, witnesses outlined.
type timeline struct {
	W, H    int
	Bars    []tlBar
	Marks   []tlMark
	Ticks   []tick
	Omitted int
	Span    string
}

type tlBar struct {
	Y, Y2, TextY, X, W, FirstX, NoteX, CutPath string
	Label, Note, Title                         string
	Class                                      string
	Witness, Cut, FirstByte                    bool
}

type tlMark struct {
	X, Y2, Label, Title, Class string
	LabelY                     string
}

// Timeline geometry, in pixels.
const (
	tlLeft  = 64
	tlPlot  = 560
	tlRight = 200
	tlRow   = 16
	tlTop   = 30
)

// newTimeline draws the attempts of the anomaly's intent and its
// witnesses, at most HTMLMaxBars of them (witnesses first), and the events
// of the intent (faults that landed, kills, restarts, held writes).
func newTimeline(h *idemcheck.History, an idemcheck.Anomaly) *timeline {
	witness := map[int]bool{}
	for _, id := range an.Attempts {
		witness[id] = true
	}
	as, omitted := timelineAttempts(h, an, witness)
	if len(as) == 0 {
		return nil
	}
	tl := &timeline{Omitted: omitted}
	t0, t1 := as[0].Start, as[0].End
	for _, a := range as {
		if !a.Start.IsZero() && a.Start.Before(t0) {
			t0 = a.Start
		}
		if a.End.After(t1) {
			t1 = a.End
		}
	}
	events, t0, t1 := timelineEvents(h, an, t0, t1)
	sc := newTLScale(t0, t1)
	tl.Span = fmtDur(sc.span)
	for i, a := range as {
		tl.Bars = append(tl.Bars, sc.bar(tlTop+i*tlRow, a, witness[a.ID]))
	}
	tl.H = tlTop + len(as)*tlRow + 20
	tl.W = tlLeft + tlPlot + tlRight
	tl.mark(sc, events)
	for i := 0; i <= 4; i++ {
		tl.Ticks = append(tl.Ticks, tick{X: px(tlLeft + float64(i)/4*tlPlot), Label: "+" + fmtDur(sc.span*time.Duration(i)/4),
			Y2: strconv.Itoa(tl.H - 18), TY: strconv.Itoa(tl.H - 4)})
	}
	return tl
}

// timelineAttempts picks the attempts a timeline draws, in the order they
// were recorded: the witnesses, then the others of the anomaly's intent,
// at most HTMLMaxBars in all. It returns how many it left out.
func timelineAttempts(h *idemcheck.History, an idemcheck.Anomaly, witness map[int]bool) (as []idemcheck.Attempt, omitted int) {
	var picked, rest []idemcheck.Attempt
	for _, a := range h.Attempts {
		switch {
		case witness[a.ID]:
			picked = append(picked, a)
		case a.Intent == an.Intent && an.Intent != "":
			rest = append(rest, a)
		}
	}
	if len(picked) == 0 && len(rest) == 0 {
		return nil, 0
	}
	if room := HTMLMaxBars - len(picked); room < len(rest) {
		omitted = len(rest) - max(room, 0)
		rest = rest[:max(room, 0)]
	}
	if len(picked) > HTMLMaxBars {
		omitted += len(picked) - HTMLMaxBars
		picked = picked[:HTMLMaxBars]
	}
	as = append(picked, rest...)
	slices.SortFunc(as, func(a, b idemcheck.Attempt) int { return cmp.Compare(a.ID, b.ID) })
	return as, omitted
}

// timelineEvents picks the events a timeline marks: those of the
// anomaly's intent, and those of no intent in its check between t0 and
// t1. It returns them with t0 and t1 widened to hold them.
func timelineEvents(h *idemcheck.History, an idemcheck.Anomaly, t0, t1 time.Time) ([]idemcheck.Event, time.Time, time.Time) {
	var events []idemcheck.Event
	for _, e := range h.Events {
		if e.Intent == an.Intent && an.Intent != "" || e.Intent == "" && e.Check == an.Check && !e.Time.Before(t0) && !e.Time.After(t1) {
			if markOf(e) == "" {
				continue
			}
			events = append(events, e)
			if e.Time.Before(t0) {
				t0 = e.Time
			}
			if e.Time.After(t1) {
				t1 = e.Time
			}
		}
	}
	return events, t0, t1
}

// tlScale places times on a timeline's plot.
type tlScale struct {
	t0   time.Time
	span time.Duration
}

// newTLScale scales the plot from t0 to t1. Times are compared by the wall
// clock alone, as a history read from a file has them, so a page drawn
// again from its history is the same page.
func newTLScale(t0, t1 time.Time) tlScale {
	sc := tlScale{t0: t0.Round(0)}
	sc.span = sc.rel(t1)
	if sc.span <= 0 {
		sc.span = time.Microsecond
	}
	return sc
}

// rel is t after the plot's start.
func (sc tlScale) rel(t time.Time) time.Duration { return t.Round(0).Sub(sc.t0) }

// x is where t falls on the plot; a zero time at its left edge.
func (sc tlScale) x(t time.Time) float64 {
	if t.IsZero() {
		return tlLeft
	}
	return tlLeft + float64(sc.rel(t))/float64(sc.span)*tlPlot
}

// bar draws attempt a at height y: its span, its first byte, its outcome
// and a note and title saying what it was.
func (sc tlScale) bar(y int, a idemcheck.Attempt, witness bool) tlBar {
	end := sc.x(a.End)
	b := tlBar{Y: strconv.Itoa(y), Y2: strconv.Itoa(y + 11), TextY: strconv.Itoa(y + 10), X: px(sc.x(a.Start)), W: px(max(end-sc.x(a.Start), 1.5)),
		NoteX: px(end + 8), Label: fmt.Sprintf("#%d", a.ID), Witness: witness}
	if !a.FirstByte.IsZero() {
		b.FirstByte, b.FirstX = true, px(sc.x(a.FirstByte))
	}
	var note []string
	switch a.Outcome {
	case idemcheck.Replied:
		b.Class = statusClass(a.Status)
		note = append(note, strconv.Itoa(a.Status))
	case idemcheck.NotSent:
		b.Class = "s-none"
		note = append(note, "not sent")
	default:
		b.Class, b.Cut = "s-none", true
		b.CutPath = fmt.Sprintf("M%s %d L%s %d M%s %d L%s %d", px(end-4), y-1, px(end+4), y+12, px(end+4), y-1, px(end-4), y+12)
		note = append(note, "no reply")
	}
	if a.Fault != "" {
		note = append(note, a.Fault)
	}
	if a.Redelivery > 0 {
		note = append(note, fmt.Sprintf("redelivery %d", a.Redelivery))
	}
	if a.Variant != idemcheck.Original {
		note = append(note, string(a.Variant))
	}
	b.Note = oneLine(strings.Join(note, " · "), 40)
	b.Title = oneLine(sc.barTitle(a, note, witness), HTMLBodyMax)
	return b
}

// barTitle is the tooltip of attempt a's bar: its times, note and what it
// was answered.
func (sc tlScale) barTitle(a idemcheck.Attempt, note []string, witness bool) string {
	title := fmt.Sprintf("attempt %d, step %d", a.ID, a.Step)
	if a.Burst > 0 {
		title += fmt.Sprintf(", burst %d", a.Burst)
	}
	title += fmt.Sprintf(": sent at %s", fmtDur(sc.rel(a.Start)))
	if !a.FirstByte.IsZero() {
		title += fmt.Sprintf(", first byte at %s", fmtDur(sc.rel(a.FirstByte)))
	}
	title += fmt.Sprintf(", ended at %s: %s", fmtDur(sc.rel(a.End)), strings.Join(note, ", "))
	if a.Error != "" {
		title += ": " + oneLine(a.Error, htmlTitleBody)
	} else if a.RespBody != "" {
		title += ": " + oneLine(a.RespBody, htmlTitleBody)
	}
	if witness {
		title += " (witness)"
	}
	return title
}

// mark draws the events as marks, their labels staggered where they are
// close together.
func (tl *timeline) mark(sc tlScale, events []idemcheck.Event) {
	lastX := -100.0
	row := 0
	held := 0
	for _, e := range events {
		ex := sc.x(e.Time)
		label := markOf(e)
		class := "m-" + label
		if e.Kind == idemcheck.WriteHeld {
			// A scheduled burst holds a write per attempt: one label
			// says what the lines are.
			held++
			if held > 1 {
				label = ""
			}
		}
		// Marks close together stagger their labels.
		if label != "" {
			if ex-lastX < 40 {
				row = (row + 1) % 2
			} else {
				row = 0
			}
			lastX = ex
		}
		title := fmt.Sprintf("%s at %s", e.Kind, fmtDur(sc.rel(e.Time)))
		for _, s := range []string{e.Fault, e.Landing, e.SQL, e.Detail, e.ExitStatus} {
			if s != "" {
				title += "; " + s
			}
		}
		tl.Marks = append(tl.Marks, tlMark{X: px(ex), Y2: strconv.Itoa(tl.H - 18), Label: label, Title: oneLine(title, HTMLBodyMax),
			Class: class, LabelY: strconv.Itoa(10 + row*10)})
	}
}

// markOf names the mark an event makes on a timeline; "" for none.
func markOf(e idemcheck.Event) string {
	switch e.Kind {
	case idemcheck.FaultLanded:
		if e.Landing == idemcheck.LandedReply || strings.HasPrefix(e.Fault, "cut") {
			return "cut"
		}
		return "fault"
	case idemcheck.FaultMissed:
		return "missed"
	case idemcheck.TargetKilled:
		return "kill"
	case idemcheck.TargetRestarted:
		return "restart"
	case idemcheck.TargetExited:
		return "exit"
	case idemcheck.TargetUnrecovered:
		return "unrecovered"
	case idemcheck.WriteHeld:
		return "hold"
	case idemcheck.WritesReleased:
		return "release"
	}
	return ""
}

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"verdictWord":  verdictWord,
	"verdictClass": verdictClass,
	"oneLine":      func(s string) string { return oneLine(s, 4096) },
	"body":         func(s string) string { return oneLine(s, HTMLBodyMax) },
	"evidence":     func(e idemcheck.Evidence) string { return evidenceLine(e, HTMLBodyMax) },
	"observed":     observedLine,
	"kinds":        kindSummary,
	"plural":       plural,
	"ms":           func(ms int64) string { return fmtDur(time.Duration(ms) * time.Millisecond) },
	"utc":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"ints":         ints,
	"add":          func(a, b int) int { return a + b },
	"pct":          func(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" },
	"dur":          fmtDur,
}).Parse(htmlSource))

// verdictWord is a verdict as the page's banner says it.
func verdictWord(v idemcheck.Status) string {
	_, w := verdictMark(v)
	return w
}

func verdictClass(v idemcheck.Status) string {
	switch v {
	case idemcheck.Pass:
		return "v-pass"
	case idemcheck.Fail:
		return "v-fail"
	}
	return "v-other"
}

// htmlCheckView is one check as the template draws it.
type htmlCheckView struct {
	idemcheck.CheckResult
	*htmlCheck
	Anomalies []htmlAnomalyView
	// Notes are the check's findings apart from the verdict (Remarks).
	Notes []idemcheck.Anomaly
}

type htmlAnomalyView struct {
	Index int
	idemcheck.Anomaly
	Timeline *timeline
	// MoreEvidence counts the witnesses not listed.
	MoreEvidence int
	// SameAs is the anomaly whose drawing holds this one's attempts,
	// when HasSame.
	SameAs  int
	HasSame bool
}

type htmlReportView struct {
	idemcheck.Report
	Basis    string
	Checks   []htmlCheckView
	Judged   []idemcheck.RuleResult
	Unjudged []idemcheck.RuleResult
	NoHist   bool
}

// WriteHTML writes one self-contained HTML page for the reports of pages
// (one per endpoint of a suite): the verdict, the target, the tool and the
// time; the contract table; per check its scenario, a status histogram and
// its bursts' spreads; per anomaly its evidence as a timeline. The page
// fetches nothing (CSS and SVG inline, no script, no font), so it opens
// offline from disk. Text from the target is escaped by html/template.
//
// Nothing is written when a report is inconsistent (an anomaly index out
// of range, an unknown status).
func WriteHTML(w io.Writer, pages []*HTMLPage) error {
	var views []htmlReportView
	worst := idemcheck.Pass
	var tool idemcheck.Tool
	var started time.Time
	for _, p := range pages {
		r := p.Report
		worst = idemcheck.WorstVerdict(worst, r.Verdict)
		if tool.Name == "" {
			tool = r.Tool
		}
		if started.IsZero() || !r.StartedAt.IsZero() && r.StartedAt.Before(started) {
			started = r.StartedAt
		}
		v := htmlReportView{Report: r, NoHist: p.checks == nil}
		switch {
		case r.Target.Database != "":
			v.Basis = "effects counted in " + r.Target.Database
		case r.Target.ReadBack != "":
			v.Basis = "no database: effects read back through the API with " + r.Target.ReadBack
		default:
			v.Basis = "no database: judged from the wire alone"
		}
		for _, ch := range r.Checks {
			if err := checkStatus(r, ch); err != nil {
				return err
			}
			as, err := checkAnomalies(r, ch)
			if err != nil {
				return err
			}
			cv := htmlCheckView{CheckResult: ch, htmlCheck: p.checks[ch.Name]}
			if cv.htmlCheck == nil {
				cv.htmlCheck = &htmlCheck{}
			}
			for i, a := range as {
				av := htmlAnomalyView{Index: ch.Anomalies[i], Anomaly: a, Timeline: p.timelines[ch.Anomalies[i]]}
				av.SameAs, av.HasSame = p.sameAs[ch.Anomalies[i]]
				if len(a.Evidence) > HTMLMaxEvidence {
					av.MoreEvidence = len(a.Evidence) - HTMLMaxEvidence
					av.Evidence = a.Evidence[:HTMLMaxEvidence]
				}
				cv.Anomalies = append(cv.Anomalies, av)
			}
			for _, i := range ch.Remarks {
				if i < 0 || i >= len(r.Remarks) {
					return fmt.Errorf("report %q, check %s: remark index %d is outside the report's %d remarks", suiteName(r), ch.Name, i, len(r.Remarks))
				}
				cv.Notes = append(cv.Notes, r.Remarks[i])
			}
			v.Checks = append(v.Checks, cv)
		}
		for _, rr := range r.Contract {
			if rr.Status == idemcheck.RuleNotChecked {
				v.Unjudged = append(v.Unjudged, rr)
			} else {
				v.Judged = append(v.Judged, rr)
			}
		}
		views = append(views, v)
	}
	data := struct {
		Verdict idemcheck.Status
		Tool    string
		Started time.Time
		Reports []htmlReportView
		Soak    *soakView
	}{Verdict: worst, Tool: tool.String(), Started: started, Reports: views}
	if len(pages) == 0 {
		data.Verdict = idemcheck.Empty
	}
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, data); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
