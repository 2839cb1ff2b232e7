//go:build unix && !linux

package targets

import "syscall"

// sysProcAttr runs initdb and postgres as acct when idemcheck is root. The
// postmaster leads its own process group so a terminal Ctrl-C reaches only
// idemcheck, which stops the server itself. Outside Linux there is no
// parent-death signal: a killed run leaves a server that the next run's
// stale-directory sweep cannot identify, so it only removes the directory.
func sysProcAttr(acct *account, server bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: server}
	if acct != nil {
		attr.Credential = &syscall.Credential{Uid: acct.uid, Gid: acct.gid}
	}
	return attr
}

// killOrphanPostmaster does nothing outside Linux: there is no portable way
// to check that the pid in postmaster.pid is still that server.
func killOrphanPostmaster(string) {}

func killOrphanServer(string, string) {}
