//go:build unix

package targets

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// serverAccount returns the user initdb and postgres must run as, or nil to
// run them as ourselves. PostgreSQL refuses to start as root, so root hands
// the cluster to the postgres user, or to nobody where no such user exists.
func serverAccount() (*account, error) {
	acct, err := accountOf("postgres", "nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root and neither a postgres nor a nobody user exists, and PostgreSQL refuses to run as root: create one (useradd --system postgres) or run idemcheck as a normal user")
	}
	return acct, nil
}

// mariadbAccount is serverAccount for MariaDB, which refuses root too: the
// mysql user Debian's package creates, else nobody.
func mariadbAccount() (*account, error) {
	acct, err := accountOf("mysql", "nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root and neither a mysql nor a nobody user exists, and MariaDB refuses to run as root: create one (useradd --system mysql) or run idemcheck as a normal user")
	}
	return acct, nil
}

// accountOf returns the first of names that exists, or nil when not root.
func accountOf(names ...string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, errors.New("no such user")
}

// processAlive reports whether pid exists. EPERM means it exists but
// belongs to someone else, which still makes its directory not ours to take.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// terminate asks a server for a normal shutdown.
func terminate(p *os.Process) error {
	return p.Signal(syscall.SIGTERM)
}

// interrupt asks the postmaster for a fast shutdown.
func interrupt(p *os.Process) error {
	return p.Signal(syscall.SIGINT)
}

// killGroup kills the postmaster's process group (it is the leader), then
// the postmaster itself in case it had not got its group yet.
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
