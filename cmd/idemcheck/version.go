package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/idemcheck/idemcheck"
)

// buildTool reads what the Go toolchain recorded in the binary: the module
// version for `go install …@v1.2.0`, "(devel)" with the VCS commit for a
// build from a checkout (make build, make install).
func buildTool() idemcheck.Tool {
	t := idemcheck.Tool{Name: "idemcheck", Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return t
	}
	if v := bi.Main.Version; v != "" {
		t.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			t.Commit = s.Value
			if len(t.Commit) > 12 {
				t.Commit = t.Commit[:12]
			}
		case "vcs.modified":
			t.Modified = s.Value == "true"
		}
	}
	return t
}

// tool is this binary's build, read once.
var tool = buildTool()

// stamp writes the tool and the run's start time into a report.
func stamp(r *idemcheck.Report, started time.Time) {
	r.Tool = tool
	if r.StartedAt.IsZero() {
		r.StartedAt = started.UTC().Truncate(time.Millisecond)
	}
}

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
	if len(args) > 0 {
		return 0, idemcheck.Usagef("version takes no arguments: idemcheck version")
	}
	fmt.Fprintln(stdout, tool.String())
	return idemcheck.ExitHeld, nil
}
