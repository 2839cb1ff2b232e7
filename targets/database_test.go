package targets

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/netns"
)

func TestRedactDSN(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"url", "postgres://app:secret@127.0.0.1:5432/app", "postgres://app:xxxxx@127.0.0.1:5432/app"},
		{"postgresql scheme", "postgresql://app:secret@db.example:5432/app?sslmode=require", "postgresql://app:xxxxx@db.example:5432/app?sslmode=require"},
		{"url without password", "postgres://app@127.0.0.1:5432/app?sslmode=disable", "postgres://app@127.0.0.1:5432/app?sslmode=disable"},
		{"url without user info", "postgres://127.0.0.1/app", "postgres://127.0.0.1/app"},
		{"url empty password", "postgres://app:@h/app", "postgres://app:xxxxx@h/app"},
		{"url percent-encoded password", "postgres://app:s%40cr%2Fet@h/app", "postgres://app:xxxxx@h/app"},
		{"url password in query", "postgres://h/app?user=app&password=secret&sslmode=disable", "postgres://h/app?user=app&password=xxxxx&sslmode=disable"},
		{"url encoded password key", "postgres://h/app?pass%77ord=secret", "postgres://h/app?pass%77ord=xxxxx"},
		{"url sslpassword", "postgres://h/app?sslpassword=secret", "postgres://h/app?sslpassword=xxxxx"},
		{"url @ in a query value", "postgres://app:secret@h:5432/app?application_name=me@example.com", "postgres://app:xxxxx@h:5432/app?application_name=me@example.com"},
		{"url multiple hosts", "postgres://app:secret@h1:5432,h2:5433/app", "postgres://app:xxxxx@h1:5432,h2:5433/app"},
		{"url ipv6", "postgres://app:secret@[::1]:5432/app", "postgres://app:xxxxx@[::1]:5432/app"},
		{"url unescaped slash in password", "postgres://app:sec/ret@h/app", "postgres://app:xxxxx@h/app"},
		{"url unescaped question mark in password", "postgres://app:sec?ret@h/app", "postgres://app:xxxxx@h/app"},
		{"url unescaped @ in password", "postgres://app:sec@ret@h/app", "postgres://app:xxxxx@h/app"},
		{"key=value", "host=127.0.0.1 port=5432 user=app password=secret dbname=app", "host=127.0.0.1 port=5432 user=app password=xxxxx dbname=app"},
		{"key=value quoted", "host=h password='se cr\\'et' dbname=app", "host=h password=xxxxx dbname=app"},
		{"key=value spaces around =", "host=h password = secret dbname=app", "host=h password = xxxxx dbname=app"},
		{"key=value upper-case key", "host=h PASSWORD=secret", "host=h PASSWORD=xxxxx"},
		{"key=value sslpassword", "host=h sslpassword=secret", "host=h sslpassword=xxxxx"},
		{"key=value no password", "host=h user=app dbname=app", "host=h user=app dbname=app"},
		{"key=value unterminated quote", "host=h password='secret", "host=h password=xxxxx"},
		{"key=value garbage", "host=h secret", "host=h xxxxx"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactDSN(tt.in)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, got, "secret")
			assert.NotContains(t, got, "ret@")
		})
	}
}

func TestProvideDatabaseWrongDSNRedactsThePassword(t *testing.T) {
	t.Parallel()
	tests := []struct{ dsn, want string }{
		{"postgres://u:secret@127.0.0.1:1/x", "cannot connect to database postgres://u:xxxxx@127.0.0.1:1/x: "},
		{"host=127.0.0.1 port=1 user=u password=secret dbname=x", "cannot connect to database host=127.0.0.1 port=1 user=u password=xxxxx dbname=x: "},
		{"postgres://u:secret@127.0.0.1:notaport/x", "cannot connect to database postgres://u:xxxxx@127.0.0.1:notaport/x: invalid DSN: "},
		{"host=127.0.0.1 port=1 password='secret", "cannot connect to database host=127.0.0.1 port=1 password=xxxxx: invalid DSN: "},
	}
	for _, tt := range tests {
		start := time.Now()
		db, err := ProvideDatabase(context.Background(), tt.dsn)
		require.Error(t, err, tt.dsn)
		assert.Nil(t, db)
		t.Logf("%v (%v)", err, time.Since(start).Round(time.Millisecond))
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, tt.want), "got %q", msg)
		assert.NotContains(t, msg, "secret")
		assert.NotContains(t, msg, "\n")
		assert.NotErrorIs(t, err, ErrNoDatabase, "a given DSN that fails is a connect error, not a missing database")
	}
}

