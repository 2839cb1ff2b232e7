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
	var out mysqlQuery
	var words []string // upper-cased bare words, in order
	first := ""
	i := 0
	n := len(q)
	for i < n {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == n || q[i+2] <= ' ')):
			for i < n && q[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			if strings.HasPrefix(q[i:], "/*!") || strings.HasPrefix(q[i:], "/*M!") || strings.HasPrefix(q[i:], "/*+") {
				return out, "holds an executable comment or an optimizer hint (/*! … */, /*+ … */), which the server runs: leave it out"
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out, "has a comment that does not end (/* without */)"
			}
			i += end + 4
		case c == '\'' || c == '"':
			j, ok := skipQuoted(q, i, c, true)
			if !ok {
				return out, "has a string that does not end"
			}
			i = j
		case c == '`':
			j, ok := skipQuoted(q, i, '`', false)
			if !ok {
				return out, "has a quoted name that does not end"
			}
			if isCall(q, j) {
				if i > 0 && q[i-1] == '.' {
					return out, fmt.Sprintf("calls %s(), a function of a schema, which may write: an effect query calls only built-in functions", q[i:j])
				}
				out.calls = append(out.calls, strings.ReplaceAll(q[i+1:j-1], "``", "`"))
			}
			i = j
		case c == '?':
			out.placeholders++
			i++
		case c == '$' && i+1 < n && q[i+1] >= '0' && q[i+1] <= '9':
			return out, "uses $1-style placeholders, which are PostgreSQL's: MySQL and MariaDB take ?, one for each effect argument in order (WHERE customer_id = ?)"
		case c == ';':
			rest := strings.TrimSpace(q[i+1:])
			if rest != "" {
				return out, "holds several statements: give one SELECT"
			}
			return out, "ends with ';': give the SELECT alone, without the ';'"
		case c == ':' && i+1 < n && q[i+1] == '=':
			return out, "assigns a variable (:=): an effect query only reads"
		case c == '@':
			// A user variable is read, not set (:= is refused above);
			// @@name reads a system variable.
			i++
			for i < n && (q[i] == '@' || isWordByte(q[i]) || q[i] == '.') {
				i++
			}
		case isWordByte(c):
			j := i
			for j < n && isWordByte(q[j]) {
				j++
			}
			word := q[i:j]
			upper := strings.ToUpper(word)
			if first == "" {
				first = upper
			}
			words = append(words, upper)
			if isCall(q, j) {
				if i > 0 && q[i-1] == '.' {
					return out, fmt.Sprintf("calls %s(), a function of a schema, which may write: an effect query calls only built-in functions", word)
				}
				if why, ok := mysqlRefusedCalls[upper]; ok {
					return out, fmt.Sprintf("calls %s(), which %s: an effect query only reads the rows it counts", upper, why)
				}
				out.calls = append(out.calls, word)
			}
			i = j
		default:
			i++
		}
	}
	switch first {
	case "SELECT", "WITH":
	case "":
		return out, "is empty"
	case "CALL":
		return out, "calls a stored procedure (CALL), which may write: count with SELECT count(*) …"
	default:
		return out, fmt.Sprintf("is a %s statement: an effect query is one SELECT (SELECT count(*) FROM orders WHERE customer_id = ?)", first)
	}
	for k, w := range words {
		next := func(d int) string {
			if k+d >= 0 && k+d < len(words) {
				return words[k+d]
			}
			return ""
		}
		switch {
		case w == "INTO":
			return out, "writes its result somewhere (SELECT … INTO OUTFILE, DUMPFILE or a variable): an effect query returns its count"
		case w == "FOR" && (next(1) == "UPDATE" || next(1) == "SHARE"):
			return out, fmt.Sprintf("takes row locks (FOR %s), which would hold up the service under test: leave them out", next(1))
		case w == "LOCK" && next(1) == "IN" && next(2) == "SHARE":
			return out, "takes row locks (LOCK IN SHARE MODE), which would hold up the service under test: leave them out"
		case w == "NEXT" && next(1) == "VALUE" && next(2) == "FOR":
			return out, "advances a sequence (NEXT VALUE FOR): an effect query only reads"
		case w == "SET" && next(-1) != "CHARACTER" && next(-1) != "CHARSET":
			return out, "sets something (SET): an effect query only reads"
		case w == "LOCK" && (next(1) == "TABLES" || next(1) == "TABLE"):
			return out, "locks tables: an effect query only reads"
		}
	}
	return out, ""
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
