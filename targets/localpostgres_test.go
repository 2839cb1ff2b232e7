package targets

import (
	"github.com/idemcheck/idemcheck/internal/testctx"

	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// startTestPostgres starts a real cluster and closes it when the test ends.
func startTestPostgres(t *testing.T) *LocalPostgres {
	t.Helper()
	// initdb and the first start take seconds on a quiet machine and over a
	// minute on a loaded one; only the test binary's own -timeout bounds them.
	ctx := testctx.UntilDeadline(t)
	start := time.Now()
	p, err := StartLocalPostgres(ctx)
	require.NoError(t, err)
	t.Logf("local PostgreSQL on port %d ready in %v", p.port, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// ourDataDirs lists the data directories this test process owns.
func ourDataDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", dataDirPrefix, os.Getpid())))
	require.NoError(t, err)
	return dirs
}

// processesIn returns the pids of processes whose working folder is dir:
// the postmaster and every backend change into the data directory.
func processesIn(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to inspect: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && filepath.Clean(cwd) == filepath.Clean(dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func queryInt(t *testing.T, dsn, sql string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, sql).Scan(&n))
	return n
}

func TestFindPostgresFindsTheBinaries(t *testing.T) {
	dir, err := FindPostgres()
	require.NoError(t, err)
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, "FindPostgres returned %s", dir)
		assert.NotZero(t, fi.Mode().Perm()&0o111, "%s is not executable", name)
	}
}

// fakeBinDir makes a folder holding executable files with the given names.
func fakeBinDir(t *testing.T, dir string, names ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
	}
	return dir
}

func TestFindPostgresSearchOrder(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "16"} {
		fakeBinDir(t, filepath.Join(root, "lib", v, "bin"), "initdb", "postgres")
	}
	fakeBinDir(t, filepath.Join(root, "lib", "17", "bin"), "initdb") // no server: skipped
	fakeBinDir(t, filepath.Join(root, "pgsql-10", "bin"), "initdb", "postgres")
	saved := postgresSearchGlobs
	t.Cleanup(func() { postgresSearchGlobs = saved })
	postgresSearchGlobs = []string{filepath.Join(root, "lib", "*", "bin"), filepath.Join(root, "pgsql-*", "bin")}

	t.Setenv("PATH", t.TempDir())
	dir, err := FindPostgres()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "lib", "16", "bin"), dir, "highest complete version of the first folder pattern")

	onPath := fakeBinDir(t, filepath.Join(root, "path"), "initdb", "postgres")
	t.Setenv("PATH", t.TempDir()+string(os.PathListSeparator)+onPath)
	dir, err = FindPostgres()
	require.NoError(t, err)
	assert.Equal(t, onPath, dir, "PATH comes first")
}

// hidePostgres makes FindPostgres find nothing for the rest of the test.
func hidePostgres(t *testing.T) {
	saved := postgresSearchGlobs
	t.Cleanup(func() { postgresSearchGlobs = saved })
	postgresSearchGlobs = []string{filepath.Join(t.TempDir(), "none", "*")}
	t.Setenv("PATH", t.TempDir())
}

func TestFindPostgresNotFound(t *testing.T) {
	hidePostgres(t)
	_, err := FindPostgres()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install postgresql")
	assert.NotContains(t, err.Error(), "\n")
}

func TestProvideDatabaseWithNeitherDSNNorBinaries(t *testing.T) {
	hidePostgres(t)
	db, err := ProvideDatabase(context.Background(), "")
	require.Error(t, err)
	assert.Nil(t, db)
	assert.ErrorIs(t, err, ErrNoDatabase)
	assert.Equal(t, "no database: set DSN, or install the PostgreSQL server binaries (initdb, postgres) on PATH, e.g. apt-get install postgresql", err.Error())
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe, "the way out that is the caller's is a setting, said in the caller's words")
	assert.Equal(t, "no database: pass --db DSN (or set DATABASE_URL), or install the PostgreSQL server binaries (initdb, postgres) on PATH, e.g. apt-get install postgresql",
		fe.Text(map[idemcheck.Field]idemcheck.Word{"DSN": {Name: "--db", Set: "pass --db DSN (or set DATABASE_URL)"}}))
}

func TestStartAndCloseLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := StartLocalPostgres(ctx)
	require.NoError(t, err)
	dir, pid := p.dir, p.cmd.Process.Pid
	assert.DirExists(t, dir)
	assert.True(t, processAlive(pid))

	// Leave a session open: Close must end it, not wait for it.
	dsn, err := p.CreateDatabase(ctx, "work")
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE effects (id int); INSERT INTO effects VALUES (1)")
	require.NoError(t, err)
	assert.NotEmpty(t, processesIn(t, dir), "postmaster and backend run in the data directory")

	start := time.Now()
	require.NoError(t, p.Close())
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	assert.NoDirExists(t, dir)
	assert.False(t, processAlive(pid), "postmaster %d still running", pid)
	assert.Empty(t, processesIn(t, dir), "backends still running")
	assert.NoError(t, p.Close(), "Close is idempotent")
	_ = conn.Close(ctx)
}

func TestTwoClustersAtOnceGetDifferentPorts(t *testing.T) {
	t.Parallel()
	var (
		wg       sync.WaitGroup
		clusters [2]*LocalPostgres
		errs     [2]error
	)
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = StartLocalPostgres(context.Background()) })
	}
	wg.Wait()
	for i, p := range clusters {
		require.NoError(t, errs[i])
		t.Cleanup(func() { assert.NoError(t, p.Close()) })
	}
	assert.NotEqual(t, clusters[0].port, clusters[1].port)
	assert.NotEqual(t, clusters[0].dir, clusters[1].dir)
	for _, p := range clusters {
		assert.Equal(t, 1, queryInt(t, p.DSN("postgres"), "SELECT 1"))
	}
}

func TestStartRetriesWhenThePortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	saved := pickPort
	t.Cleanup(func() { pickPort = saved })
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return saved()
	}
	p := startTestPostgres(t)
	assert.Equal(t, 2, calls, "one retry after the taken port")
	assert.NotEqual(t, taken, p.port)
	assert.Equal(t, 1, queryInt(t, p.DSN("postgres"), "SELECT 1"))
}

func TestStartFailsOnOneLineWhenEveryPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	saved := pickPort
	t.Cleanup(func() { pickPort = saved })
	calls := 0
	pickPort = func() (int, error) { calls++; return taken, nil }

	before := ourDataDirs(t)
	p, err := StartLocalPostgres(context.Background())
	require.Error(t, err)
	assert.Nil(t, p)
	t.Logf("error: %v", err)
	assert.Equal(t, 1+portRetries, calls)
	assert.ErrorIs(t, err, errPortTaken)
	assert.Contains(t, err.Error(), "Address already in use", "the error quotes the server log")
	assert.Contains(t, err.Error(), "free some ports", "the error says what to do")
	assert.NotContains(t, err.Error(), "--db", "the local PostgreSQL names no flag of a program that may have none")
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, before, ourDataDirs(t), "the data directory of a failed start is removed")
}

func TestRemoveStaleDataDirs(t *testing.T) {
	// A pid that existed and is gone: our own finished child.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	deadPid := cmd.Process.Pid
	require.False(t, processAlive(deadPid))

	stale, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", dataDirPrefix, deadPid))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(stale, "PG_VERSION"), []byte("15\n"), 0o600))
	ours, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", dataDirPrefix, os.Getpid()))
	require.NoError(t, err)
	defer os.RemoveAll(ours)
	other, err := os.MkdirTemp("", fmt.Sprintf("%sx-*", dataDirPrefix)) // not ours to judge
	require.NoError(t, err)
	defer os.RemoveAll(other)

	removeStaleDataDirs()
	assert.NoDirExists(t, stale)
	assert.DirExists(t, ours)
	assert.DirExists(t, other)
}

