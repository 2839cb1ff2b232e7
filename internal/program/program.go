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
// one-line usage errors that name the command; -h prints the flags on
// stdout and returns ErrHelp. gone names flags the command no longer has,
// each with what to do instead.
func ParseFlags(prog string, fs *flag.FlagSet, args []string, stdout io.Writer, gone map[string]string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage of %s %s:\n", prog, fs.Name())
			fs.PrintDefaults()
			return ErrHelp
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && gone[name] != "" {
			return idemcheck.Usagef("%s: --%s is not a flag of %s: %s", fs.Name(), name, fs.Name(), gone[name])
		}
		return idemcheck.Usagef("%s: %v (see %s %s -h)", fs.Name(), err, prog, fs.Name())
	}
	if fs.NArg() > 0 {
		return idemcheck.Usagef("%s: unexpected argument %q (see %s %s -h)", fs.Name(), fs.Arg(0), prog, fs.Name())
	}
	return nil
}
