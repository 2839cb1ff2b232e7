package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// soakView is a soak as the HTML page draws it.
type soakView struct {
	idemcheck.SoakReport
	Counted bool
	Lines   []string
	Charts  []chart
}

// chart is one plot of a soak over time: a line per series, on a shared
// time axis.
type chart struct {
	Title  string
	W, H   int
	Lines  []chartLine
	Ticks  []tick
	YTicks []tick
	// Note says what the chart leaves out, or that it is empty.
	Note string
}

type chartLine struct {
	Points, Class, Label string
}

// Chart geometry, in pixels.
const (
	chLeft = 56
	chPlot = 640
	chH    = 120
	chTop  = 8
)

// newChart plots ys (one slice per line, one value per bucket) over the
// series' time, from 0 to the largest value (at least floor).
func newChart(title string, series []idemcheck.SoakBucket, lines []chartLine, ys [][]float64, floor float64, unit func(float64) string) chart {
	c := chart{Title: title, W: chLeft + chPlot + 36, H: chTop + chH + 22}
	top := floor
	for _, l := range ys {
		for _, v := range l {
			top = max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	n := len(series)
	x := func(i int) float64 {
		if n <= 1 {
			return chLeft + chPlot/2
		}
		return chLeft + float64(i)/float64(n-1)*chPlot
	}
	y := func(v float64) float64 { return chTop + chH - v/top*chH }
	for k, l := range lines {
		var pts []string
		for i, v := range ys[k] {
			pts = append(pts, px(x(i))+","+px(y(v)))
		}
		l.Points = strings.Join(pts, " ")
		c.Lines = append(c.Lines, l)
	}
	if n > 0 {
		end := series[n-1].At + series[n-1].Width
		for i := 0; i <= 4; i++ {
			c.Ticks = append(c.Ticks, tick{X: px(chLeft + float64(i)/4*chPlot), Label: fmtDur(end * time.Duration(i) / 4),
				Y2: strconv.Itoa(chTop + chH), TY: strconv.Itoa(chTop + chH + 16)})
		}
	}
	for i := 0; i <= 2; i++ {
		v := top * float64(i) / 2
		c.YTicks = append(c.YTicks, tick{X: strconv.Itoa(chLeft - 4), Label: unit(v), TY: px(y(v) + 4), Y2: px(y(v))})
	}
	return c
}

// WriteSoakHTML writes one self-contained HTML page for a soak: its
// verdict and figures, and from its series (SoakResult.Series) the
// throughput, the latency percentiles, the success and cut shares, and
// the duplicates and losses over time. counted says whether effects were
// counted (an effect query was given).
func WriteSoakHTML(w io.Writer, rep idemcheck.SoakReport, counted bool) error {
	if rep.Soak == nil {
		return fmt.Errorf("soak report without figures")
	}
	r := rep.Soak
	v := &soakView{SoakReport: rep, Counted: counted}
	v.Lines = append(v.Lines,
		fmt.Sprintf("%d intents, %d attempts in %s: %.0f requests/s sent, %.0f/s answered with success (%.1f%%)", r.Intents, r.Attempts, fmtDur(r.Duration), r.Rate, r.Throughput, r.Success*100),
		fmt.Sprintf("latency p50 %s, p90 %s, p99 %s, max %s", fmtDur(r.P50), fmtDur(r.P90), fmtDur(r.P99), fmtDur(r.Max)),
		fmt.Sprintf("%d first attempts left without a reply and retried with the same key (%.2f%%); %.0f%% of those retries were replays; %d never answered", r.Cut, r.TimeoutRate*100, r.SucceededShare*100, r.Unresolved))
	for _, f := range r.Faults {
		if f.WholeLink {
			v.Lines = append(v.Lines, fmt.Sprintf("fault %s on the whole %s link: every attempt (%d)", f.Fault, f.Link, f.Attempts))
		} else {
			v.Lines = append(v.Lines, fmt.Sprintf("fault %s (share %g): %d first attempts, %d left without a reply, %d of their retries replays", f.Fault, f.Share, f.Attempts, f.Retried, f.Replayed))
		}
	}
	if counted {
		v.Lines = append(v.Lines, fmt.Sprintf("effects counted for %d intents: %d duplicated, %d lost (%.1f duplicates per million intents)", r.Counted, r.Duplicates, r.Lost, r.DuplicatesPerMillion))
		v.Lines = append(v.Lines, soakSettleLines(r)...)
	} else {
		v.Lines = append(v.Lines, "effects not counted (no --effect-sql): duplicates can only be seen on the wire")
	}
	s := r.Series
	if len(s) > 0 {
		rate := func(n int64, b idemcheck.SoakBucket) float64 { return float64(n) / b.Width.Seconds() }
		share := func(n, of int64) float64 {
			if of == 0 {
				return 0
			}
			return float64(n) / float64(of)
		}
		var sent, ok, p50, p90, p99, succ, cut, dup, lost []float64
		for _, b := range s {
			sent = append(sent, rate(b.Intents, b))
			ok = append(ok, rate(b.Succeeded, b))
			p50 = append(p50, float64(b.P50))
			p90 = append(p90, float64(b.P90))
			p99 = append(p99, float64(b.P99))
			succ = append(succ, share(b.Succeeded, b.Intents))
			cut = append(cut, share(b.Cut, b.Intents))
			dup = append(dup, float64(b.Duplicates))
			lost = append(lost, float64(b.Lost))
		}
		perSec := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "/s" }
		pct := func(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }
		count := func(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) }
		v.Charts = append(v.Charts,
			newChart("Throughput: first attempts sent and answered with success, per second", s,
				[]chartLine{{Class: "l-sent", Label: "sent"}, {Class: "l-ok", Label: "succeeded"}}, [][]float64{sent, ok}, 0, perSec),
			newChart("Latency of answered first attempts", s,
				[]chartLine{{Class: "l-p50", Label: "p50"}, {Class: "l-p90", Label: "p90"}, {Class: "l-p99", Label: "p99"}}, [][]float64{p50, p90, p99}, 0,
				func(f float64) string { return fmtDur(time.Duration(f)) }),
			newChart("Success share and cut share of first attempts", s,
				[]chartLine{{Class: "l-ok", Label: "success"}, {Class: "l-cut", Label: "no reply (cut)"}}, [][]float64{succ, cut}, 1, pct),
		)
		dl := newChart("Duplicated and lost effects", s,
			[]chartLine{{Class: "l-dup", Label: "duplicates"}, {Class: "l-lost", Label: "lost"}}, [][]float64{dup, lost}, 1, count)
		if !counted {
			dl.Note = "Effects were not counted (no --effect-sql)."
		}
		v.Charts = append(v.Charts, dl)
	}
	var b strings.Builder
	data := struct {
		Verdict idemcheck.Status
		Tool    string
		Started time.Time
		Reports []htmlReportView
		Soak    *soakView
	}{Verdict: rep.Verdict, Tool: rep.Tool.String(), Started: rep.StartedAt, Soak: v}
	if err := htmlTemplate.Execute(&b, data); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
