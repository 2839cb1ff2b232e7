package targets

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
)

// EffectDB is a database an effect query counts in through something
// other than a pgx pool: today a MySQL or MariaDB database. The rules are
// the PostgreSQL ones (read-only, rolled back, bounded, checked before
// any traffic); the engine says how it keeps them.
type EffectDB interface {
	// Engine names the engine (EngineMySQL).
	Engine() string
	// Check refuses, before any traffic, an effect query the engine
	// cannot promise to run without changing or waiting on anything, or
	// one that takes another number of parameters than len(args) or
	// returns other than one number, then runs it once with args. Its
	// errors are usage errors about the field EffectSQL.
	Check(ctx context.Context, query string, args []string) error
	// CountEach runs query once for each argument list, all in one
	// read-only transaction that is rolled back, each run bounded by
	// timeout, and returns the numbers in order.
	CountEach(ctx context.Context, query string, args [][]string, timeout time.Duration) ([]int64, error)
}

// MySQLDB counts effects in a MySQL or MariaDB database with the Go
// MySQL driver.
type MySQLDB struct {
	db      *sql.DB
	mariadb bool
}

var _ EffectDB = (*MySQLDB)(nil)

// Engine returns EngineMySQL.
func (m *MySQLDB) Engine() string { return EngineMySQL }

// DB is the connection pool; the caller must not write through it.
func (m *MySQLDB) DB() *sql.DB { return m.db }

// openMySQL is openDatabase for the MySQL family: the DSN's host must
// pass the loopback rule unless allowRemote, and every connection is
// dialled to a loopback address only.
func openMySQL(ctx context.Context, dsn string, allowRemote bool) (*Database, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, newConnectError(dsn, "", err.Error(), err)
	}
	if !allowRemote {
		if h := mysqlHost(cfg); h != "" {
			if err := netguard.Check(h); err != nil {
				return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "AllowRemote", "cannot connect to database %s: host %s: %w (%s to use a database off this machine)",
					RedactDSN(dsn), h, err, idemcheck.Setting("AllowRemote"))
			}
			timeout := cfg.Timeout
			cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, port, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				cands, err := netguard.Candidates(host, port, false)
				if err != nil {
					return nil, err
				}
				d := netguard.Dialer(false, timeout)
				for _, a := range cands {
					var c net.Conn
					if c, err = d.DialContext(ctx, "tcp", a); err == nil {
						return c, nil
					}
				}
				return nil, err
			}
		}
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, newConnectError(dsn, cfg.Passwd, err.Error(), err)
	}
	db := sql.OpenDB(conn)
	pingCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var version string
	if err := db.QueryRowContext(pingCtx, "SELECT VERSION()").Scan(&version); err != nil {
		_ = db.Close()
		return nil, newConnectError(dsn, cfg.Passwd, err.Error(), err)
	}
	m := &MySQLDB{db: db, mariadb: strings.Contains(strings.ToLower(version), "mariadb")}
	return &Database{DSN: dsn, Source: SourceDSN, Engine: EngineMySQL, SQL: m}, nil
}

// Check implements EffectDB: the query is read first (readMySQLQuery), the
// functions it calls must not be the schema's own or loadable ones, the
// server prepares it for its parameter count, and it runs once.
func (m *MySQLDB) Check(ctx context.Context, query string, args []string) error {
	read, why := readMySQLQuery(query)
	if why != "" {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s %s", idemcheck.Field("EffectSQL"), why)
	}
	if name := m.ownFunction(ctx, read.calls); name != "" {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s calls %s(), a function defined in the database, which may write or wait: an effect query calls only built-in functions",
			idemcheck.Field("EffectSQL"), name)
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return idemcheck.Unavailablef("database: %v", err)
	}
	defer conn.Close()
	params := -1
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("the driver cannot prepare")
		}
		st, err := pc.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		params = st.NumInput()
		return st.Close()
	})
	if err != nil {
		return mysqlQueryError(err)
	}
	if params != len(args) {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s takes %d parameters (?) but %d %s were given",
			idemcheck.Field("EffectSQL"), params, len(args), idemcheck.Field("EffectArgs"))
	}
	err = m.inReadOnly(ctx, conn, EffectTimeoutDefault, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, anyArgs(args)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		if len(cols) != 1 {
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must return one number (such as SELECT count(*) ...), it returns %d columns", idemcheck.Field("EffectSQL"), len(cols))
		}
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must return one number (such as SELECT count(*) ...): %v", idemcheck.Field("EffectSQL"), err)
			}
		}
		return rows.Err()
	})
	return mysqlQueryError(err)
}

