package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/outfile"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/runner"
)

// stdin is what `idemcheck check -` reads; a test puts a reader in its
// place.
var stdin io.Reader = os.Stdin

const checkUsage = "usage: idemcheck check [--json FILE] [--junit FILE] [--html FILE] [HISTORY.jsonl|- ...]"

// runCheck judges recorded histories again, offline: every history of
// every file named (globs are expanded here too, for a shell that did
// not), or of standard input for "-" or when no file is named and standard
// input is not a terminal (a pipe from `idemcheck certify … --history -`).
//
// Every input is read as a stream. A certification's history is judged
// whole, one at a time, so however many there are only one is held in
// memory; the reports are printed as the suite prints them. Soak histories
// are counted record by record as they are read, never held, and merged
// into one soak: the shards of a sharded soak (soak --shard), or several
// soaks of one target; their report comes last. The exit code is the worst
// verdict's.
func runCheck(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var out outputs
	out.register(fs)
	files, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return 0, err
	}
	if out.history != "" {
		return 0, idemcheck.Usagef("check: --history is for runs that send traffic; check reads one")
	}
	if err := out.check(); err != nil {
		return 0, err
	}
	inputs, err := checkInputs(files)
	if err != nil {
		return 0, err
	}
	colour := render.Colour(out.noColour, stdout, os.Getenv)
	var results []*certify.Result
	var pages []*render.HTMLPage
	verdict := idemcheck.Pass
	var soak soakMerge
	judge := func(h *idemcheck.History) error {
		if soak.merge.Histories() > 0 && (out.json != "" || out.junit != "" || out.html != "") {
			return mixedOutputs(out)
		}
		rep := assert.ReportIn(h, flagWords)
		rep.Stamp(tool, historyStart(h))
		if len(results) > 0 {
			fmt.Fprintln(stdout)
		}
		render.WriteText(stdout, rep, colour)
		verdict = idemcheck.WorstVerdict(verdict, rep.Verdict)
		// The report is kept for --json and --junit, and what --html
		// draws of the history; the history is not: the next one may be
		// as large.
		results = append(results, &certify.Result{Report: rep})
		if out.html != "" {
			pages = append(pages, render.NewHTMLPage(rep, h))
		}
		return nil
	}
	for _, in := range inputs {
		err := in.each(judge, func(name string, r idemcheck.Run) error {
			switch {
			case out.junit != "":
				return fmt.Errorf("%s is a soak's history, and a soak's report has no JUnit form: leave out --junit (--json writes its report)", name)
			case len(results) > 0 && (out.json != "" || out.html != ""):
				return mixedOutputs(out)
			}
			return soak.merge.Run(name, r)
		}, &soak)
		if err != nil {
			// Wrapped, so that what it names is said as the flags.
			return 0, idemcheck.Usagef("check: %w", err)
		}
	}
	if soak.merge.Histories() > 0 {
		rep := soak.report()
		if len(results) > 0 {
			fmt.Fprintln(stdout)
		}
		render.WriteSoak(stdout, rep, rep.Soak.Counted > 0 || soak.merge.Header().EffectQuery != "")
		verdict = idemcheck.WorstVerdict(verdict, rep.Verdict)
		if out.json != "" {
			if err := outfile.WriteAtomic(out.json, rep.WriteJSON); err != nil {
				return 0, idemcheck.Usagef("--json: %v", err)
			}
		}
		if out.html != "" {
			counted := rep.Soak.Counted > 0 || soak.merge.Header().EffectQuery != ""
			if err := outfile.WriteAtomic(out.html, func(w io.Writer) error { return render.WriteSoakHTML(w, rep, counted) }); err != nil {
				return 0, idemcheck.Usagef("--html: %v", err)
			}
		}
		return exitFor(out, verdict), nil
	}
	if err := writeOutputs(results, out, len(results) > 1, pages); err != nil {
		return 0, err
	}
	return exitFor(out, verdict), nil
}

// mixedOutputs is the error of a check given both soak and certification
// histories with a report file: each has a report of its own.
func mixedOutputs(out outputs) error {
	flag := "--json"
	switch {
	case out.json != "":
	case out.junit != "":
		flag = "--junit"
	default:
		flag = "--html"
	}
	return fmt.Errorf("%s: soak and certification histories have reports of different forms: check them in two runs", flag)
}

// soakMerge merges the soak histories that check reads: their counts
// (assert.SoakMerge) and their load (runner.SoakLoad), both from one
// record at a time.
type soakMerge struct {
	merge assert.SoakMerge
	load  runner.SoakLoad
}

func (m *soakMerge) attempt(a idemcheck.Attempt) {
	m.merge.Attempt(a)
	m.load.Attempt(a)
}

func (m *soakMerge) observation(o idemcheck.Observation) { m.merge.Observation(o) }

