//go:build !unix

package targets

import (
	"os"
	"syscall"
)

// serverAccount never switches users outside Unix.
func serverAccount() (*account, error) { return nil, nil }

func mariadbAccount() (*account, error) { return nil, nil }

func terminate(p *os.Process) error { return p.Kill() }

// sysProcAttr sets nothing outside Unix.
func sysProcAttr(*account, bool) *syscall.SysProcAttr { return nil }

// processAlive answers true outside Unix, so the stale-directory sweep
// never removes a directory it cannot prove abandoned.
func processAlive(int) bool { return true }

// interrupt is unsupported outside Unix; the caller then kills.
func interrupt(p *os.Process) error { return p.Signal(os.Interrupt) }

// killGroup kills the postmaster; its backends follow when they notice.
func killGroup(p *os.Process) { _ = p.Kill() }

// killOrphanPostmaster does nothing outside Unix.
func killOrphanPostmaster(string) {}

func killOrphanServer(string, string) {}
