package targets

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Timings of a local cluster's life. They are variables only so tests can
// shorten them.
var (
	// readyTimeout bounds the wait for a started postmaster to accept
	// connections; it normally takes about 50 ms.
	readyTimeout = 30 * time.Second
	// readyPoll is how often readiness is probed: short, because start-up
	// time is spent in this wait.
	readyPoll = 20 * time.Millisecond
	// shutdownGrace is how long a fast shutdown may take before the server
	// is killed; a throwaway cluster has nothing worth waiting longer for.
	shutdownGrace = 5 * time.Second
)

// portRetries is how many more ports are tried when postgres cannot bind
// the one picked: the port is free when picked but another process can take
// it before postgres binds it.
const portRetries = 3

// dataDirPrefix starts the name of every data directory made here, followed
// by the owner's pid, so a later run can recognise directories left by a
// killed run and remove them.
const dataDirPrefix = "idemcheck-pg-"

// postgresSearchGlobs are the usual install folders of the server binaries,
// searched after PATH: Debian/Ubuntu, source builds, Homebrew (Apple silicon
// and Intel), RHEL/Fedora PGDG packages. A variable so tests can point it
// at a fake tree.
var postgresSearchGlobs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/local/pgsql/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
	"/usr/pgsql-*/bin",
}

// FindPostgres returns the folder holding the PostgreSQL server binaries
// initdb and postgres. It looks on PATH first, so a user can pick a version,
// then in the usual install folders, which package managers (Debian's
// postgresql package among them) do not put on PATH; among several
// versions the highest wins. Both binaries must be in the same folder
// because initdb runs the postgres next to it.
func FindPostgres() (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		if hasServerBinaries(dir) {
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			return dir, nil
		}
	}
	for _, pattern := range postgresSearchGlobs {
		matches, _ := filepath.Glob(pattern)
		slices.SortFunc(matches, func(a, b string) int {
			// Highest version first; the name breaks ties so the
			// order never depends on the file system.
			return cmp.Or(slices.Compare(versionKey(b), versionKey(a)), strings.Compare(a, b))
		})
		for _, dir := range matches {
			if hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found on PATH or in %s: install them, e.g. apt-get install postgresql",
		strings.Join(postgresSearchGlobs, ", "))
}

// hasServerBinaries reports whether dir holds executable initdb and postgres.
func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0) {
			return false
		}
	}
	return true
}

// versionKey extracts the numbers in a path ("/usr/lib/postgresql/15/bin" ->
// [15], "postgresql@14" -> [14]) so versions sort numerically: 9.6 < 15.
func versionKey(path string) []int {
	var key []int
	for _, field := range strings.FieldsFunc(path, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(field); err == nil {
			key = append(key, n)
		}
	}
	return key
}

// LocalPostgres is a throwaway PostgreSQL cluster started from the local
// binaries: a fresh data directory in the temp folder, listening only on
// 127.0.0.1 at a free port, tuned for speed over durability (fsync off), and
// removed by Close. It is for runs given no database (ProvideDatabase) and for tests.
type LocalPostgres struct {
	dir  string // data directory; also holds the Unix socket
	port int

	cmd     *exec.Cmd
	exited  chan struct{} // closed once the postmaster has been reaped
	waitErr error         // the postmaster's exit status, set before exited closes
	log     *tailBuffer   // the postmaster's stderr and stdout

	// admin is a small pool on the "postgres" database for CREATE and DROP
	// DATABASE, shared so concurrent callers need no connection each.
	admin *pgxpool.Pool

	closeOnce sync.Once
	closeErr  error
}

