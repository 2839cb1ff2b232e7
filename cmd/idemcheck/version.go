package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/idemcheck/idemcheck"
)

// tool is this binary's build, read once.
var tool = idemcheck.BuildTool()

// historyStart is when a recorded run began: its first attempt's start.
func historyStart(h *idemcheck.History) time.Time {
	var t time.Time
	for _, a := range h.Attempts {
		if !a.Start.IsZero() && (t.IsZero() || a.Start.Before(t)) {
			t = a.Start
		}
	}
	return t
}

func runVersion(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlagsArgs(fs, args, stdout); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, idemcheck.Usagef("version takes no arguments: idemcheck version")
	}
	fmt.Fprintln(stdout, tool.String())
	return idemcheck.ExitHeld, nil
}
