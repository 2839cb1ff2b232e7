package idemcheck

import (
	"errors"
	"fmt"
)

// Exit codes are a stable contract with CI pipelines.
const (
	// ExitHeld: every check held.
	ExitHeld = 0
	// ExitAnomalies: the target broke the contract; the report says how.
	ExitAnomalies = 1
	// ExitUsage: bad usage or configuration; nothing was sent, or what was
	// sent is discarded.
	ExitUsage = 2
	// ExitUnavailable: the harness or the target could not run, or the
	// target answered none of the attempts.
	ExitUnavailable = 3
	// ExitInconclusive: the run proved nothing either way: some check's
	// scenario did not happen (inconclusive), every check was skipped, or
	// the history was empty. No anomaly was found.
	ExitInconclusive = 4
)

// Error is an error with the exit code it maps to and a one-line message
// that names what was wrong and how to fix it.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Usagef returns a configuration error (exit code 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Unavailablef returns an error of a harness or target that could not run (exit code 3).
func Unavailablef(format string, args ...any) error {
	return &Error{Code: ExitUnavailable, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error to its exit code: an *Error's own, else 3.
func ExitCode(err error) int {
	if err == nil {
		return ExitHeld
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitUnavailable
}
