package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/render"
)

// stdin is what `idemcheck check -` reads; a test puts a reader in its
// place.
var stdin io.Reader = os.Stdin

const checkUsage = "usage: idemcheck check [--json FILE] [--junit FILE] [--html FILE] [HISTORY.jsonl|- ...]"

// runCheck judges recorded histories again, offline: every history of
// every file named (globs are expanded here too, for a shell that did
// not), or of standard input for "-" or when no file is named and standard
// input is not a terminal (a pipe from `idemcheck certify … --history -`).
// Histories are read and judged one at a time, so however many there are
// only one is held in memory; the reports are printed as the suite prints
// them, and the exit code is the worst verdict's.
func runCheck(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var out outputs
	out.register(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return 0, idemcheck.Usagef("check: %v (%s)", err, checkUsage)
	}
	if out.history != "" {
		return 0, idemcheck.Usagef("check: --history is for runs that send traffic; check reads one")
	}
	if err := out.check(); err != nil {
		return 0, err
	}
	inputs, err := checkInputs(fs.Args())
	if err != nil {
		return 0, err
	}
	colour := render.Colour(out.noColour, stdout, os.Getenv)
	var results []*certify.Result
	var pages []*render.HTMLPage
	verdict := idemcheck.Pass
	for _, in := range inputs {
		err := in.each(func(h *idemcheck.History) {
			rep := assert.ReportIn(h, flagWords)
			rep.Stamp(tool, historyStart(h))
			if len(results) > 0 {
				fmt.Fprintln(stdout)
			}
			render.WriteText(stdout, rep, colour)
			verdict = idemcheck.WorstVerdict(verdict, rep.Verdict)
			// The report is kept for --json and --junit, and what --html
			// draws of the history; the history is not: the next one may
			// be as large.
			results = append(results, &certify.Result{Report: rep})
			if out.html != "" {
				pages = append(pages, render.NewHTMLPage(rep, h))
			}
		})
		if err != nil {
			return 0, idemcheck.Usagef("check: %v", err)
		}
	}
	if err := writeOutputs(results, out, len(results) > 1, pages); err != nil {
		return 0, err
	}
	return exitFor(out, verdict), nil
}

// checkInput is one source of histories: a file or standard input.
type checkInput struct {
	name string // as errors name it
	path string // "" for standard input
	// implied: standard input read because no file was named.
	implied bool
}

// each reads the input's histories one at a time and hands each to judge.
func (in checkInput) each(judge func(*idemcheck.History)) error {
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
	for {
		h, err := d.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, history.ErrNoRun) && in.implied {
			return fmt.Errorf("no history on standard input: name one history file or more, or pipe one in (%s)", checkUsage)
		}
		if err != nil {
			return err
		}
		judge(h)
	}
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
			ins = append(ins, checkInput{name: p, path: p})
		}
	}
	return ins, nil
}
