package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// runMan prints idemcheck's manual page in roff, from the text its help
// prints (the top-level usage, each command's help and its flags), so the
// two never drift apart: make man writes it to man/idemcheck.1.
func runMan(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("man", flag.ContinueOnError)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	writeMan(stdout)
	return idemcheck.ExitHeld, nil
}

// roff escapes text for a roff page: backslashes, and a line that would
// start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func writeMan(w io.Writer) {
	v := tool.Version
	if v == "" {
		v = "devel"
	}
	fmt.Fprintf(w, ".TH IDEMCHECK 1 \"\" \"idemcheck %s\" \"User Commands\"\n", roff(v))
	fmt.Fprintln(w, ".SH NAME\nidemcheck \\- prove whether an HTTP API is safe to retry")
	fmt.Fprintln(w, ".SH SYNOPSIS")
	for _, c := range commands {
		for _, u := range helps[c].usage {
			fmt.Fprintf(w, ".PP\n.B %s\n", roff(u))
		}
	}
	fmt.Fprintln(w, ".SH DESCRIPTION")
	fmt.Fprintln(w, roff("idemcheck does to an API what production does (same-key bursts released at one instant, replies cut after the server committed, crashes between claim and commit), records every attempt, counts in the database what each request really did, and reports every broken promise with the attempts that witness it."))
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, c := range commands {
		h, ok := helps[c]
		if !ok {
			continue
		}
		fmt.Fprintf(w, ".SS %s\n", c)
		if h.summary != "" {
			fmt.Fprintf(w, "%s\n", roff(strings.ReplaceAll(h.summary, "\n", " ")))
		}
		if len(h.examples) > 0 {
			fmt.Fprintln(w, ".PP\nExamples:\n.PP\n.nf\n.RS")
			fmt.Fprintln(w, roff(strings.Join(h.examples, "\n")))
			fmt.Fprintln(w, ".RE\n.fi")
		}
		if h.notes != "" {
			fmt.Fprintf(w, ".PP\n%s\n", roff(strings.ReplaceAll(h.notes, "\n", " ")))
		}
		for _, g := range groupFlags(flagsOf(c)) {
			fmt.Fprintf(w, ".PP\n.I %s\n", roff(g.title))
			for _, f := range g.flags {
				name, usage := flag.UnquoteUsage(f)
				fmt.Fprintf(w, ".TP\n.B %s", roff(dashed(f.Name)))
				if name != "" {
					fmt.Fprintf(w, " \" %s\"", roff(name))
				}
				fmt.Fprintln(w)
				fmt.Fprint(w, roff(usage))
				if !isZeroDefault(f) {
					fmt.Fprintf(w, " (default %s)", roff(quoteDefault(f)))
				}
				fmt.Fprintln(w)
			}
		}
	}
	fmt.Fprintln(w, ".SH EXIT STATUS")
	fmt.Fprintln(w, roff("0 every check held, 1 anomalies found, 2 bad usage or configuration, 3 the harness or the target could not run, 4 nothing proved either way."))
	fmt.Fprintln(w, ".SH SEE ALSO")
	fmt.Fprintln(w, roff("README.md and docs/ in idemcheck's repository: docs/certify.md for every flag of certify."))
}