func TestOpenDatabaseIsBoundedByContext(t *testing.T) {
	t.Parallel()
	// A server that accepts and never answers: only a deadline ends the wait.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = OpenDatabase(ctx, "postgres://u:secret@"+l.Addr().String()+"/x?sslmode=disable")
	require.Error(t, err)
	assert.Less(t, time.Since(start), time.Minute, "only the 300 ms deadline can end this wait; a minute means it did not")
	assert.NotContains(t, err.Error(), "secret")
	assert.NotContains(t, err.Error(), "\n")
}

func TestOpenDatabaseGivenDSN(t *testing.T) {
	t.Parallel()
	p := startTestPostgres(t)
	ctx := context.Background()
	dsn, err := p.CreateDatabase(ctx, "given")
	require.NoError(t, err)

	db, err := ProvideDatabase(ctx, dsn)
	require.NoError(t, err)
	assert.Equal(t, SourceDSN, db.Source)
	assert.Equal(t, dsn, db.DSN)
	var name string
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT current_database()").Scan(&name))
	assert.Equal(t, "given", name)
	db.Close()
	db.Close()
	// Closing a given database leaves its server alone.
	assert.Equal(t, 1, queryInt(t, p.DSN("postgres"), "SELECT 1"))
}

func TestProvideDatabaseStartsALocalOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	db, err := ProvideDatabase(ctx, "")
	require.NoError(t, err)
	t.Logf("local database ready in %v: %s", time.Since(start).Round(time.Millisecond), RedactDSN(db.DSN))
	assert.Equal(t, SourceLocal, db.Source)
	require.NotNil(t, db.local)
	dir, pid := db.local.dir, db.local.cmd.Process.Pid

	_, err = db.Pool.Exec(ctx, "CREATE TABLE effects (k text PRIMARY KEY, n int NOT NULL)")
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "INSERT INTO effects VALUES ('a', 1)")
	require.NoError(t, err)

	db.Close()
	assert.NoDirExists(t, dir)
	assert.False(t, processAlive(pid))
	db.Close() // idempotent
	var nilDB *Database
	nilDB.Close()
}

func TestProvideDatabaseCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ProvideDatabase(ctx, "")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoDatabase)
	assert.ErrorIs(t, err, context.Canceled, "a caller can tell an interrupted start from a broken one")
	assert.NotContains(t, err.Error(), "\n")
}

// The loopback guard's test runs in a network namespace of its own, so
// that a guard that failed would send nothing anywhere.
func TestCheckDSN(t *testing.T) {
	if !netns.Enter(t) {
		return
	}
	for _, dsn := range []string{"postgres://u:pw@10.255.255.1/db", "host=db.example.com user=u password=pw",
		"postgres://u:pw@127.0.0.1,db.example.com/db"} {
		err := CheckDSN(dsn, "--db", false)
		require.Error(t, err, dsn)
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
		assert.Contains(t, err.Error(), "--db")
		assert.NotContains(t, err.Error(), "pw@")
		assert.NotContains(t, err.Error(), "password=pw")
		assert.NoError(t, CheckDSN(dsn, "--db", true))
	}
	for _, dsn := range []string{"postgres://u@127.0.0.1:5432/db", "postgres://u@localhost/db", "host=/tmp user=u", "postgres://u@[::1]/db"} {
		assert.NoError(t, CheckDSN(dsn, "--db", false), dsn)
	}
}

// A database off loopback is refused before anything is sent, with the fix
// named as the setting it is (AllowRemote): a Go program reads the field,
// and a program with words of its own (the command's flag) says it in
// those.
func TestOpenDatabaseOffLoopbackNamesTheSetting(t *testing.T) {
	_, err := OpenDatabase(context.Background(), "postgres://u:secret@192.0.2.1:5432/x")
	require.Error(t, err)
	assert.ErrorIs(t, err, netguard.ErrNotLoopback)
	assert.NotContains(t, err.Error(), "secret")
	assert.NotContains(t, err.Error(), "--allow-remote", "a library error names no flag")
	assert.Contains(t, err.Error(), "host 192.0.2.1: 192.0.2.1 is not loopback (set AllowRemote to use a database off this machine)")
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.Field("AllowRemote"), fe.Field)
	words := map[idemcheck.Field]idemcheck.Word{"AllowRemote": {Name: "--allow-remote", Set: "pass --allow-remote"}}
	assert.Contains(t, fe.Text(words), "(pass --allow-remote to use a database off this machine)")
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
}
