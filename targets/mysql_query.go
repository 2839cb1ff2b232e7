package targets

import (
	"fmt"
	"strings"
)

// MySQL and MariaDB run a SELECT inside a read-only transaction even when
// it calls a function that waits, takes a lock, reads a server file or
// draws a random number: the transaction refuses only writes to tables.
// So the MySQL family's effect query is read before anything is sent, and
// refused on the words that can do more than read the rows it counts.

// mysqlRefusedCalls are the built-in functions an effect query may not
// call, each with what it does beyond reading.
var mysqlRefusedCalls = map[string]string{
	"SLEEP":                             "waits",
	"BENCHMARK":                         "runs an expression over and over",
	"GET_LOCK":                          "takes a named lock",
	"RELEASE_LOCK":                      "releases a named lock",
	"RELEASE_ALL_LOCKS":                 "releases named locks",
	"UUID":                              "returns a new value each call",
	"UUID_SHORT":                        "returns a new value each call",
	"SYS_GUID":                          "returns a new value each call",
	"RAND":                              "returns a new value each call",
	"RANDOM_BYTES":                      "returns a new value each call",
	"SYSDATE":                           "returns the time of the call",
	"LOAD_FILE":                         "reads a file on the database server",
	"NEXTVAL":                           "advances a sequence",
	"SETVAL":                            "sets a sequence",
	"LAST_INSERT_ID":                    "sets the session's last insert id when given a value",
	"MASTER_POS_WAIT":                   "waits for replication",
	"SOURCE_POS_WAIT":                   "waits for replication",
	"MASTER_GTID_WAIT":                  "waits for replication",
	"WAIT_FOR_EXECUTED_GTID_SET":        "waits for replication",
	"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS": "waits for replication",
}

// mysqlQuery is what reading an effect query found: its function calls
// (the names, as written, of words followed by '('), and its '?'
// placeholders.
type mysqlQuery struct {
	calls        []string
	placeholders int
}

// readMySQLQuery reads an effect query for the MySQL family and returns
// why it is refused ("" when it is not): anything but one SELECT (or WITH
// … SELECT), several statements, an executable comment, $1 placeholders,
// INTO, a locking read, a variable assignment, or a call of a function in
// mysqlRefusedCalls or of a schema's own function (db.f()). Strings,
// quoted names and comments are skipped as the server skips them.
func readMySQLQuery(q string) (mysqlQuery, string) {
	r := mysqlReader{q: q}
	if why := r.read(); why != "" {
		return r.out, why
	}
	if why := mysqlStatementRefused(r.first); why != "" {
		return r.out, why
	}
	return r.out, mysqlWordsRefused(r.words)
}

// mysqlReader reads an effect query a token at a time, skipping strings,
// quoted names and comments as the server skips them.
type mysqlReader struct {
	q     string
	i     int
	out   mysqlQuery
	words []string // upper-cased bare words, in order
	first string   // the first of them
}

// read reads the whole query and returns why it is refused on a token
// ("" when no token refuses it).
func (r *mysqlReader) read() string {
	q, n := r.q, len(r.q)
	for r.i < n {
		i := r.i
		c := q[i]
		why := ""
		switch {
		case isMySQLSpace(c):
			r.i++
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == n || q[i+2] <= ' ')):
			for r.i < n && q[r.i] != '\n' {
				r.i++
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			why = r.comment()
		case c == '\'' || c == '"':
			j, ok := skipQuoted(q, i, c, true)
			if !ok {
				return "has a string that does not end"
			}
			r.i = j
		case c == '`':
			why = r.quotedName()
		case c == '?':
			r.out.placeholders++
			r.i++
		case c == '$' && i+1 < n && q[i+1] >= '0' && q[i+1] <= '9':
			return "uses $1-style placeholders, which are PostgreSQL's: MySQL and MariaDB take ?, one for each effect argument in order (WHERE customer_id = ?)"
		case c == ';':
			if strings.TrimSpace(q[i+1:]) != "" {
				return "holds several statements: give one SELECT"
			}
			return "ends with ';': give the SELECT alone, without the ';'"
		case c == ':' && i+1 < n && q[i+1] == '=':
			return "assigns a variable (:=): an effect query only reads"
		case c == '@':
			// A user variable is read, not set (:= is refused above);
			// @@name reads a system variable.
			r.i++
			for r.i < n && (q[r.i] == '@' || isWordByte(q[r.i]) || q[r.i] == '.') {
				r.i++
			}
		case isWordByte(c):
			why = r.word()
		default:
			r.i++
		}
		if why != "" {
			return why
		}
	}
	return ""
}

func isMySQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// comment skips the /* comment at r.i, refusing one the server runs.
func (r *mysqlReader) comment() string {
	rest := r.q[r.i:]
	if strings.HasPrefix(rest, "/*!") || strings.HasPrefix(rest, "/*M!") || strings.HasPrefix(rest, "/*+") {
		return "holds an executable comment or an optimizer hint (/*! … */, /*+ … */), which the server runs: leave it out"
	}
	end := strings.Index(rest[2:], "*/")
	if end < 0 {
		return "has a comment that does not end (/* without */)"
	}
	r.i += end + 4
	return ""
}

// quotedName reads the `quoted name` at r.i, a call when '(' follows.
func (r *mysqlReader) quotedName() string {
	q, i := r.q, r.i
	j, ok := skipQuoted(q, i, '`', false)
	if !ok {
		return "has a quoted name that does not end"
	}
	if isCall(q, j) {
		if i > 0 && q[i-1] == '.' {
			return fmt.Sprintf("calls %s(), a function of a schema, which may write: an effect query calls only built-in functions", q[i:j])
		}
		r.out.calls = append(r.out.calls, strings.ReplaceAll(q[i+1:j-1], "``", "`"))
	}
	r.i = j
	return ""
}

// word reads the bare word at r.i, a call when '(' follows.
func (r *mysqlReader) word() string {
	q, i := r.q, r.i
	j := i
	for j < len(q) && isWordByte(q[j]) {
		j++
	}
	word := q[i:j]
	upper := strings.ToUpper(word)
	if r.first == "" {
		r.first = upper
	}
	r.words = append(r.words, upper)
	if isCall(q, j) {
		if i > 0 && q[i-1] == '.' {
			return fmt.Sprintf("calls %s(), a function of a schema, which may write: an effect query calls only built-in functions", word)
		}
		if why, ok := mysqlRefusedCalls[upper]; ok {
			return fmt.Sprintf("calls %s(), which %s: an effect query only reads the rows it counts", upper, why)
		}
		r.out.calls = append(r.out.calls, word)
	}
	r.i = j
	return ""
}

// mysqlStatementRefused says why a query whose first word is first is not
// one SELECT ("" when it is).
func mysqlStatementRefused(first string) string {
	switch first {
	case "SELECT", "WITH":
		return ""
	case "":
		return "is empty"
	case "CALL":
		return "calls a stored procedure (CALL), which may write: count with SELECT count(*) …"
	}
	return fmt.Sprintf("is a %s statement: an effect query is one SELECT (SELECT count(*) FROM orders WHERE customer_id = ?)", first)
}

// mysqlWordsRefused says why a SELECT whose bare words are words does more
// than read ("" when it only reads): INTO, a locking read, a sequence's
// next value, SET, LOCK TABLES.
func mysqlWordsRefused(words []string) string {
	for k, w := range words {
		next := func(d int) string {
			if k+d >= 0 && k+d < len(words) {
				return words[k+d]
			}
			return ""
		}
		switch {
		case w == "INTO":
			return "writes its result somewhere (SELECT … INTO OUTFILE, DUMPFILE or a variable): an effect query returns its count"
		case w == "FOR" && (next(1) == "UPDATE" || next(1) == "SHARE"):
			return fmt.Sprintf("takes row locks (FOR %s), which would hold up the service under test: leave them out", next(1))
		case w == "LOCK" && next(1) == "IN" && next(2) == "SHARE":
			return "takes row locks (LOCK IN SHARE MODE), which would hold up the service under test: leave them out"
		case w == "NEXT" && next(1) == "VALUE" && next(2) == "FOR":
			return "advances a sequence (NEXT VALUE FOR): an effect query only reads"
		case w == "SET" && next(-1) != "CHARACTER" && next(-1) != "CHARSET":
			return "sets something (SET): an effect query only reads"
		case w == "LOCK" && (next(1) == "TABLES" || next(1) == "TABLE"):
			return "locks tables: an effect query only reads"
		}
	}
	return ""
}

// skipQuoted returns the index just past the quoted text starting at
// q[i], a quote; doubled quotes and (for strings) backslashes escape.
func skipQuoted(q string, i int, quote byte, backslash bool) (int, bool) {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

// isCall reports whether the word ending at q[j] is called: the next
// character that is not a blank is '('.
func isCall(q string, j int) bool {
	for j < len(q) && (q[j] == ' ' || q[j] == '\t' || q[j] == '\n' || q[j] == '\r') {
		j++
	}
	return j < len(q) && q[j] == '('
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
