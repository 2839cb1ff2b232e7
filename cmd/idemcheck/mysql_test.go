package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/ordersmysql"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
)

// ordersOnMariaDB serves the MariaDB orders reference on a fresh database
// and returns its URL, the database's DSN in the Go driver's form with a
// password (the test server lets any in), and how many requests it got.
func ordersOnMariaDB(t *testing.T) (string, string, *atomic.Int64) {
	t.Helper()
	dsn := ordersmysql.GoDSN(mysqltest.DSN(t))
	dsn = strings.Replace(dsn, "root@", "root:hunter22secret@", 1)
	s, err := ordersmysql.New(context.Background(), dsn, ordersmysql.Reference)
	require.NoError(t, err)
	var got atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		s.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); _ = s.Close() })
	return "http://" + ln.Addr().String() + "/orders", dsn, &got
}

// ordersMySQLBin is the MariaDB orders API as a program, for --cmd.
var ordersMySQLBin = testbin.New("github.com/idemcheck/idemcheck/examples/ordersmysql/cmd/ordersmysql")

const mysqlBody = `{"customerId":"{{intent}}","totalCents":4000}`

func TestCertifyCountsEffectsInMariaDB(t *testing.T) {
	url, dsn, _ := ordersOnMariaDB(t)
	code, out, errOut := cli(t, "certify", "--url", url, "--body", mysqlBody, "--no-color",
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = ?", "--effect-arg", "{{intent}}",
		"--checks", "concurrent-burst,sequential-replay")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "root:xxxxx@tcp(")
	assert.NotContains(t, out+errOut, "hunter22secret")
}

// Every effect query MariaDB cannot promise to run without side effects
// is refused with one line naming --effect-sql, exit 2, before the target
// gets a single request.
func TestMySQLEffectQueryRefusedBeforeAnyTraffic(t *testing.T) {
	url, dsn, got := ordersOnMariaDB(t)
	for _, q := range []string{
		"SELECT count(*) FROM orders WHERE customer_id = ? AND SLEEP(1) = 0",
		"SELECT count(*) FROM orders WHERE customer_id = ? AND GET_LOCK('x', 1)",
		"SELECT count(*) FROM orders WHERE customer_id = ? INTO OUTFILE '/tmp/n'",
		"SELECT count(*) FROM orders WHERE customer_id = ?; DELETE FROM orders",
		"SELECT count(*) FROM orders WHERE customer_id = $1",
		"DELETE FROM orders WHERE customer_id = ?",
		"CALL count_orders(?)",
	} {
		code, out, errOut := cli(t, "certify", "--url", url, "--body", mysqlBody, "--no-color",
			"--db", dsn, "--effect-sql", q, "--effect-arg", "{{intent}}", "--checks", "sequential-replay")
		assert.Equal(t, idemcheck.ExitUsage, code, "%s\nstdout:\n%s\nstderr:\n%s", q, out, errOut)
		assert.Contains(t, errOut, "--effect-sql", q)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		assert.NotContains(t, out+errOut, "hunter22secret")
	}
	assert.Zero(t, got.Load(), "nothing was sent to the target")
}

// The soak counts its batches in MariaDB; --effect-batch-sql, PostgreSQL's
// array form, is refused there.
func TestSoakCountsEffectsInMariaDB(t *testing.T) {
	url, dsn, got := ordersOnMariaDB(t)
	code, out, errOut := cli(t, "soak", "--url", url, "--body", mysqlBody, "--db", dsn,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = ?", "--effect-arg", "{{intent}}",
		"--effect-batch-sql", "SELECT customer_id, count(*) FROM orders WHERE customer_id IN (?) GROUP BY 1",
		"--duration", "1s", "--rate", "20")
	require.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, errOut, "--effect-batch-sql")
	assert.Zero(t, got.Load())

	code, out, errOut = cli(t, "soak", "--url", url, "--body", mysqlBody, "--db", dsn,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = ?", "--effect-arg", "{{intent}}",
		"--duration", "1s", "--rate", "20", "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Regexp(t, `effects counted for \d+ intents: 0 duplicated, 0 lost`, out)
	assert.NotContains(t, out+errOut, "hunter22secret")
}

func TestDBEngineUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--cmd", "true", "--db-engine", "oracle"}, `--db-engine "oracle" is not an engine`},
		{[]string{"--url", "http://127.0.0.1:1/orders", "--db-engine", "mysql"}, "--db-engine goes with --cmd"},
		{[]string{"--cmd", "true", "--db-engine", "postgres", "--db", "mysql://app:hunter22secret@127.0.0.1/shop"}, "does not match the database mysql://app:xxxxx@127.0.0.1/shop"},
		{[]string{"--image", "x", "--db-engine", "postgres", "--db", "app:hunter22secret@tcp(127.0.0.1:3306)/shop"}, "does not match the database app:xxxxx@tcp(127.0.0.1:3306)/shop"},
	} {
		code, out, errOut := cli(t, append([]string{"certify", "--body", mysqlBody, "--no-color"}, tc.args...)...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%v\nstdout:\n%s\nstderr:\n%s", tc.args, out, errOut)
		assert.Contains(t, errOut, tc.says, tc.args)
		assert.NotContains(t, out+errOut, "hunter22secret")
	}
}

// A soak's database-link fault acts on a MySQL-family target as on a
// PostgreSQL one: the link the target is handed reads the MySQL protocol.
func TestSoakFaultsTheDatabaseLinkOnMariaDB(t *testing.T) {
	_, dsn, _ := ordersOnMariaDB(t)
	code, out, errOut := cli(t, "soak", "--cmd", ordersMySQLBin.Path(t), "--db", dsn, "--path", "/orders", "--body", mysqlBody,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = ?", "--effect-arg", "{{intent}}",
		"--fault", "db-latency:ms=5", "--duration", "1s", "--rate", "5", "--no-color")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Regexp(t, `effects counted for \d+ intents: 0 duplicated, 0 lost`, out)
	assert.NotContains(t, out+errOut, "hunter22secret")
}
