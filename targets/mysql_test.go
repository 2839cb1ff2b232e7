package targets

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/netns"
)

// The shared MariaDB of this package's tests, started on first use and
// stopped by TestMain (targets/mysqltest cannot be imported here).
var (
	testMariaDBOnce sync.Once
	testMariaDB     *LocalMariaDB
	testMariaDBErr  error
	testMariaDBN    int
	testMariaDBMu   sync.Mutex
)

// CloseTestMariaDB stops the shared server; TestMain calls it.
func CloseTestMariaDB() {
	if testMariaDB != nil {
		_ = testMariaDB.Close()
	}
}

// mariadbDSN returns a fresh database's DSN on the shared server; a
// missing binary skips, except in CI or with IDEMCHECK_REQUIRE_MARIADB=1.
func mariadbDSN(t *testing.T) string {
	t.Helper()
	testMariaDBOnce.Do(func() {
		if _, err := FindMariaDB(); err != nil {
			testMariaDBErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		testMariaDB, testMariaDBErr = StartLocalMariaDB(ctx)
	})
	if testMariaDBErr != nil {
		if _, err := FindMariaDB(); err != nil && os.Getenv("CI") != "true" && os.Getenv("IDEMCHECK_REQUIRE_MARIADB") != "1" {
			t.Skipf("%v (make mariadb installs it)", err)
		}
		t.Fatal(testMariaDBErr)
	}
	testMariaDBMu.Lock()
	testMariaDBN++
	name := "t_" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + string(rune('a'+testMariaDBN%26))
	testMariaDBMu.Unlock()
	dsn, err := testMariaDB.CreateDatabase(context.Background(), name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = testMariaDB.DropDatabase(context.Background(), name) })
	return dsn
}

func TestDSNEngine(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://app:pw@127.0.0.1/app":              EnginePostgres,
		"postgresql://u@tcp/db":                        EnginePostgres,
		"host=/tmp dbname=app":                         EnginePostgres,
		"host=127.0.0.1 user=app password=a@tcp(x)/y":  EnginePostgres,
		"mysql://app:pw@127.0.0.1:3306/shop":           EngineMySQL,
		"MariaDB://app@localhost/shop":                 EngineMySQL,
		"app:pw@tcp(127.0.0.1:3306)/shop":              EngineMySQL,
		"app:p@ss/w@tcp(127.0.0.1:3306)/shop?tls=true": EngineMySQL,
		"app@unix(/run/mysqld/mysqld.sock)/shop":       EngineMySQL,
		"app:pw@/shop":                                 EngineMySQL,
		"tcp(127.0.0.1)/shop":                          EngineMySQL,
	} {
		assert.Equal(t, want, DSNEngine(dsn), dsn)
	}
}

func TestRedactMySQLDSN(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://app:secret@127.0.0.1:3306/shop":               "mysql://app:xxxxx@127.0.0.1:3306/shop",
		"mariadb://app:s%40cr%2Fet@h/shop?parseTime=true":      "mariadb://app:xxxxx@h/shop?parseTime=true",
		"mysql://app:sec@ret@h/shop":                           "mysql://app:xxxxx@h/shop",
		"mysql://app@h/shop":                                   "mysql://app@h/shop",
		"app:secret@tcp(127.0.0.1:3306)/shop":                  "app:xxxxx@tcp(127.0.0.1:3306)/shop",
		"app:sec@r:et@tcp(127.0.0.1:3306)/shop?parseTime=true": "app:xxxxx@tcp(127.0.0.1:3306)/shop?parseTime=true",
		"app:secret@unix(/run/mysqld.sock)/shop":               "app:xxxxx@unix(/run/mysqld.sock)/shop",
		"app:secret@/shop":                                     "app:xxxxx@/shop",
		"app@tcp(h)/shop":                                      "app@tcp(h)/shop",
	} {
		got := RedactDSN(in)
		assert.Equal(t, want, got, in)
		assert.NotContains(t, got, "secret", in)
	}
}

// It runs in a network namespace of its own, so that a guard that failed
// would send nothing anywhere.
func TestMySQLDSNOffLoopbackIsRefusedBeforeAnyTraffic(t *testing.T) {
	if !netns.Enter(t) {
		return
	}
	for _, dsn := range []string{"mysql://app:secret@db.example.com:3306/shop", "app:secret@tcp(10.1.2.3:3306)/shop"} {
		err := CheckDSN(dsn, "DSN", false)
		require.Error(t, err, dsn)
		assert.Contains(t, err.Error(), "AllowRemote")
		assert.NotContains(t, err.Error(), "secret")
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
		_, err = OpenDatabase(context.Background(), dsn)
		require.Error(t, err)
		assert.ErrorIs(t, err, netguard.ErrNotLoopback)
		assert.NotContains(t, err.Error(), "secret")
	}
}

func TestMySQLConnectErrorHidesThePassword(t *testing.T) {
	// Nothing listens on port 1.
	_, err := OpenDatabase(context.Background(), "app:hunter22@tcp(127.0.0.1:1)/shop")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter22")
	assert.Contains(t, err.Error(), "app:xxxxx@tcp(127.0.0.1:1)/shop")
}

