package targets

import (
	"net/url"
	"strings"
)

// redactedPassword replaces every password shown to a user. It is the same
// mask net/url and pgx use, so redacted DSNs look alike wherever they come from.
const redactedPassword = "xxxxx"

// RedactDSN returns dsn with every password replaced by xxxxx, so a DSN can be
// printed in errors, logs and reports. It understands both forms PostgreSQL
// accepts: URLs (postgres://user:pw@host/db?password=pw) and key=value strings
// (host=h password='pw'), and both forms of the MySQL family (DSNEngine):
// mysql:// and mariadb:// URLs, and the Go driver's user:pw@tcp(host)/db. It follows the structure pgx parses rather than
// pattern matching, and when a URL is malformed in a way that could strand a
// password outside the user-info part it masks more than strictly needed:
// showing too little is better than leaking a secret.
func RedactDSN(dsn string) string {
	if rest, ok := cutURLScheme(dsn); ok {
		return dsn[:len(dsn)-len(rest)] + redactURLRest(rest)
	}
	if rest, ok := cutMySQLScheme(dsn); ok {
		return dsn[:len(dsn)-len(rest)] + redactURLRest(rest)
	}
	if isGoMySQLDSN(dsn) {
		return redactGoMySQL(dsn)
	}
	return redactKeyValue(dsn)
}

// cutURLScheme strips the URL schemes pgx recognises; anything else is parsed
// as key=value, exactly as pgx decides.
func cutURLScheme(dsn string) (string, bool) {
	for _, prefix := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(dsn, prefix); ok {
			return rest, true
		}
	}
	return dsn, false
}

// redactURLRest redacts a URL after its scheme.
func redactURLRest(p string) string {
	var b strings.Builder
	// Like pgx (and libpq), the user-info part ends at an '@' seen before any '/'.
	hasUserInfo := false
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, _, hasPassword := strings.Cut(p[:i], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + redactedPassword)
		}
		b.WriteByte('@')
		p = p[i+1:]
		hasUserInfo = true
	}
	// An unescaped '@', '/' or '?' in a password pushes the rest of it into
	// what looks like host, path or query (postgres://u:pa/ss@h,
	// postgres://u:pa@ss@h). Such a URL is malformed, so hide everything up
	// to the last '@': after a user-info part all of it may be password,
	// before one, everything from the first ':' may be.
	if at := strings.LastIndexByte(p, '@'); at >= 0 && !wellFormedURLRest(p) {
		if hasUserInfo {
			p = p[at+1:]
		} else if colon := strings.IndexByte(p[:at], ':'); colon >= 0 {
			p = p[:colon] + ":" + redactedPassword + p[at:]
		}
	}
	head, query, hasQuery := strings.Cut(p, "?")
	b.WriteString(head)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(redactQuery(query))
	}
	return b.String()
}

// wellFormedURLRest reports whether the part after the user info parses as
// host[:port][,host[:port]...][/dbname][?key=value&...] with numeric ports and
// no '@' outside query values: the only shape in which a leftover '@' cannot
// be the end of a stranded password.
func wellFormedURLRest(p string) bool {
	hosts := p
	if i := strings.IndexAny(p, "/?"); i >= 0 {
		hosts = p[:i]
		p = p[i:]
	} else {
		p = ""
	}
	for _, h := range strings.Split(hosts, ",") {
		if strings.HasPrefix(h, "[") {
			end := strings.IndexByte(h, ']')
			if end < 0 {
				return false
			}
			h = "x" + h[end+1:]
		}
		name, port, hasPort := strings.Cut(h, ":")
		if strings.ContainsAny(name, "@") || (hasPort && !allDigits(port)) {
			return false
		}
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		db, q, hasQuery := strings.Cut(rest, "?")
		if strings.Contains(db, "@") {
			return false
		}
		p = ""
		if hasQuery {
			p = "?" + q
		}
	}
	if q, ok := strings.CutPrefix(p, "?"); ok && q != "" {
		for _, param := range strings.Split(q, "&") {
			key, _, hasValue := strings.Cut(param, "=")
			if !hasValue || strings.Contains(key, "@") {
				return false
			}
		}
	}
	return true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// redactQuery masks the values of the password and sslpassword query
// parameters, recognising percent-encoded key spellings (pass%77ord) too.
func redactQuery(query string) string {
	params := strings.Split(query, "&")
	for i, param := range params {
		key, _, hasValue := strings.Cut(param, "=")
		if hasValue && isPasswordKey(unescapeKey(key)) {
			params[i] = key + "=" + redactedPassword
		}
	}
	return strings.Join(params, "&")
}

func unescapeKey(key string) string {
	if k, err := url.QueryUnescape(key); err == nil {
		return k
	}
	return key
}

// isPasswordKey reports whether a DSN key carries a secret. The match ignores
// case and surrounding blanks: masking a key pgx would reject costs nothing.
func isPasswordKey(key string) bool {
	switch strings.ToLower(strings.TrimSpace(key)) {
	case "password", "sslpassword":
		return true
	}
	return false
}

// redactKeyValue masks password values in a key=value DSN, keeping every
// other byte as written. Values may be bare words or single-quoted strings
// with backslash escapes, as libpq and pgx accept. If the text stops parsing,
// everything from that point on is masked, since the parser cannot tell
// where a secret might end.
func redactKeyValue(dsn string) string {
	var b strings.Builder
	s := dsn
	for {
		// Copy the blanks between settings as they are.
		trimmed := strings.TrimLeft(s, " \t\n\r\v\f")
		b.WriteString(s[:len(s)-len(trimmed)])
		s = trimmed
		if s == "" {
			return b.String()
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || strings.ContainsAny(strings.TrimRight(s[:eq], " \t\n\r\v\f"), " \t\n\r\v\f") {
			b.WriteString(redactedPassword)
			return b.String()
		}
		key := s[:eq]
		afterEq := s[eq+1:]
		valueStart := strings.TrimLeft(afterEq, " \t\n\r\v\f")
		n, ok := keyValueLength(valueStart)
		if !ok {
			b.WriteString(s[:len(s)-len(valueStart)])
			b.WriteString(redactedPassword)
			return b.String()
		}
		b.WriteString(s[:len(s)-len(valueStart)])
		if isPasswordKey(key) {
			b.WriteString(redactedPassword)
		} else {
			b.WriteString(valueStart[:n])
		}
		s = valueStart[n:]
	}
}

// keyValueLength returns how many bytes of s the value at its start takes:
// a single-quoted string (with backslash escapes) or a bare word up to the
// next blank. ok is false for an unterminated quote.
func keyValueLength(s string) (n int, ok bool) {
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return i + 1, true
			}
		}
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case ' ', '\t', '\n', '\r', '\v', '\f':
			return i, true
		}
	}
	return len(s), true
}
