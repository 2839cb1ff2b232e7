package faults

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRewriteDSN checks each rewrite the way the target will read it: pgx
// parses the result, which must name the proxy and nothing else, and keep
// every other setting.
func TestRewriteDSN(t *testing.T) {
	const proxy = "127.0.0.1:40001"
	for _, tc := range []struct {
		dsn, want string
	}{
		{"postgres://app:s3cret@db.internal:5432/shop?sslmode=disable&application_name=api",
			"postgres://app:s3cret@127.0.0.1:40001/shop?sslmode=disable&application_name=api"},
		{"postgresql://app@db/shop", "postgresql://app@127.0.0.1:40001/shop"},
		{"postgres://db:5432", "postgres://127.0.0.1:40001"},
		{"postgres:///shop", "postgres://127.0.0.1:40001/shop"},
		{"postgres://app@h1:5432,h2:5433/shop?target_session_attrs=read-write",
			"postgres://app@127.0.0.1:40001/shop?target_session_attrs=read-write"},
		// Query settings would override the host list: they go.
		{"postgres://app@/shop?host=/var/run/postgresql&port=5433&sslmode=disable",
			"postgres://app@127.0.0.1:40001/shop?sslmode=disable"},
		{"postgres://app@[::1]:5432/shop?hostaddr=127.0.0.9", "postgres://app@127.0.0.1:40001/shop"},
		// A password with an '@' and a '/', escaped as a URL must escape them.
		{"postgres://app:p%40ss%2Fw@db/shop", "postgres://app:p%40ss%2Fw@127.0.0.1:40001/shop"},
		{"host=db port=5432 user=app password='it\\'s a \\\\ secret' dbname=shop sslmode=disable",
			`user=app password='it\'s a \\ secret' dbname=shop sslmode=disable host=127.0.0.1 port=40001`},
		{"host=/var/run/postgresql dbname = shop hostaddr=127.0.0.9 port=5433",
			"dbname=shop host=127.0.0.1 port=40001"},
		{"dbname=shop", "dbname=shop host=127.0.0.1 port=40001"},
		{"", "host=127.0.0.1 port=40001"},
		{"  application_name='my app'  ", "application_name='my app' host=127.0.0.1 port=40001"},
	} {
		got, err := RewriteDSN(tc.dsn, proxy)
		require.NoError(t, err, tc.dsn)
		assert.Equal(t, tc.want, got, tc.dsn)

		was, err := pgconn.ParseConfig(tc.dsn)
		require.NoError(t, err, "pgx reads the original %q", tc.dsn)
		now, err := pgconn.ParseConfig(got)
		require.NoError(t, err, "pgx reads the rewrite %q", got)
		assert.Equal(t, "127.0.0.1", now.Host, got)
		assert.Equal(t, uint16(40001), now.Port, got)
		for _, fb := range now.Fallbacks {
			// sslmode=prefer tries TLS, then plaintext: to the proxy both.
			assert.Equal(t, "127.0.0.1", fb.Host, "%s: fallback", got)
			assert.Equal(t, uint16(40001), fb.Port, "%s: fallback", got)
		}
		assert.Equal(t, was.User, now.User, got)
		assert.Equal(t, was.Password, now.Password, got)
		assert.Equal(t, was.Database, now.Database, got)
		// pgx does not know hostaddr (libpq's numeric server address) and
		// would send it to the server as a setting; it goes like host.
		delete(was.RuntimeParams, "hostaddr")
		assert.Equal(t, was.RuntimeParams, now.RuntimeParams, got)
		if !strings.HasPrefix(was.Host, "/") { // no TLS over a Unix socket
			assert.Equal(t, was.TLSConfig == nil, now.TLSConfig == nil, "%s: sslmode kept", got)
		}
	}

	ipv6, err := RewriteDSN("postgres://app@db/shop", "[::1]:40001")
	require.NoError(t, err)
	assert.Equal(t, "postgres://app@[::1]:40001/shop", ipv6)
	ipv6, err = RewriteDSN("dbname=shop", "[::1]:40001")
	require.NoError(t, err)
	assert.Equal(t, "dbname=shop host=::1 port=40001", ipv6)
}

func TestRewriteDSNErrors(t *testing.T) {
	for _, addr := range []string{"127.0.0.1", ":5432", "127.0.0.1:", ""} {
		_, err := RewriteDSN("dbname=shop", addr)
		assert.Error(t, err, addr)
	}
	for dsn, want := range map[string]string{
		"password='unclosed host=db":  "faults: DSN is neither a postgres:// URL nor keyword=value settings: the quoted value of password is not closed",
		"just-a-word":                 `faults: DSN is neither a postgres:// URL nor keyword=value settings: a setting without "="`,
		"db name=shop":                "faults: DSN is neither a postgres:// URL nor keyword=value settings: a setting name is empty or holds a space",
		"password=hunter2 =x":         "faults: DSN is neither a postgres:// URL nor keyword=value settings: a setting name is empty or holds a space",
		"mysql://root:hunter2@db/app": `faults: DSN is neither a postgres:// URL nor keyword=value settings: a setting without "="`,
	} {
		_, err := RewriteDSN(dsn, "127.0.0.1:1")
		assert.EqualError(t, err, want, dsn)
		assert.NotContains(t, err.Error(), "hunter2", "errors never quote the DSN")
	}
}