// openShop opens a fresh MariaDB database holding an orders table, through
// the DSN form given.
func openShop(t *testing.T, goForm bool) *Database {
	t.Helper()
	dsn := mariadbDSN(t)
	if goForm {
		dsn = strings.Replace(strings.TrimPrefix(dsn, "mysql://"), "@127.0.0.1", "@tcp(127.0.0.1", 1)
		i := strings.LastIndexByte(dsn, '/')
		dsn = dsn[:i] + ")" + dsn[i:]
	}
	require.Equal(t, EngineMySQL, DSNEngine(dsn))
	d, err := OpenDatabase(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	_, err = d.SQL.DB().Exec("CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id VARCHAR(64) NOT NULL, KEY (customer_id))")
	require.NoError(t, err)
	_, err = d.SQL.DB().Exec("INSERT INTO orders (customer_id) VALUES ('c1'), ('c1'), ('c2')")
	require.NoError(t, err)
	return d
}

func TestMySQLCountsEffectsInOneReadOnlyTransaction(t *testing.T) {
	for _, goForm := range []bool{false, true} {
		d := openShop(t, goForm)
		ctx := context.Background()
		q := "SELECT count(*) FROM orders WHERE customer_id = ?"
		require.NoError(t, d.SQL.Check(ctx, q, []string{"c-none"}))
		ns, err := d.SQL.CountEach(ctx, q, [][]string{{"c1"}, {"c2"}, {"c3"}}, time.Second)
		require.NoError(t, err)
		assert.Equal(t, []int64{2, 1, 0}, ns)
	}
}

// Every refusal is one line naming the effect query, a usage error (exit
// 2), and nothing it would have done is done.
func TestMySQLEffectQueryRefusals(t *testing.T) {
	d := openShop(t, false)
	ctx := context.Background()
	db := d.SQL.DB()
	_, err := db.Exec("CREATE TABLE audit (n INT)")
	require.NoError(t, err)
	for _, tc := range []struct{ query, says string }{
		{"DELETE FROM orders WHERE customer_id = ?", "DELETE statement"},
		{"UPDATE orders SET customer_id = ? WHERE id = 0", "UPDATE statement"},
		{"INSERT INTO audit VALUES (1)", "INSERT statement"},
		{"SELECT count(*) FROM orders WHERE customer_id = ?; DELETE FROM orders", "several statements"},
		{"SELECT count(*) FROM orders WHERE customer_id = ?;", "';'"},
		{"SELECT count(*) FROM orders WHERE customer_id = $1", "placeholders"},
		{"SELECT count(*) + SLEEP(0) FROM orders WHERE customer_id = ?", "SLEEP()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND GET_LOCK('k', 0)", "GET_LOCK()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND RELEASE_LOCK('k') IS NULL", "RELEASE_LOCK()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND uuid() <> ''", "UUID()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND RAND () < 2", "RAND()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND LOAD_FILE('/etc/passwd') IS NULL", "LOAD_FILE()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND SYSDATE() > 0", "SYSDATE()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND BENCHMARK(1, 1) = 0", "BENCHMARK()"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? INTO OUTFILE '/tmp/x'", "INTO OUTFILE"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? INTO DUMPFILE '/tmp/x'", "INTO OUTFILE"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? INTO @n", "INTO OUTFILE"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? FOR UPDATE", "FOR UPDATE"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? LOCK IN SHARE MODE", "LOCK IN SHARE MODE"},
		{"SELECT @n := count(*) FROM orders WHERE customer_id = ?", "assigns"},
		{"SELECT count(*) /*!50000 + SLEEP(1) */ FROM orders WHERE customer_id = ?", "executable comment"},
		{"CALL count_orders(?)", "stored procedure"},
		{"LOCK TABLES orders READ", "LOCK statement"},
		{"SET @x = ?", "SET statement"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND shop.f() = 1", "function of a schema"},
		{"SELECT count(*), 1 FROM orders WHERE customer_id = ?", "one number"},
		{"SELECT count(*) FROM orders WHERE customer_id = ? AND id = ?", "takes 2 parameters"},
		{"SELECT count(*) FROM nowhere WHERE customer_id = ?", "doesn't exist"},
	} {
		err := d.SQL.Check(ctx, tc.query, []string{"c1"})
		if !assert.Error(t, err, tc.query) {
			continue
		}
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err), tc.query)
		assert.Contains(t, err.Error(), tc.says, tc.query)
		assert.Contains(t, err.Error(), "EffectSQL", tc.query)
		assert.NotContains(t, err.Error(), "\n", tc.query)
	}
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM orders").Scan(&n))
	assert.Equal(t, 3, n, "a refused query changed nothing")
	// A named lock no refused query took is still free.
	require.NoError(t, db.QueryRow("SELECT IS_FREE_LOCK('k')").Scan(&n))
	assert.Equal(t, 1, n)
}

// A query that writes and gets past the reading (a data-changing function
// cannot be written in a SELECT, so a write to a table the reader does
// not know, through the read-only transaction itself) is refused by the
// server: the transaction is READ ONLY.
func TestMySQLCountRunsReadOnly(t *testing.T) {
	d := openShop(t, false)
	ctx := context.Background()
	conn, err := d.SQL.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	err = d.SQL.inReadOnly(ctx, conn, time.Second, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO orders (customer_id) VALUES ('c9')")
		return err
	})
	require.Error(t, err)
	err = mysqlQueryError(err)
	assert.Contains(t, err.Error(), "must only read")
	var n int
	require.NoError(t, d.SQL.DB().QueryRow("SELECT count(*) FROM orders WHERE customer_id = 'c9'").Scan(&n))
	assert.Zero(t, n)
}

