// Command demo shows idemcheck at work on nothing of one's own: it
// certifies the example orders API and three classic bugs on a throwaway
// PostgreSQL and says whether each verdict is the one expected (make demo,
// or go run ./examples/demo), and it serves the example orders API for a
// newcomer to certify by --url and --db (example-api). make install
// installs it as idemcheck-demo.
//
//	idemcheck-demo [--db DSN] [--no-color] [--html-dir DIR]
//	idemcheck-demo example-api [--port N] [--variant NAME] [--background]
//
// It is example code, a program apart from the idemcheck command, which
// links none of the examples. It serves each example by starting itself
// again (serve.ExampleCommand), so there is no other binary to build.
//
// Exit codes are idemcheck's: 0 every verdict as expected (or the API
// served), 1 some verdict not as expected, 2 bad usage, 3 PostgreSQL or an
// example could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/internal/program"
)

const usage = `idemcheck-demo shows idemcheck at work on the example APIs.

Usage:
  idemcheck-demo [--db DSN] [--no-color] [--html-dir DIR]
      certify the example orders API and three classic bugs on a throwaway
      PostgreSQL: the reference passes, each bug is caught; each one's
      HTML report goes into --html-dir (default $TMPDIR/idemcheck-demo)
  idemcheck-demo example-api [--port N] [--variant NAME] [--background]
      serve the example orders API on a throwaway PostgreSQL, to certify with
      idemcheck certify --url "$EXAMPLE_URL" --db "$EXAMPLE_DB" …;
      eval "$(idemcheck-demo example-api --background)" sets EXAMPLE_URL,
      EXAMPLE_DB and EXAMPLE_PID, and kill "$EXAMPLE_PID" stops it

Without make install: go run ./examples/demo … from a clone of idemcheck
(no release is published yet to go run from elsewhere).
`

func main() { program.Main(run) }

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var err error
	code := idemcheck.ExitHeld
	switch {
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		// Flags alone (-h included) are the demo's.
		code, err = runDemo(ctx, args, stdout, stderr)
	case args[0] == "example-api":
		code, err = runExampleAPI(ctx, args[1:], stdout, stderr)
	case args[0] == serve.ExampleCommand:
		err = serve.Example(ctx, args[1:], stderr)
	case args[0] == "help":
		fmt.Fprint(stdout, usage)
	default:
		err = idemcheck.Usagef("unknown command %q: run with no command for the demo, or example-api (idemcheck-demo help)", args[0])
	}
	if err != nil {
		if errors.Is(err, program.ErrHelp) {
			return idemcheck.ExitHeld
		}
		fmt.Fprintf(stderr, "idemcheck-demo: %v\n", err)
		return idemcheck.ExitCode(err)
	}
	return code
}

// parseFlags parses args, turning the flag package's errors into one-line
// usage errors that name the command (program.ParseFlags); -h prints the
// usage, both commands included, then the command's own flags.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	program.SetHelp(fs, func(w io.Writer) {
		fmt.Fprint(w, usage)
		fmt.Fprintf(w, "\nFlags of %s:\n", helpName(fs.Name()))
		fs.SetOutput(w)
		fs.PrintDefaults()
	})
	return program.ParseFlags("idemcheck-demo", fs, args, stdout, nil)
}

// helpName is how the help names a command: the demo is the program alone.
func helpName(command string) string {
	if command == "demo" {
		return "idemcheck-demo"
	}
	return "idemcheck-demo " + command
}