func TestCreateAndDropDatabase(t *testing.T) {
	t.Parallel()
	p := startTestPostgres(t)
	ctx := context.Background()

	// Quoting as an identifier makes any name safe, even one made to inject.
	name := `we"ird; DROP DATABASE postgres; --`
	start := time.Now()
	dsn, err := p.CreateDatabase(ctx, name)
	require.NoError(t, err)
	t.Logf("CREATE DATABASE took %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 1, queryInt(t, dsn, "SELECT count(*) FROM pg_database WHERE datname = current_database() AND datname = '"+strings.ReplaceAll(name, "'", "''")+"'"))

	_, err = p.CreateDatabase(ctx, name)
	require.Error(t, err, "creating it twice fails")
	assert.Contains(t, err.Error(), "already exists")

	// An open connection does not block the drop.
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	start = time.Now()
	require.NoError(t, p.DropDatabase(ctx, name))
	t.Logf("DROP DATABASE WITH (FORCE) took %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 0, queryInt(t, p.DSN("postgres"), "SELECT count(*) FROM pg_database WHERE datname LIKE 'we%'"))
	assert.NoError(t, p.DropDatabase(ctx, name), "dropping a missing database is not an error")
	assert.Equal(t, 1, queryInt(t, p.DSN("postgres"), "SELECT count(*) FROM pg_database WHERE datname = 'postgres'"))
}

func TestStartHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := ourDataDirs(t)
	p, err := StartLocalPostgres(ctx)
	require.Error(t, err)
	assert.Nil(t, p)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, before, ourDataDirs(t), "the data directory of a cancelled start is removed")
}

// TestKilledRunLeavesNoServer kills a process that runs a cluster (this
// test binary, re-run as a helper) with SIGKILL, as a crash or an OOM kill
// would, and checks that the postmaster dies with it and that the next
// start's sweep removes the data directory.
func TestKilledRunLeavesNoServer(t *testing.T) {
	if os.Getenv("IDEMCHECK_PG_HELPER") == "1" {
		p, err := StartLocalPostgres(context.Background())
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("READY %d %s\n", p.cmd.Process.Pid, p.dir)
		select {} // until killed
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal exists on Linux only")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunLeavesNoServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), "IDEMCHECK_PG_HELPER=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "helper output: %q", line)
	var (
		pid int
		dir string
	)
	_, err = fmt.Sscanf(line, "READY %d %s", &pid, &dir)
	require.NoError(t, err, "helper said %q", line)
	require.True(t, processAlive(pid))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.False(t, processAlive(pid), "postmaster %d outlived its killed parent", pid)
	assert.Eventually(t, func() bool { return len(processesIn(t, dir)) == 0 }, 5*time.Second, 20*time.Millisecond, "backends outlived the postmaster")

	// A killed run cannot clean up; a start running in a parallel test may
	// already have swept the directory, otherwise this sweep does.
	removeStaleDataDirs()
	assert.NoDirExists(t, dir, "the next start removes it")
}

// A log's last lines, for a one-line error: blank lines and what the
// cleaner drops are left out, the rest joined, the last n kept.
func TestJoinLastLines(t *testing.T) {
	assert.Equal(t, noOutput, joinLastLines("\n  \n", 3, nil))
	assert.Equal(t, "b | c", joinLastLines("a\n\n  b \nc\n", 2, nil))
	assert.Equal(t, "a | b | c", joinLastLines("a\nb\nc", 5, nil))

	var b tailBuffer
	_, _ = b.Write([]byte("2026-12-01 21:00:00.123 UTC [42] FATAL:  could not bind\n" +
		"2026-12-01 21:00:00.124 UTC [42] LOG:  database system is shut down\n"))
	assert.Equal(t, "FATAL: could not bind", b.lastLines(4), "the time stamp, the doubled space and the closing line go")
}
