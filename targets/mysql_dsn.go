package targets

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Database engines, as a DSN's form names them (DSNEngine) and as
// --db-engine takes them.
const (
	EnginePostgres = "postgres"
	EngineMySQL    = "mysql"
)

// DSNEngine says which engine a DSN is for: EngineMySQL for a mysql:// or
// mariadb:// URL and for the Go driver's form (user:pw@tcp(host:port)/db),
// EnginePostgres for everything else (postgres:// URLs and key=value
// strings), as pgx would read it. It sends nothing.
func DSNEngine(dsn string) string {
	if _, ok := cutURLScheme(dsn); ok {
		return EnginePostgres
	}
	if _, ok := cutMySQLScheme(dsn); ok || isGoMySQLDSN(dsn) {
		return EngineMySQL
	}
	return EnginePostgres
}

// cutMySQLScheme strips the URL schemes of the MySQL family.
func cutMySQLScheme(dsn string) (string, bool) {
	for _, prefix := range []string{"mysql://", "mariadb://"} {
		if len(dsn) >= len(prefix) && strings.EqualFold(dsn[:len(prefix)], prefix) {
			return dsn[len(prefix):], true
		}
	}
	return dsn, false
}

// goMySQLNet is what stands between the user info and the database name in
// the Go driver's form: nothing, or a network with an address in brackets.
var goMySQLNet = regexp.MustCompile(`^(tcp|tcp6|unix)?(\(.*\))?$`)

// isGoMySQLDSN reports whether dsn is in the form the Go MySQL driver
// parses, [user[:password]@][net[(addr)]]/dbname[?params], split as that
// driver splits it: the last '/', and the last '@' before it. A key=value
// PostgreSQL string starts with a key and '='; it is never read as one.
func isGoMySQLDSN(dsn string) bool {
	if keyValueStart.MatchString(dsn) {
		return false
	}
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return false
	}
	head := dsn[:slash]
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		head = head[at+1:]
	} else if head != "" && !strings.Contains(head, "(") {
		return false
	}
	return goMySQLNet.MatchString(head) && (head != "" || strings.Contains(dsn[:slash], "@"))
}

var keyValueStart = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)

// redactGoMySQL masks the password of a DSN in the Go driver's form: from
// the first ':' to the last '@' before the last '/', exactly the bytes the
// driver takes as the password.
func redactGoMySQL(dsn string) string {
	slash := strings.LastIndexByte(dsn, '/')
	head, tail := dsn[:slash], dsn[slash:]
	if db, query, ok := strings.Cut(tail, "?"); ok {
		tail = db + "?" + redactQuery(query)
	}
	at := strings.LastIndexByte(head, '@')
	if at < 0 {
		return head + tail
	}
	if colon := strings.IndexByte(head[:at], ':'); colon >= 0 {
		head = head[:colon] + ":" + redactedPassword + head[at:]
	}
	return head + tail
}

// mysqlConfig parses a MySQL-family DSN, in either form, into the Go
// driver's configuration, with what idemcheck always wants of it: one
// statement a query (multiStatements off), parameters bound by the server
// (interpolateParams off), no client file sent to the server (LOAD DATA
// LOCAL), and a connect timeout. Errors never quote the DSN.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	goDSN := dsn
	if rest, ok := cutMySQLScheme(dsn); ok {
		u, err := url.Parse("mysql://" + rest)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("invalid DSN: %v", err)
		}
		host := u.Host
		if host == "" {
			host = "127.0.0.1"
		}
		if u.Port() == "" {
			host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
		}
		var userInfo string
		if u.User != nil {
			userInfo = u.User.Username()
			if pw, ok := u.User.Password(); ok {
				userInfo += ":" + pw
			}
			userInfo += "@"
		}
		goDSN = userInfo + "tcp(" + host + ")/" + strings.TrimPrefix(u.EscapedPath(), "/")
		if u.RawQuery != "" {
			goDSN += "?" + u.RawQuery
		}
	}
	cfg, err := mysql.ParseDSN(goDSN)
	if err != nil {
		return nil, fmt.Errorf("invalid DSN: %s", strings.ReplaceAll(err.Error(), goDSN, "…"))
	}
	cfg.MultiStatements = false
	cfg.InterpolateParams = false
	cfg.AllowAllFiles = false
	if cfg.Timeout <= 0 {
		cfg.Timeout = connectTimeout
	}
	return cfg, nil
}

// mysqlHost is the host a MySQL configuration connects to; empty for a
// Unix socket, which is local.
func mysqlHost(cfg *mysql.Config) string {
	if cfg.Net == "unix" {
		return ""
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return cfg.Addr
	}
	return host
}

// MySQLDSNs gives a MySQL-family database in the two forms a program
// takes it: the URL (mysql://user:pw@host:port/db, which Node's mysql2,
// Python's and Ruby's clients read) and the Go driver's form
// (user:pw@tcp(host:port)/db).
func MySQLDSNs(user, password, hostport, db string) (urlForm, goForm string) {
	u := &url.URL{Scheme: "mysql", User: url.UserPassword(user, password), Host: hostport, Path: "/" + db}
	return u.String(), user + ":" + password + "@tcp(" + hostport + ")/" + db
}
