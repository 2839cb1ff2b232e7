package targets

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
)

// Database is an open database a run uses for effect counts: PostgreSQL
// (Pool) or, from a mysql:// or mariadb:// DSN, MySQL or MariaDB (SQL).
type Database struct {
	// DSN is the connection string as given. It may hold a password, so
	// never print it raw: use RedactDSN.
	DSN string
	// Source says where the database came from: "dsn" when the user gave one,
	// "local" when a throwaway cluster was started for this run, "container"
	// when a PostgreSQL container was.
	Source string
	// Pool is the connection pool every effect count goes through, for
	// PostgreSQL.
	Pool *pgxpool.Pool
	// Engine is EnginePostgres or EngineMySQL (empty means PostgreSQL).
	Engine string
	// SQL is where effects are counted in a database of the MySQL
	// family; Pool is then nil.
	SQL *MySQLDB

	// local is the throwaway cluster behind a "local" database; Close stops it.
	local *LocalPostgres
	// mariadb is the throwaway server behind a "local" MySQL-family
	// database; Close stops it.
	mariadb *LocalMariaDB
}

// Sources a Database can come from, as stored in Database.Source.
const (
	SourceDSN   = "dsn"
	SourceLocal = "local"
)

// connectTimeout bounds a connection attempt when the DSN sets none, so an
// unreachable host fails within seconds instead of the OS TCP timeout.
const connectTimeout = 10 * time.Second

// ErrNoDatabase reports that a run has no database: the user gave no DSN and
// no local PostgreSQL could be started. Test for it with errors.Is.
var ErrNoDatabase = errors.New("no database")

// noDatabase is the error of a run that has no database: the local
// PostgreSQL could not give one (why, after the message). It names the
// way out that is the caller's, a DSN, as a Setting, so that each front
// end says it in its own words ("pass --db DSN"); why names the machine's.
func noDatabase(format string, args ...any) error {
	return idemcheck.Fieldf(idemcheck.ExitUnavailable, "DSN", "%w: %s"+format, append([]any{ErrNoDatabase, idemcheck.Setting("DSN")}, args...)...)
}

// Close closes the pool and, for a local database, stops its cluster and
// removes its data directory. It is safe to call more than once and on nil.
func (d *Database) Close() {
	if d == nil {
		return
	}
	if d.Pool != nil {
		d.Pool.Close()
	}
	if d.SQL != nil {
		_ = d.SQL.db.Close()
	}
	if d.mariadb != nil {
		_ = d.mariadb.Close()
	}
	if d.local != nil {
		// The cluster is throwaway and Close is best effort: a leftover data
		// directory is removed by the next run's stale-directory sweep.
		_ = d.local.Close()
	}
	// A container database's container is removed the same way; a
	// leftover is removed by the next run's stale-container sweep.
	_ = d.closeContainer()
}

// OpenDatabase connects to dsn and pings it, so a wrong DSN fails at start-up
// rather than in the middle of a run. The attempt is bounded by ctx and by a
// 10 s connect timeout (unless the DSN sets connect_timeout). Errors read, on
// one line, "cannot connect to database <redacted DSN>: <reason>"; the
// password never appears in them.
//
// The database must be on this machine: every host of the DSN (fallbacks
// included) must be on loopback, names are resolved from the hosts file
// and never by DNS, and every connection refuses an address off loopback
// when it is made. An error for a host off loopback is a usage
// *idemcheck.FieldError about AllowRemote. OpenRemoteDatabase lifts that
// rule.
func OpenDatabase(ctx context.Context, dsn string) (*Database, error) {
	return openDatabase(ctx, dsn, false)
}

// OpenRemoteDatabase is OpenDatabase for a run allowed off this machine
// (AllowRemote): the DSN's hosts may be anywhere and are resolved as
// usual.
func OpenRemoteDatabase(ctx context.Context, dsn string) (*Database, error) {
	return openDatabase(ctx, dsn, true)
}

// CheckDSN refuses a database DSN whose hosts are off this machine unless
// allowRemote, without sending anything; field names the setting in the
// error: Go's name (DSN) or the caller's own (a file's key). Unix-socket
// hosts are local.
func CheckDSN(dsn, field string, allowRemote bool) error {
	if dsn == "" || allowRemote {
		return nil
	}
	hosts, err := DSNHosts(dsn)
	if err != nil {
		return idemcheck.Fieldf(idemcheck.ExitUsage, idemcheck.Field(field), "%s %s: %v", idemcheck.Field(field), RedactDSN(dsn), err)
	}
	for _, h := range hosts {
		if err := netguard.Check(h); err != nil {
			return idemcheck.Fieldf(idemcheck.ExitUsage, idemcheck.Field(field), "%s %s: database host %s: %v; use 127.0.0.1 or localhost, or %s",
				idemcheck.Field(field), RedactDSN(dsn), h, err, idemcheck.Setting("AllowRemote"))
		}
	}
	return nil
}