// EffectTimeoutDefault bounds the preflight run of a MySQL effect query,
// as runner.EffectTimeout bounds each run after.
const EffectTimeoutDefault = 5 * time.Second

// ownFunction returns the first of calls that names a function defined
// in the current database or loaded into the server (a UDF), "" when
// none does. Built-in names win over a stored function's when unqualified,
// but a name that is both is refused too: the reader cannot tell.
func (m *MySQLDB) ownFunction(ctx context.Context, calls []string) string {
	if len(calls) == 0 {
		return ""
	}
	own := map[string]bool{}
	for _, q := range []string{
		"SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_SCHEMA = DATABASE()",
		"SELECT name FROM mysql.func", // loadable functions; unreadable without the privilege
	} {
		rows, err := m.db.QueryContext(ctx, q)
		if err != nil {
			continue
		}
		for rows.Next() {
			var name string
			if rows.Scan(&name) == nil {
				own[strings.ToUpper(name)] = true
			}
		}
		rows.Close()
	}
	for _, c := range calls {
		if own[strings.ToUpper(c)] {
			return c
		}
	}
	return ""
}

// CountEach implements EffectDB: one connection, its statement timeout
// set, one read-only transaction, the query prepared once and run for
// each argument list.
func (m *MySQLDB) CountEach(ctx context.Context, query string, args [][]string, timeout time.Duration) ([]int64, error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out := make([]int64, 0, len(args))
	err = m.inReadOnly(ctx, conn, timeout, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, a := range args {
			var n int64
			if err := st.QueryRowContext(ctx, anyArgs(a)...).Scan(&n); err != nil {
				return err
			}
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

// inReadOnly runs fn in a read-only transaction (START TRANSACTION READ
// ONLY) on conn, rolled back whatever happens, with the session's
// statement timeout set first: MariaDB's max_statement_time (seconds),
// MySQL's max_execution_time (milliseconds, SELECT only, which is all an
// effect query may be).
func (m *MySQLDB) inReadOnly(ctx context.Context, conn *sql.Conn, timeout time.Duration, fn func(*sql.Tx) error) error {
	set := fmt.Sprintf("SET SESSION max_execution_time = %d", timeout.Milliseconds())
	if m.mariadb {
		set = fmt.Sprintf("SET SESSION max_statement_time = %.3f", timeout.Seconds())
	}
	if _, err := conn.ExecContext(ctx, set); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

func anyArgs(args []string) []any {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a
	}
	return vals
}

// mysqlQueryError names EffectSQL and says what the server said; a usage
// error already made is kept.
func mysqlQueryError(err error) error {
	if err == nil {
		return nil
	}
	var ie *idemcheck.Error
	if errors.As(err, &ie) {
		return err
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1792: // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must only read, and this query writes (refused in a read-only transaction: %s): count with SELECT", idemcheck.Field("EffectSQL"), me.Message)
		case 1969, 3024: // MariaDB's and MySQL's statement timeout
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s took longer than %v for one intent: count over an indexed column", idemcheck.Field("EffectSQL"), EffectTimeoutDefault)
		}
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s: the database says: %s (error %d)", idemcheck.Field("EffectSQL"), me.Message, me.Number)
	}
	return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s: %v", idemcheck.Field("EffectSQL"), err)
}
