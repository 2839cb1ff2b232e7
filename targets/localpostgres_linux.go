package targets

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr runs initdb and postgres as acct (when idemcheck is root) and
// makes them die with idemcheck: Pdeathsig sends SIGKILL when the thread
// that started them exits, which in a Go program happens when the process
// exits, since the runtime keeps its threads. The postmaster also leads its
// own process group, so a Ctrl-C at the terminal reaches idemcheck only and
// idemcheck decides when to stop the server (after its last count), and so
// a kill of the group takes the backends too.
func sysProcAttr(acct *account, server bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: server}
	if acct != nil {
		// Groups left empty: the child also drops root's supplementary groups.
		attr.Credential = &syscall.Credential{Uid: acct.uid, Gid: acct.gid}
	}
	return attr
}

// killOrphanPostmaster kills a postmaster still running from a stale data
// directory, as happens if the parent-death signal was lost. The pid in
// postmaster.pid is trusted only if that process's working folder is dir
// (postgres changes into its data directory), so a reused pid is never hit.
func killOrphanPostmaster(dir string) { killOrphanServer(dir, "postmaster.pid") }

// killOrphanServer kills a server still running from a stale data
// directory, its pid read from the first line of pidFile there and
// trusted only if that process's working folder is dir (postgres and
// mariadbd both change into their data directory).
func killOrphanServer(dir, pidFile string) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil || filepath.Clean(cwd) != filepath.Clean(dir) {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
