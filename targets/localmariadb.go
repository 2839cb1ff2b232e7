package targets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mariadbDirPrefix starts the name of every MariaDB data directory made
// here, followed by the owner's pid, as dataDirPrefix does PostgreSQL's.
const mariadbDirPrefix = "idemcheck-mariadb-"

// mariadbSearchDirs are searched for mariadbd after PATH: Debian puts the
// server in /usr/sbin, which a normal user's PATH often lacks.
var mariadbSearchDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/opt/homebrew/bin", "/usr/local/bin"}

// FindMariaDB returns the path of the MariaDB server binary (mariadbd, or
// mysqld where it is MariaDB's), looked up on PATH first, then in the usual
// folders.
func FindMariaDB() (string, error) {
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	for _, dir := range mariadbSearchDirs {
		for _, name := range []string{"mariadbd", "mysqld"} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("MariaDB server binary (mariadbd) not found on PATH or in %s: install it, e.g. apt-get install mariadb-server",
		strings.Join(mariadbSearchDirs, ", "))
}

// LocalMariaDB is a throwaway MariaDB server started from the local
// binaries: an empty data directory in the temp folder, listening only on
// 127.0.0.1 at a free port, tuned for speed over durability, and removed
// by Close. It runs without grant tables (--skip-grant-tables), which is
// what makes it start in a fraction of a second: any user and password
// are let in, and stored routines and accounts cannot be created. It is
// the database of a MySQL-family target idemcheck starts, and for tests.
type LocalMariaDB struct {
	dir  string // data directory; also holds the socket and the pid file
	port int

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	log     *tailBuffer

	admin *sql.DB

	closeOnce sync.Once
	closeErr  error
}

// StartLocalMariaDB creates and starts a throwaway MariaDB server and
// returns once it accepts connections; ctx bounds the start only. Data
// directories left by killed runs are removed first. As root the server
// runs as the mysql user (or nobody). On Linux it is killed if this
// process dies, so a killed run leaves no server behind.
func StartLocalMariaDB(ctx context.Context) (*LocalMariaDB, error) {
	return StartLocalMariaDBWith(ctx, MariaDBOptions{})
}

// MariaDBOptions change how a LocalMariaDB is made.
type MariaDBOptions struct {
	// SystemTables creates the mysql schema first (mariadb-install-db),
	// for a target that creates stored routines: it costs about a second
	// more. The server still lets any user in.
	SystemTables bool
}

// StartLocalMariaDBWith is StartLocalMariaDB with options.
func StartLocalMariaDBWith(ctx context.Context, opts MariaDBOptions) (*LocalMariaDB, error) {
	bin, err := FindMariaDB()
	if err != nil {
		return nil, err
	}
	removeStaleMariaDBDirs()
	acct, err := mariadbAccount()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", mariadbDirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("cannot create a MariaDB data directory: %v: set TMPDIR to a writable folder", err)
	}
	_ = removeWhenGone(os.Getpid(), dir)
	m := &LocalMariaDB{dir: dir}
	started := false
	defer func() {
		if !started {
			_ = os.RemoveAll(dir)
		}
	}()
	if acct != nil {
		if err := os.Chown(dir, int(acct.uid), int(acct.gid)); err != nil {
			return nil, fmt.Errorf("cannot hand %s to user %s: %v: run idemcheck as a normal user", dir, acct.name, err)
		}
	}
	if opts.SystemTables {
		if err := installMariaDB(ctx, bin, dir, acct); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port on 127.0.0.1: %v", err)
		}
		err = m.startServer(ctx, bin, port, acct)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portRetries {
			return nil, err
		}
	}
	started = true
	return m, nil
}

// installMariaDB creates the mysql schema in dir with the
// mariadb-install-db found beside or on PATH.
func installMariaDB(ctx context.Context, bin, dir string, acct *account) error {
	tool, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		tool = filepath.Join(filepath.Dir(bin), "..", "bin", "mariadb-install-db")
	}
	out := newTailBuffer()
	cmd := exec.CommandContext(ctx, tool, "--no-defaults", "--datadir="+dir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve", "--skip-log-bin", "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M",
		"--innodb-flush-log-at-trx-commit=0")
	if os.Geteuid() == 0 && acct == nil {
		cmd.Args = append(cmd.Args, "--user=root")
	}
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr(acct, false)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mariadb-install-db failed (%v): %s: check the MariaDB installation", err, out.lastLines(4))
	}
	return nil
}

