//go:build !unix

package targets

import (
	"errors"
	"os/exec"
	"syscall"
)

// errNoProcessTargets explains why StartProcess fails: process groups,
// SIGSTOP and /bin/sh are what crash, pause and restart are built on.
var errNoProcessTargets = errors.New("process targets need a Unix system (Linux or macOS): start the target yourself and pass its URL")

// targetCommand always fails outside Unix.
func targetCommand(string) (*exec.Cmd, error) { return nil, errNoProcessTargets }

// signalGroup always fails outside Unix; it is never reached, because no
// target can be started.
func signalGroup(int, syscall.Signal) error { return errNoProcessTargets }

// Placeholders for the Unix signals, so the shared code compiles.
const (
	sigTerm = syscall.SIGTERM
	sigStop = syscall.Signal(19)
	sigCont = syscall.Signal(18)
)