// DSNHosts returns the hosts dsn connects to, its fallbacks' included; a
// Unix socket directory is left out, being local. It sends nothing.
func DSNHosts(dsn string) ([]string, error) {
	if DSNEngine(dsn) == EngineMySQL {
		cfg, err := mysqlConfig(dsn)
		if err != nil {
			return nil, err
		}
		if h := mysqlHost(cfg); h != "" {
			return []string{h}, nil
		}
		return nil, nil
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New(parseErrorReason(err))
	}
	var hosts []string
	for _, h := range append([]string{cfg.Host}, fallbackHosts(cfg)...) {
		if !strings.HasPrefix(h, "/") {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

func fallbackHosts(cfg *pgconn.Config) []string {
	var hs []string
	for _, f := range cfg.Fallbacks {
		hs = append(hs, f.Host)
	}
	return hs
}

func openDatabase(ctx context.Context, dsn string, allowRemote bool) (*Database, error) {
	if DSNEngine(dsn) == EngineMySQL {
		return openMySQL(ctx, dsn, allowRemote)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN again (best-effort redacted); the
		// message already names it, so keep only the reason.
		return nil, newConnectError(dsn, "", parseErrorReason(err), err)
	}
	if !allowRemote {
		cc := cfg.ConnConfig
		for _, h := range append([]string{cc.Host}, fallbackHosts(&cc.Config)...) {
			if strings.HasPrefix(h, "/") {
				continue
			}
			if err := netguard.Check(h); err != nil {
				// The fix is named as a setting (AllowRemote), so that each
				// caller says it in its own words: a Go program's field,
				// the command's flag.
				return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "AllowRemote", "cannot connect to database %s: host %s: %w (%s to use a database off this machine)",
					RedactDSN(dsn), h, err, idemcheck.Setting("AllowRemote"))
			}
		}
		// pgx resolves hosts itself and then dials: both are replaced, so
		// no DNS query is sent and no connection leaves loopback.
		d := netguard.Dialer(false, 0)
		cc.LookupFunc = netguard.LookupFunc
		cc.DialFunc = d.DialContext
	}
	password := cfg.ConnConfig.Password
	timeout := cfg.ConnConfig.ConnectTimeout
	if timeout <= 0 {
		timeout = connectTimeout
		cfg.ConnConfig.ConnectTimeout = timeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, newConnectError(dsn, password, err.Error(), err)
	}
	// The per-attempt timeout does not bound a DSN with several hosts, so
	// the whole ping gets the same deadline too.
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, newConnectError(dsn, password, err.Error(), err)
	}
	return &Database{DSN: dsn, Source: SourceDSN, Pool: pool, Engine: EnginePostgres}, nil
}

// parseErrorReason drops the quoted DSN from a pgx parse error, keeping the
// reason ("cannot parse `...`: invalid port (...)" becomes "invalid port (...)").
func parseErrorReason(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "cannot parse `"); ok {
		if i := strings.LastIndex(rest, "`: "); i >= 0 {
			return "invalid DSN: " + rest[i+3:]
		}
	}
	return msg
}

// connectError is OpenDatabase's error: a redacted, one-line message that
// still unwraps to pgx's error so callers can inspect it (errors.As with
// *pgconn.PgError, for example). hint, when there is one, is the part of
// the message that names the setting to fix (a FieldError about DSN), so
// that each caller says it in its own words: --db, a suite's db, DSN.
type connectError struct {
	msg  string
	err  error
	hint error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() []error {
	if e.hint == nil {
		return []error{e.err}
	}
	return []error{e.err, e.hint}
}

// connectCause is what went wrong first, in a person's words, and what to
// do, for the failures a newcomer meets: a wrong password, a host where
// nothing listens, a server that refuses TLS, a database that does not
// exist. ok is false for any other failure, which is then said as pgx
// said it.
func connectCause(err error) (cause string, hint error, ok bool) {
	dsn := idemcheck.Field("DSN")
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01": // invalid_password
			return pe.Message, idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn, "check the password in %s", dsn), true
		case "28000": // invalid_authorization_specification: no pg_hba.conf entry, no such role
			return pe.Message, idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn, "check the user in %s, and that the server's pg_hba.conf lets it in", dsn), true
		case "3D000": // invalid_catalog_name
			return pe.Message, idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn, "check the database name in %s, or create it", dsn), true
		}
		return "", nil, false
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server refused TLS connection"):
		return "the server refused TLS", idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn,
			"add sslmode=disable to %s for a server without TLS (on loopback, nothing crosses a network), or turn TLS on in the server", dsn), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there", idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn,
			"check the host and port in %s, and that PostgreSQL runs there", dsn), true
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return "no answer in time", idemcheck.Fieldf(idemcheck.ExitUnavailable, dsn,
			"check the host and port in %s, and that nothing drops the connection on the way", dsn), true
	}
	return "", nil, false
}