// StartLocalPostgres creates and starts a throwaway cluster and returns once
// it accepts connections. ctx bounds the start only: the cluster runs until
// Close. Data directories left by earlier runs that were killed are removed
// first. Errors are one line and say what to do.
//
// As root it runs initdb and postgres as the postgres user (or nobody),
// because PostgreSQL refuses to run as root. On Linux the postmaster is
// killed if this process dies, so a killed run leaves no server behind.
func StartLocalPostgres(ctx context.Context) (*LocalPostgres, error) {
	bin, err := FindPostgres()
	if err != nil {
		return nil, err
	}
	removeStaleDataDirs()

	acct, err := serverAccount()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", dataDirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("cannot create a PostgreSQL data directory: %v: set TMPDIR to a writable folder", err)
	}
	// Best effort: without the watcher, the next run's sweep still
	// removes what a killed run left.
	_ = removeWhenGone(os.Getpid(), dir)
	p := &LocalPostgres{dir: dir}
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

	if err := runInitdb(ctx, bin, dir, acct); err != nil {
		return nil, err
	}

	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port on 127.0.0.1: %v", err)
		}
		err = p.startPostmaster(ctx, bin, port, acct)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portRetries {
			return nil, err
		}
	}

	adminCfg, err := pgxpool.ParseConfig(p.DSN("postgres"))
	if err == nil {
		adminCfg.MaxConns = 4
		p.admin, err = pgxpool.NewWithConfig(ctx, adminCfg)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("local PostgreSQL started but cannot be used: %v", err)
	}
	started = true
	return p, nil
}

// pickPort returns a loopback port that is free right now. A variable so a
// test can hand out a taken port and exercise the retry.
var pickPort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runInitdb creates the cluster. --no-sync and trust authentication are
// fine because the cluster is throwaway and reachable only from loopback
// and its own socket folder.
func runInitdb(ctx context.Context, bin, dir string, acct *account) error {
	out := newTailBuffer()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = dir // the working folder must be reachable by the unprivileged user
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr(acct, false)
	// initdb's own children keep the output pipe open after a cancelled
	// initdb is killed; do not wait for them forever.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initdb of a local PostgreSQL was cancelled: %w", context.Cause(ctx))
		}
		hint := "check the PostgreSQL installation in " + bin
		if acct != nil {
			hint = fmt.Sprintf("check that user %s can enter %s (set TMPDIR to a folder it can reach)", acct.name, filepath.Dir(dir))
		}
		if log := out.lastLines(4); log != noOutput {
			hint = log + ": " + hint
		}
		return fmt.Errorf("initdb failed (%v): %s", err, hint)
	}
	return nil
}

// errPortTaken marks a start that failed only because the port was taken;
// errors.Is finds it in a portTakenError, whose message stays the user's.
var errPortTaken = errors.New("port taken")

type portTakenError struct{ msg string }

func (e *portTakenError) Error() string        { return e.msg }
func (e *portTakenError) Is(target error) bool { return target == errPortTaken }

// startPostmaster starts postgres on port and waits until it accepts
// connections. On failure the process is gone when it returns.
func (p *LocalPostgres) startPostmaster(ctx context.Context, bin string, port int, acct *account) error {
	// Forget the previous attempt's process (already reaped) so that stop
	// never waits for a process that failed to start.
	p.cmd, p.exited, p.waitErr = nil, nil, nil
	p.port = port
	p.log = newTailBuffer()
	// -F turns fsync off; with synchronous_commit and full_page_writes off
	// too, commits cost no disk flush. max_connections leaves room for
	// pools of many parallel tests.
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", p.dir, "-p", strconv.Itoa(port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-F",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Dir = p.dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = sysProcAttr(acct, true)
	// Backends inherit the log pipe; after the postmaster is reaped they
	// get this long to exit before Wait stops waiting for the pipe.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %v: check the PostgreSQL installation", cmd.Path, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		p.waitErr = cmd.Wait()
		close(exited)
	}(p.exited)

	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return err
	}
	return nil
}

// waitReady polls with real connections rather than watching the log:
// a connection that works is the only proof the server is usable.
func (p *LocalPostgres) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	dsn := p.DSN("postgres")
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(attemptCtx, dsn)
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		lastErr = err
		select {
		case <-p.exited:
			if p.log.contains("Address already in use") || p.log.contains("could not create any TCP/IP sockets") {
				return &portTakenError{fmt.Sprintf("local PostgreSQL could not listen on 127.0.0.1:%d (tried %d ports): %s: free some ports",
					p.port, portRetries+1, p.log.lastLines(4))}
			}
			return fmt.Errorf("local PostgreSQL exited during start-up (%v): %s: fix the cause the log names",
				p.waitErr, p.log.lastLines(4))
		case <-ctx.Done():
			return fmt.Errorf("start of local PostgreSQL was cancelled: %w", context.Cause(ctx))
		case <-time.After(readyPoll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("local PostgreSQL on 127.0.0.1:%d was not ready after %v (last attempt: %s; log: %s): the machine may be overloaded, retry",
				p.port, readyTimeout, oneLine(lastErr.Error()), p.log.lastLines(4))
		}
	}
}