// startServer starts mariadbd on port and waits until it accepts
// connections. On failure the process is gone when it returns.
func (m *LocalMariaDB) startServer(ctx context.Context, bin string, port int, acct *account) error {
	m.cmd, m.exited, m.waitErr = nil, nil, nil
	m.port = port
	m.log = newTailBuffer()
	// --no-defaults: no my.cnf of the machine's may redirect the server.
	// The binary log and the doublewrite buffer are off and the redo log
	// is small and flushed lazily: nothing of a throwaway server need
	// survive a crash.
	cmd := exec.Command(bin, "--no-defaults",
		"--datadir="+m.dir, "--socket="+filepath.Join(m.dir, "mariadbd.sock"), "--pid-file="+filepath.Join(m.dir, "mariadbd.pid"),
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-grant-tables",
		"--skip-log-bin", "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M",
		"--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--max-connections=300",
		"--log-error="+filepath.Join(m.dir, "error.log"))
	if os.Geteuid() == 0 && acct == nil {
		cmd.Args = append(cmd.Args, "--user=root")
	}
	cmd.Dir = m.dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = m.log, m.log
	cmd.SysProcAttr = sysProcAttr(acct, true)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %v: check the MariaDB installation", cmd.Path, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		m.waitErr = cmd.Wait()
		close(exited)
	}(m.exited)
	if err := m.waitReady(ctx); err != nil {
		m.stop()
		return err
	}
	return nil
}

// errorLog is the server's own log, which --log-error sends to a file.
func (m *LocalMariaDB) errorLog(n int) string {
	data, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
	return joinLastLines(string(data), n, func(line string) string {
		if strings.Contains(line, "[Warning]") || strings.Contains(line, "[Note]") {
			return ""
		}
		return line
	})
}

// waitReady polls with real connections: a connection that works is the
// only proof the server is usable.
func (m *LocalMariaDB) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", m.port), time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(attemptCtx)
		cancel()
		if err == nil {
			m.admin = db
			return nil
		}
		lastErr = err
		select {
		case <-m.exited:
			_ = db.Close()
			log := m.errorLog(4)
			if strings.Contains(log, "Address already in use") || strings.Contains(log, "Can't start server: Bind") {
				return &portTakenError{fmt.Sprintf("local MariaDB could not listen on 127.0.0.1:%d (tried %d ports): %s: free some ports", m.port, portRetries+1, log)}
			}
			return fmt.Errorf("local MariaDB exited during start-up (%v): %s: fix the cause the log names", m.waitErr, log)
		case <-ctx.Done():
			_ = db.Close()
			return fmt.Errorf("start of local MariaDB was cancelled: %w", context.Cause(ctx))
		case <-time.After(readyPoll):
		}
		if time.Now().After(deadline) {
			_ = db.Close()
			return fmt.Errorf("local MariaDB on 127.0.0.1:%d was not ready after %v (last attempt: %s; log: %s): the machine may be overloaded, retry",
				m.port, readyTimeout, oneLine(lastErr.Error()), m.errorLog(4))
		}
	}
}

// Addr is the server's address, 127.0.0.1:port.
func (m *LocalMariaDB) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.port) }

// DSN returns the URL of database on this server (mysql://root@…/name);
// it needs no password, the server having no grant tables. GoDSN gives
// the same in the Go driver's form.
func (m *LocalMariaDB) DSN(database string) string {
	u, _ := MySQLDSNs("root", "", m.Addr(), database)
	return strings.Replace(u, "root:@", "root@", 1)
}

// GoDSN returns database's DSN in the Go driver's form,
// root@tcp(127.0.0.1:port)/name.
func (m *LocalMariaDB) GoDSN(database string) string {
	return "root@tcp(" + m.Addr() + ")/" + database
}

// CreateDatabase creates an empty database and returns its DSN (DSN).
// The name is quoted as an identifier, so any text is safe.
func (m *LocalMariaDB) CreateDatabase(ctx context.Context, name string) (string, error) {
	if _, err := m.admin.ExecContext(ctx, "CREATE DATABASE "+quoteMySQLName(name)); err != nil {
		return "", fmt.Errorf("cannot create database %q on the local MariaDB: %s", name, oneLine(err.Error()))
	}
	return m.DSN(name), nil
}

// DropDatabase drops a database; one that does not exist is not an error.
func (m *LocalMariaDB) DropDatabase(ctx context.Context, name string) error {
	if _, err := m.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteMySQLName(name)); err != nil {
		return fmt.Errorf("cannot drop database %q on the local MariaDB: %s", name, oneLine(err.Error()))
	}
	return nil
}

func quoteMySQLName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// Close stops the server (SIGTERM, a normal shutdown; SIGKILL of its
// group after 5 s) and removes the data directory. It is idempotent and
// safe on nil.
func (m *LocalMariaDB) Close() error {
	if m == nil {
		return nil
	}
	m.closeOnce.Do(func() {
		if m.admin != nil {
			_ = m.admin.Close()
		}
		m.stop()
		if err := os.RemoveAll(m.dir); err != nil {
			m.closeErr = fmt.Errorf("cannot remove MariaDB data directory %s: %v: remove it by hand", m.dir, err)
		}
	})
	return m.closeErr
}

// stop ends mariadbd (SIGTERM, its clean shutdown) and waits until it
// has been reaped.
func (m *LocalMariaDB) stop() { stopServer(m.cmd, m.exited, terminate) }

// removeStaleMariaDBDirs removes the data directories of runs that are
// gone, killing a server still running in one (removeStaleDirs).
func removeStaleMariaDBDirs() {
	removeStaleDirs(mariadbDirPrefix, func(dir string) { killOrphanServer(dir, "mariadbd.pid") })
}
