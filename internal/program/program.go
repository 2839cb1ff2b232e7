// Package program holds what idemcheck's programs (cmd/idemcheck, and the
// demo in examples/demo) share as processes: how one starts and ends, and
// how its flags are read. It imports only the standard library and the
// root vocabulary, so any command may use it.
package program

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Main runs a program's body, run, with the process's arguments (the
// program's name left out) and standard streams (Exec), then exits with
// the code run returned.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	os.Exit(Exec(os.Args[1:], Grace, run))
}

// Grace is how long a program may take to end once told to (SIGINT or
// SIGTERM): long enough to stop a target and a throwaway PostgreSQL and
// remove their files, short enough that an orchestrator's stop is obeyed.
const Grace = 30 * time.Second

// Exec runs run with args and the standard streams, and a context that
// SIGINT or SIGTERM ends, and returns its exit code. A signal is obeyed
// whatever run is doing: run is given grace to end by itself (to stop
// what it started, to leave no file behind); a program still busy then
// (blocked reading a file or a pipe, which no context ends), or told a
// second time, returns ExitUnavailable at once, saying so.
func Exec(args []string, grace time.Duration, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, os.Stdout, os.Stderr) }()
	var late <-chan time.Time
	var first os.Signal
	for {
		select {
		case code := <-done:
			return code
		case s := <-sigs:
			if first != nil {
				fmt.Fprintf(os.Stderr, "idemcheck: %v again: stopping now\n", s)
				return idemcheck.ExitUnavailable
			}
			first = s
			cancel()
			late = time.After(grace)
		case <-late:
			fmt.Fprintf(os.Stderr, "idemcheck: still busy %v after %v: stopping now\n", grace, first)
			return idemcheck.ExitUnavailable
		}
	}
}

// ErrHelp ends a command that printed its help: exit 0.
var ErrHelp = errors.New("help shown")

// ParseFlags parses the flags args of the command fs of the program prog
// ("idemcheck", "idemcheck-demo"), turning the flag package's errors into
// one-line usage errors that name the command; -h prints the help on
// stdout (the command's own, SetHelp, else its flags) and returns
// ErrHelp. An unknown flag is answered with the nearest one the command
// has. gone names flags the command no longer has, each with what to do
// instead.
func ParseFlags(prog string, fs *flag.FlagSet, args []string, stdout io.Writer, gone map[string]string) error {
	if err := ParseFlagsArgs(prog, fs, args, stdout, gone); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return idemcheck.Usagef("%s: unexpected argument %q (see %s %s -h)", fs.Name(), fs.Arg(0), prog, fs.Name())
	}
	return nil
}

// helps are the commands' own helps, by flag set (SetHelp).
var helps sync.Map

// SetHelp makes help what -h prints for the command fs.
func SetHelp(fs *flag.FlagSet, help func(w io.Writer)) { helps.Store(fs, help) }

// ParseFlagsArgs is ParseFlags for a command that takes arguments after
// its flags (fs.Args).
func ParseFlagsArgs(prog string, fs *flag.FlagSet, args []string, stdout io.Writer, gone map[string]string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			if h, ok := helps.Load(fs); ok {
				h.(func(io.Writer))(stdout)
			} else {
				fmt.Fprintf(stdout, "Usage of %s %s:\n", prog, fs.Name())
				fs.PrintDefaults()
			}
			return ErrHelp
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			if gone[name] != "" {
				return idemcheck.Usagef("%s: --%s is not a flag of %s: %s", fs.Name(), name, fs.Name(), gone[name])
			}
			if near := Nearest(fs, name); near != "" {
				return idemcheck.Usagef("%s: --%s is not a flag of %s: did you mean --%s? (see %s %s -h)", fs.Name(), name, fs.Name(), near, prog, fs.Name())
			}
		}
		return idemcheck.Usagef("%s: %v (see %s %s -h)", fs.Name(), err, prog, fs.Name())
	}
	return nil
}

// Nearest is the flag of fs whose name is closest to name by edit
// distance, when it is close enough to be the one meant (at most a third
// of its letters, and at least one, differ); else "".
func Nearest(fs *flag.FlagSet, name string) string {
	best, bestDist := "", 0
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if d <= max(1, len(f.Name)/3) && (best == "" || d < bestDist) {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the edit distance between a and b in bytes (flag names
// are ASCII), a swap of two neighbours counting as one edit, as typing
// makes it one mistake.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
