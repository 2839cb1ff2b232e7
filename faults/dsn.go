package faults

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// RewriteDSN returns dsn pointing at addr (a proxy's host:port, from a
// database Link's Addr) instead of its own server, with every other setting
// (user, password, database, sslmode, options) kept. It reads both forms
// PostgreSQL clients accept: URLs (postgres:// or postgresql://) and
// keyword/value strings ("host=db port=5432 dbname=app").
//
// Every way a DSN can name its server gives way to addr: the URL's host
// list (several hosts become the one proxy), and the host, port and
// hostaddr settings (in a URL's query too, where they would otherwise
// override the host list). A DSN that names no server gets one, so PGHOST
// and PGPORT cannot route the target around the proxy. Errors never quote
// the DSN, which may hold a password.
func RewriteDSN(dsn, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("faults: proxy address %q is not host:port", addr)
	}
	for _, scheme := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(dsn, scheme); ok {
			return scheme + rewriteURL(rest, host, port), nil
		}
	}
	pairs, err := parseKeywordValue(dsn)
	if err != nil {
		return "", fmt.Errorf("faults: DSN is neither a postgres:// URL nor keyword=value settings: %w", err)
	}
	var b strings.Builder
	for _, p := range pairs {
		if serverKey(p[0]) {
			continue
		}
		b.WriteString(p[0] + "=" + quoteValue(p[1]) + " ")
	}
	b.WriteString("host=" + quoteValue(host) + " port=" + quoteValue(port))
	return b.String(), nil
}

// serverKey reports whether a setting names the server to connect to.
func serverKey(k string) bool { return k == "host" || k == "port" || k == "hostaddr" }

// rewriteURL rewrites a URL after its scheme. It splits the URL the way
// PostgreSQL clients (libpq, pgx) do, not with net/url, which rejects
// multi-host lists: the user info ends at an '@' met before any '/', the
// host list at the first '/' or '?'.
func rewriteURL(rest, host, port string) string {
	userinfo := ""
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		userinfo, rest = rest[:i+1], rest[i+1:]
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	path, query, hasQuery := strings.Cut(rest[end:], "?")
	out := userinfo + net.JoinHostPort(host, port) + path
	if !hasQuery {
		return out
	}
	var kept []string
	for _, pair := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err == nil && serverKey(key) {
			continue
		}
		kept = append(kept, pair)
	}
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	return out
}

// parseKeywordValue splits keyword/value settings as libpq and pgx read
// them: "key = value" pairs separated by whitespace, values bare (with
// backslash escapes) or single-quoted (with \' and \\).
func parseKeywordValue(s string) ([][2]string, error) {
	var pairs [][2]string
	const space = " \t\n\r\v\f"
	s = strings.TrimLeft(s, space)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, errors.New(`a setting without "="`)
		}
		key := strings.Trim(s[:eq], space)
		if key == "" || strings.ContainsAny(key, space) {
			return nil, errors.New(`a setting name is empty or holds a space`)
		}
		s = strings.TrimLeft(s[eq+1:], space)
		var val strings.Builder
		if s != "" && s[0] == '\'' {
			i := 1
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' {
					i++
					if i == len(s) {
						break
					}
				}
				val.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("the quoted value of %s is not closed", key)
			}
			s = s[i+1:]
		} else {
			i := 0
			for ; i < len(s) && !strings.ContainsRune(space, rune(s[i])); i++ {
				if s[i] == '\\' {
					i++
					if i == len(s) {
						break
					}
				}
				val.WriteByte(s[i])
			}
			s = s[min(i, len(s)):]
		}
		pairs = append(pairs, [2]string{key, val.String()})
		s = strings.TrimLeft(s, space)
	}
	return pairs, nil
}

// quoteValue writes a keyword/value setting's value, quoted when it must be.
func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
