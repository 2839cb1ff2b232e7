// Command idemcheck certifies that an HTTP API is safe to retry with an
// Idempotency-Key: it sends what production sends (same-key bursts, replies
// cut after commit, retries), records every attempt, counts effects in the
// database and reports each broken promise with its evidence.
//
// Its commands go from flags to a configuration, certify, render the
// result (internal/render) and map the verdict to an exit code. It never
// imports examples/: the demo and the example API are a program of their
// own (examples/demo), so the binary links no example code.
//
// Exit codes: 0 every check held, 1 anomalies found, 2 bad usage or
// configuration, 3 the harness or the target could not run, 4 nothing
// proved either way.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/program"
	"github.com/idemcheck/idemcheck/internal/render"
)

const usage = `idemcheck proves whether an HTTP API is safe to retry.

Usage:
  idemcheck certify --url URL --path PATH --body TEMPLATE [--db DSN --effect-sql SQL …]
                                 certify one endpoint of a running API
  idemcheck certify --cmd COMMAND …
                                 the same, idemcheck starting the API on a throwaway database
                                 of its own, to crash it and stall it (or --image IMAGE)
  idemcheck init --openapi SPEC  write a suite file from an OpenAPI description
  idemcheck run -f SUITE.yaml    certify every endpoint of a suite file
  idemcheck run --openapi SPEC --url URL   certify every unsafe operation of a description
  idemcheck soak --url URL …     a rate of intents for a while, a share of replies cut and retried
  idemcheck check HISTORY.jsonl  check a recorded history again, offline
  idemcheck estimate …           what unrecognised retries cost
  idemcheck version              the version, commit and Go version of this build (also --version)
  idemcheck help COMMAND         a command's usage, examples and flags in groups (also COMMAND --help)
  idemcheck completion bash|zsh|fish   a shell completion script
  idemcheck man                  the manual page (roff; make man writes man/idemcheck.1)

Common certify flags: --url, --cmd or --image (the target); --path, --body, --header (the
request); --db, --effect-sql, --effect-arg (where effects are counted); --checks, --lease
(the checks); --json, --junit, --html, --history (reports).

To see it at work first: idemcheck-demo (make install puts it beside idemcheck, from a clone
of this repository) certifies an example API and three classic bugs, and idemcheck-demo
example-api serves that API on a throwaway PostgreSQL for you to certify.

Exit codes: 0 every check held, 1 anomalies found, 2 bad usage or configuration,
3 the harness or the target could not run, 4 nothing proved either way (a check's
fault never landed, every check skipped, an empty history).
`

// commands are the commands usage lists, in its order.
var commands = []string{"certify", "init", "run", "soak", "check", "estimate", "version", "help", "completion", "man"}

func main() { program.Main(run) }

// run is main without the process: it returns the exit code.
//
// Everything it writes, on its outputs and in the files it is asked for,
// passes through one idemcheck.Redactor, which the command teaches the
// secrets it is given and the run teaches those it meets (redactorOf).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	red := idemcheck.NewRedactor()
	rout, rerr := red.Writer(stdout), red.Writer(stderr)
	defer rerr.Flush()
	defer rout.Flush()
	return runRedacted(context.WithValue(ctx, redactorKey{}, red), args, rout, rerr)
}

// redactorKey holds a command's idemcheck.Redactor in its context.
type redactorKey struct{}

// redactorOf is the command's idemcheck.Redactor (run), or nil outside
// run, which hides nothing.
func redactorOf(ctx context.Context) *idemcheck.Redactor {
	red, _ := ctx.Value(redactorKey{}).(*idemcheck.Redactor)
	return red
}

// runRedacted is run with its outputs redacted.
func runRedacted(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return idemcheck.ExitUsage
	}
	var err error
	var code int
	switch args[0] {
	case "certify":
		code, err = runCertify(ctx, args[1:], stdout, stderr)
	case "init":
		code, err = runInit(ctx, args[1:], stdout, stderr)
	case "run":
		code, err = runSuite(ctx, args[1:], stdout, stderr)
	case "soak":
		code, err = runSoak(ctx, args[1:], stdout, stderr)
	case "check":
		code, err = runCheck(args[1:], stdout, stderr)
	case "estimate":
		code, err = runEstimate(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		code, err = runVersion(args[1:], stdout)
	case "completion":
		code, err = runCompletion(args[1:], stdout)
	case "man":
		code, err = runMan(args[1:], stdout)
	case "help", "-h", "--help":
		if len(args) > 1 && args[1] != "help" {
			// help CMD is CMD --help, so the two never disagree.
			if !slices.Contains(commands, args[1]) {
				err = idemcheck.Usagef("help: unknown command %q: use %s", args[1], strings.Join(commands, ", "))
				break
			}
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return idemcheck.ExitHeld
	default:
		err = idemcheck.Usagef("unknown command %q: use %s (idemcheck help for what each does)", args[0], strings.Join(commands, ", "))
	}
	if err != nil {
		if errors.Is(err, program.ErrHelp) || errors.Is(err, errCollected) {
			return idemcheck.ExitHeld
		}
		// An error may quote the target (its status line, its output).
		fmt.Fprintf(stderr, "idemcheck: %s\n", render.Printable(inFlagWords(err)))
		return idemcheck.ExitCode(err)
	}
	return code
}
