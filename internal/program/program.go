// Package program holds what idemcheck's programs (cmd/idemcheck, and the
// demo in examples/demo) share as processes. It imports only the standard
// library, so any command may use it.
package program

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
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