// report is the merged soak's report.
func (m *soakMerge) report() idemcheck.SoakReport {
	res, merged, verdict := m.merge.Result(m.load.Result())
	h := m.merge.Header()
	rep := idemcheck.SoakReport{Version: idemcheck.ReportVersion, Verdict: verdict, Tool: tool,
		StartedAt: m.load.Start().UTC().Truncate(time.Millisecond), Seed: h.Seed, Target: h.Target, Soak: &res, Merged: &merged,
		Reason: assert.SoakReasonIn(res, flagWords)}
	if rep.Reason == "" && verdict == idemcheck.Inconclusive && len(merged.Missing) > 0 {
		rep.Reason = "a shard's history is missing: its intents were not counted"
	}
	if merged.Histories == 1 && h.Shard != nil {
		rep.Shard = h.Shard
	}
	return rep
}

// checkInput is one source of histories: a file or standard input.
type checkInput struct {
	name string // as errors name it
	path string // "" for standard input
	// implied: standard input read because no file was named.
	implied bool
}

// each reads the input's histories as a stream. A certification's history
// is gathered whole and handed to judge; a soak's header goes to soakRun
// and its records to soak one at a time, as they are read.
func (in checkInput) each(judge func(*idemcheck.History) error, soakRun func(string, idemcheck.Run) error, soak *soakMerge) error {
	r := stdin
	if in.path != "" {
		f, err := os.Open(in.path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	d := history.NewDecoder(r, in.name)
	var h *idemcheck.History // the certification history being gathered
	inSoak := false
	for {
		rec, err := d.Record()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, history.ErrNoRun) && in.implied {
			return fmt.Errorf("no history on standard input: name one history file or more, or pipe one in (%s)", checkUsage)
		}
		if err != nil {
			return err
		}
		if rec.Run != nil {
			if h != nil {
				if err := judge(h); err != nil {
					return err
				}
				h = nil
			}
			if inSoak = assert.IsSoak(*rec.Run); inSoak {
				if err := soakRun(in.name, *rec.Run); err != nil {
					return err
				}
			} else {
				h = &idemcheck.History{Run: *rec.Run}
			}
			continue
		}
		if inSoak {
			switch {
			case rec.Attempt != nil:
				soak.attempt(*rec.Attempt)
			case rec.Observation != nil:
				soak.observation(*rec.Observation)
			}
			continue
		}
		switch {
		case rec.Intent != nil:
			h.Intents = append(h.Intents, *rec.Intent)
		case rec.Attempt != nil:
			h.Attempts = append(h.Attempts, *rec.Attempt)
		case rec.Burst != nil:
			h.Bursts = append(h.Bursts, *rec.Burst)
		case rec.Observation != nil:
			h.AddObservation(*rec.Observation)
		case rec.Event != nil:
			h.Events = append(h.Events, *rec.Event)
		}
	}
	if h != nil {
		return judge(h)
	}
	return nil
}

// checkInputs turns check's arguments into its inputs, each file checked
// to exist before any is read, so that a typo in the last name does not
// come after the reports of the others.
func checkInputs(args []string) ([]checkInput, error) {
	if len(args) == 0 {
		if f, ok := stdin.(*os.File); ok && render.IsTerminal(f) {
			return nil, idemcheck.Usagef("check: name one history file or more, or pipe one in (%s)", checkUsage)
		}
		return []checkInput{{name: "standard input", implied: true}}, nil
	}
	var ins []checkInput
	seenStdin := false
	seen := map[string]bool{}
	for _, a := range args {
		if a == "-" {
			if seenStdin {
				return nil, idemcheck.Usagef("check: - (standard input) is named twice")
			}
			seenStdin = true
			ins = append(ins, checkInput{name: "standard input"})
			continue
		}
		paths := []string{a}
		if _, err := os.Stat(a); err != nil && strings.ContainsAny(a, "*?[") {
			// A pattern the shell left alone (quoted, or no shell at all).
			m, gerr := filepath.Glob(a)
			if gerr != nil {
				return nil, idemcheck.Usagef("check: %s: %v", a, gerr)
			}
			if len(m) == 0 {
				return nil, idemcheck.Usagef("check: %s matches no file", a)
			}
			paths = m
		}
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, idemcheck.Usagef("check: %v", err)
			}
			if fi.IsDir() {
				return nil, idemcheck.Usagef("check: %s is a folder: name the history files in it, such as %s", p, filepath.Join(p, "*.jsonl"))
			}
			key := filepath.Clean(p)
			if abs, err := filepath.Abs(p); err == nil {
				key = abs
			}
			if seen[key] {
				return nil, idemcheck.Usagef("check: %s is named twice: its attempts would be counted twice", p)
			}
			seen[key] = true
			ins = append(ins, checkInput{name: p, path: p})
		}
	}
	return ins, nil
}

// parseInterspersed parses fs's flags wherever they stand among args
// (idemcheck check h.jsonl --json r.json), as the flag package does not,
// and returns the other arguments in order; after "--" every argument is
// one of those.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var rest []string
	for {
		if err := parseFlagsArgs(fs, args, stdout); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, nil
		}
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(rest, left...), nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}
