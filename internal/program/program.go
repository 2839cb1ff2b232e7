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

	"github.com/idemcheck/idemcheck"
)

// Main runs a program's body, run, with the process's arguments (the
// program's name left out) and standard streams, and a context that SIGINT
// or SIGTERM ends; then it exits with the code run returned.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
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
