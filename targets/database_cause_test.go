package targets_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// A DSN that cannot connect says why first, then what to fix, in the
// caller's words (--db for the command), with the password hidden: a
// wrong password on a real server that asks for one, a server without TLS
// asked for TLS, a port where nothing listens.
func TestConnectErrorsLeadWithTheirCauseAndAHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, err := targets.StartLocalPostgres(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Close() })
	admin, err := pgxpool.New(ctx, pg.DSN("postgres"))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	// The throwaway cluster trusts everyone; this one role must give its
	// password over TCP, as a real server asks.
	var hba string
	require.NoError(t, admin.QueryRow(ctx, "SHOW hba_file").Scan(&hba))
	_, err = admin.Exec(ctx, "CREATE ROLE app LOGIN PASSWORD 'right-password-1'")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "COPY (SELECT unnest(ARRAY['local all all trust', 'host all app 127.0.0.1/32 scram-sha-256', 'host all all 127.0.0.1/32 trust'])) TO "+
		pgQuote(hba))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)

	u, err := url.Parse(pg.DSN("postgres"))
	require.NoError(t, err)
	wrong := "postgres://app:wrong-PLANTED-pw@" + u.Host + "/postgres"
	noTLS := strings.Replace(pgtest.DSN(t), "sslmode=disable", "sslmode=require", 1)
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"wrong password", wrong, `: password authentication failed for user "app": check the password in --db`},
		{"no TLS", noTLS, ": the server refused TLS: add sslmode=disable to --db"},
		{"nothing listens", "postgres://u:secret-PLANTED@127.0.0.1:1/x?sslmode=disable", ": connection refused: nothing listens there: check the host and port in --db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.OpenDB(ctx, tc.dsn, false)
			require.Error(t, err)
			// As the command says it (cmd/idemcheck's inFlagWords).
			msg := err.Error()
			var fe *idemcheck.FieldError
			require.True(t, errors.As(err, &fe), "the hint names its setting: %v", err)
			msg = strings.Replace(msg, fe.Error(), fe.Text(config.FlagWords), 1)
			t.Log(msg)
			assert.True(t, strings.HasPrefix(msg, "cannot connect to database "), msg)
			assert.Contains(t, msg, tc.want)
			assert.NotContains(t, msg, "PLANTED")
			assert.NotContains(t, msg, "\n")
			assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.ExitCode(err))
		})
	}
	// pgx's error is still there for a program to inspect.
	_, err = targets.OpenDatabase(ctx, wrong)
	var pe *pgconn.PgError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "28P01", pe.Code)
	assert.Contains(t, err.Error(), "check the password in DSN", "in Go's words, the field")
}

func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