// DSN returns the URL of database on this cluster. It needs no password:
// the cluster trusts loopback connections.
func (p *LocalPostgres) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, url.PathEscape(database))
}

// CreateDatabase creates an empty database and returns its DSN. Callers
// generate name; it is quoted as an identifier, so any text is safe.
func (p *LocalPostgres) CreateDatabase(ctx context.Context, name string) (string, error) {
	if _, err := p.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("cannot create database %q on the local PostgreSQL: %s", name, oneLine(err.Error()))
	}
	return p.DSN(name), nil
}

// DropDatabase drops a database, ending any connection still open to it
// (WITH (FORCE)), so a test's leftover pool cannot block its cleanup. A
// database that does not exist is not an error, which makes it safe in
// cleanup paths that may run twice.
func (p *LocalPostgres) DropDatabase(ctx context.Context, name string) error {
	if _, err := p.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("cannot drop database %q on the local PostgreSQL: %s", name, oneLine(err.Error()))
	}
	return nil
}

// Close stops the cluster with a fast shutdown (SIGINT to the postmaster:
// open sessions are ended, nothing is written that a throwaway cluster
// needs), kills it if that takes more than 5 s, and removes the data
// directory. It is idempotent and safe on nil.
func (p *LocalPostgres) Close() error {
	if p == nil {
		return nil
	}
	p.closeOnce.Do(func() {
		if p.admin != nil {
			p.admin.Close()
		}
		p.stop()
		if err := os.RemoveAll(p.dir); err != nil {
			p.closeErr = fmt.Errorf("cannot remove PostgreSQL data directory %s: %v: remove it by hand", p.dir, err)
		}
	})
	return p.closeErr
}

// stop ends the postmaster (SIGINT, its fast shutdown) and waits until it
// has been reaped.
func (p *LocalPostgres) stop() { stopServer(p.cmd, p.exited, interrupt) }

// childEnv is the environment of initdb and postgres: PG* variables are
// dropped so a user's PGDATA or PGPORT cannot redirect the throwaway
// cluster, and the C locale keeps messages in English, which the bind
// failure check reads.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

// removeStaleDataDirs removes the PostgreSQL data directories of runs that
// are gone, killing a postmaster still running in one (removeStaleDirs).
func removeStaleDataDirs() { removeStaleDirs(dataDirPrefix, killOrphanPostmaster) }

// account is the unprivileged user initdb and postgres run as when
// idemcheck runs as root.
type account struct {
	name     string
	uid, gid uint32
}

// oneLine joins a multi-line message so every error stays on one line.
func oneLine(s string) string {
	return blankRuns.ReplaceAllString(strings.TrimSpace(s), " ")
}

// tailBuffer keeps the last bytes written to it, enough for the lines that
// explain a failed start, without letting a chatty server grow memory.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBufferSize = 32 << 10

// noOutput stands for an empty log in error messages.
const noOutput = "(no output)"

func newTailBuffer() *tailBuffer { return &tailBuffer{} }

// Write implements io.Writer; it never fails, so the server never blocks
// on its log.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - tailBufferSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) contains(s string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Contains(t.buf, []byte(s))
}

// logLinePrefix matches the time stamp and pid postgres puts before each
// log line; they only lengthen a one-line error.
var logLinePrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \S+ \[\d+\] `)

// lastLines returns the last n meaningful lines joined with " | ", or
// "(no output)". The closing "database system is shut down" is skipped: it
// follows every failure and would push the cause out of view.
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	text := string(t.buf)
	t.mu.Unlock()
	return joinLastLines(text, n, func(line string) string {
		line = strings.Join(strings.Fields(logLinePrefix.ReplaceAllString(line, "")), " ")
		if line == "LOG: database system is shut down" {
			return ""
		}
		return line
	})
}

// joinLastLines returns the last n lines of a log that clean keeps, joined
// with " | ", or noOutput. clean gets each line trimmed and returns it as
// an error message shows it, or "" to skip it; nil keeps every non-blank
// line.
func joinLastLines(text string, n int, clean func(string) string) string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && clean != nil {
			line = clean(line)
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return noOutput
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