// A function defined in the database may write or wait: it is refused by
// name, though the reader cannot know what it does.
func TestMySQLRefusesTheDatabasesOwnFunctions(t *testing.T) {
	mariadbDSN(t) // skips where MariaDB is missing, outside CI
	ctx := context.Background()
	start := time.Now()
	m, err := StartLocalMariaDBWith(ctx, MariaDBOptions{SystemTables: true})
	require.NoError(t, err)
	t.Logf("MariaDB with its system tables started in %v", time.Since(start))
	defer m.Close()
	dsn, err := m.CreateDatabase(ctx, "shop")
	require.NoError(t, err)
	d, err := OpenDatabase(ctx, dsn)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.SQL.DB().Exec("CREATE TABLE orders (id INT PRIMARY KEY, customer_id VARCHAR(64))")
	require.NoError(t, err)
	_, err = d.SQL.DB().Exec("CREATE FUNCTION order_weight(c VARCHAR(64)) RETURNS INT DETERMINISTIC RETURN 1")
	require.NoError(t, err)
	err = d.SQL.Check(context.Background(), "SELECT count(*) * order_weight(?) FROM orders", []string{"c1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "order_weight(), a function defined in the database")
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
}

// The throwaway server leaves nothing behind: Close removes its data
// directory, and a directory left by a run that is gone (its pid dead) is
// removed, its server killed, by the next start.
func TestLocalMariaDBLeavesNothingBehind(t *testing.T) {
	mariadbDSN(t)
	ctx := context.Background()
	start := time.Now()
	m, err := StartLocalMariaDB(ctx)
	require.NoError(t, err)
	t.Logf("MariaDB started in %v", time.Since(start))
	dir := m.dir
	assert.DirExists(t, dir)
	require.NoError(t, m.Close())
	assert.NoDirExists(t, dir)

	// A leftover of a dead owner: pid 2^22+1 is above Linux's pid_max default.
	stale, err := os.MkdirTemp("", mariadbDirPrefix+"4194305-*")
	require.NoError(t, err)
	m, err = StartLocalMariaDB(ctx)
	require.NoError(t, err)
	defer m.Close()
	assert.NoDirExists(t, stale)
}

// A run killed with SIGKILL leaves no MariaDB running (the parent-death
// signal), and its data directory goes (the watcher, else the next
// start's sweep).
func TestKilledRunLeavesNoMariaDB(t *testing.T) {
	if os.Getenv("IDEMCHECK_MARIADB_HELPER") == "1" {
		m, err := StartLocalMariaDB(context.Background())
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("READY %d %s\n", m.cmd.Process.Pid, m.dir)
		select {} // until killed
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal exists on Linux only")
	}
	mariadbDSN(t) // skips where MariaDB is missing, outside CI
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunLeavesNoMariaDB$", "-test.count=1")
	cmd.Env = append(os.Environ(), "IDEMCHECK_MARIADB_HELPER=1")
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
	assert.Eventually(t, func() bool { return !processAlive(pid) }, 10*time.Second, 20*time.Millisecond, "mariadbd %d outlived its killed parent", pid)
	removeStaleMariaDBDirs()
	assert.NoDirExists(t, dir, "the next start removes it")
}

// What only looks like a refused word is let through: a column named
// handler or load, CHARACTER SET in a cast, a string holding SLEEP(1), a
// comment, a quoted name.
func TestMySQLReaderLetsPlainQueriesThrough(t *testing.T) {
	for _, q := range []string{
		"SELECT count(*) FROM hooks WHERE handler = ? AND load > 0",
		"SELECT count(*) FROM orders WHERE CAST(customer_id AS CHAR CHARACTER SET utf8mb4) = ?",
		"SELECT count(*) FROM orders WHERE note <> 'SLEEP(1); DELETE' AND customer_id = ?",
		"SELECT count(*) -- SLEEP(1)\nFROM orders WHERE customer_id = ? /* GET_LOCK('x', 1) */",
		"SELECT count(*) FROM `orders` WHERE `customer_id` = ?",
		"WITH o AS (SELECT * FROM orders WHERE customer_id = ?) SELECT count(*) FROM o",
		"(SELECT count(*) FROM orders WHERE customer_id = ?)",
	} {
		read, why := readMySQLQuery(q)
		assert.Empty(t, why, q)
		assert.Equal(t, 1, read.placeholders, q)
	}
}