// blankRuns collapses line breaks with their indentation, because run
// errors are printed one per line.
var blankRuns = regexp.MustCompile(`\s*\n\s*`)

// newConnectError builds the one-line message. pgx puts one line per
// connection attempt, and with the default sslmode=prefer it tries each
// host twice (TLS, then plain), so identical lines are shown once. As a
// second line of defence it removes the literal password from pgx's text
// too; passwords shorter than 4 bytes are left alone because masking them
// would garble the words around them while protecting next to nothing.
func newConnectError(dsn, password, reason string, err error) error {
	var lines []string
	for _, line := range strings.Split(reason, "\n") {
		if line = strings.TrimSpace(line); line != "" && !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	reason = strings.Join(lines, " ")
	if len(password) >= 4 {
		reason = strings.ReplaceAll(reason, password, redactedPassword)
	}
	if cause, hint, ok := connectCause(err); ok {
		// The cause first, then what to do: pgx's text puts the first
		// host's first try (often a refused TLS under sslmode=prefer)
		// before the failure that matters.
		if len(password) >= 4 {
			cause = strings.ReplaceAll(cause, password, redactedPassword)
		}
		msg := fmt.Sprintf("cannot connect to database %s: %s: %s", RedactDSN(dsn), cause, hint.Error())
		return &connectError{msg: msg, err: err, hint: hint}
	}
	msg := fmt.Sprintf("cannot connect to database %s: %s", RedactDSN(dsn), reason)
	return &connectError{msg: msg, err: err}
}

// ProvideDatabase gives a run its database. With a DSN it opens that
// database (OpenDatabase). Without one it starts a throwaway local
// PostgreSQL, creates a fresh database in it and opens that, so a first run
// needs no setup; Database.Close then stops the cluster. Reading --db and
// DATABASE_URL is the caller's job: an empty dsn always means "local".
//
// When neither is possible the error wraps ErrNoDatabase and its message
// names both fixes.
func ProvideDatabase(ctx context.Context, dsn string) (*Database, error) {
	if dsn != "" {
		return OpenDatabase(ctx, dsn)
	}
	if _, err := FindPostgres(); err != nil {
		return nil, noDatabase(", or install the PostgreSQL server binaries (initdb, postgres) on PATH, e.g. apt-get install postgresql")
	}
	local, err := StartLocalPostgres(ctx)
	if err != nil {
		// The binaries exist but did not give a server; installing them is
		// not the fix, so say what failed instead.
		return nil, noDatabase("; the local PostgreSQL did not start: %w", err)
	}
	localDSN, err := local.CreateDatabase(ctx, "idemcheck")
	if err != nil {
		_ = local.Close()
		return nil, noDatabase("; the local PostgreSQL started but: %w", err)
	}
	db, err := OpenDatabase(ctx, localDSN)
	if err != nil {
		_ = local.Close()
		return nil, noDatabase("; the local PostgreSQL started but: %w", err)
	}
	db.Source = SourceLocal
	db.local = local
	return db, nil
}

// ProvideMySQLDatabase is ProvideDatabase for the MySQL family: with a DSN
// it opens that database; without one it starts a throwaway MariaDB from
// the local binaries (StartLocalMariaDB) and creates a database in it,
// which Database.Close removes with the server.
func ProvideMySQLDatabase(ctx context.Context, dsn string) (*Database, error) {
	if dsn != "" {
		return OpenDatabase(ctx, dsn)
	}
	if _, err := FindMariaDB(); err != nil {
		return nil, noDatabase(", or install the MariaDB server (mariadbd), e.g. apt-get install mariadb-server")
	}
	local, err := StartLocalMariaDB(ctx)
	if err != nil {
		return nil, noDatabase("; the local MariaDB did not start: %w", err)
	}
	localDSN, err := local.CreateDatabase(ctx, "idemcheck")
	if err != nil {
		_ = local.Close()
		return nil, noDatabase("; the local MariaDB started but: %w", err)
	}
	db, err := OpenDatabase(ctx, localDSN)
	if err != nil {
		_ = local.Close()
		return nil, noDatabase("; the local MariaDB started but: %w", err)
	}
	db.Source = SourceLocal
	db.mariadb = local
	return db, nil
}
