package faults

import "strings"

// sqlClass is what a statement does to the transaction state of its
// connection, and whether it writes.
type sqlClass uint8

const (
	sqlOther    sqlClass = iota
	sqlBegin             // BEGIN, START TRANSACTION: a transaction block opens
	sqlCommit            // COMMIT, END (COMMIT PREPARED too): a transaction commits, the block ends
	sqlChain             // COMMIT AND CHAIN: commits, and a new block opens at once
	sqlEndBlock          // ROLLBACK, ABORT, PREPARE TRANSACTION: the block ends, nothing commits
	sqlWrite             // INSERT, UPDATE, DELETE, MERGE, or a WITH query that runs one
)

// writeWords start a statement that writes rows.
var writeWords = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true}

// classifySQL reads a query string, which may hold several statements
// separated by semicolons, and returns each statement's class in order.
// It is a lexer, not a parser: it skips comments, quoted strings and
// identifiers and dollar-quoted bodies, and looks at each statement's first
// words. A WITH query writes when a write keyword follows a parenthesis (a
// data-modifying CTE, "AS (INSERT ...") or closes one (the main statement
// after the CTEs, ") DELETE ..."); SELECT ... FOR UPDATE does not. Writes
// hidden in functions (SELECT f()) or transaction control inside procedures
// (CALL p()) are not seen.
func classifySQL(q string) []sqlClass {
	var out []sqlClass
	var words []string // the statement's first words, upper case
	started, write := false, false
	var prev byte // the previous token: 'w' a word, '(' or ')', 'o' anything else
	lastWordEnd, lastWord := -1, ""
	flush := func() {
		if started {
			out = append(out, classOf(words, write))
		}
		words, started, write, prev = words[:0], false, false, 0
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ';':
			flush()
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			depth := 0
			for i < len(q) {
				if q[i] == '/' && i+1 < len(q) && q[i+1] == '*' {
					depth++
					i += 2
				} else if q[i] == '*' && i+1 < len(q) && q[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		case c == '\'':
			// E'...' strings take backslash escapes; others only ''.
			backslash := lastWordEnd == i && strings.EqualFold(lastWord, "E")
			i++
			for i < len(q) {
				if backslash && q[i] == '\\' {
					i += 2
					continue
				}
				if q[i] == '\'' {
					if i+1 < len(q) && q[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
			started, prev = true, 'o'
		case c == '"':
			i++
			for i < len(q) {
				if q[i] == '"' {
					if i+1 < len(q) && q[i+1] == '"' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
			started, prev = true, 'w'
		case c == '$':
			// $1 is a parameter; $tag$ ... $tag$ a dollar-quoted string.
			j := i + 1
			if j < len(q) && q[j] >= '0' && q[j] <= '9' {
				for j < len(q) && q[j] >= '0' && q[j] <= '9' {
					j++
				}
				i = j
			} else {
				for j < len(q) && isWordByte(q[j]) {
					j++
				}
				if j < len(q) && q[j] == '$' {
					tag := q[i : j+1]
					if k := strings.Index(q[j+1:], tag); k >= 0 {
						i = j + 1 + k + len(tag)
					} else {
						i = len(q)
					}
				} else {
					i++
				}
			}
			started, prev = true, 'o'
		case isWordByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(q) && (isWordByte(q[j]) || q[j] == '$') {
				j++
			}
			w := strings.ToUpper(q[i:j])
			if len(words) < 4 {
				words = append(words, w)
			}
			if (prev == '(' || prev == ')') && writeWords[w] {
				write = true
			}
			started, prev, lastWordEnd, lastWord = true, 'w', j, w
			i = j
		case c == '(' || c == ')':
			started, prev = true, c
			i++
		default:
			started, prev = true, 'o'
			i++
		}
	}
	flush()
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// classOf classes a statement by its first words.
func classOf(words []string, write bool) sqlClass {
	if len(words) == 0 {
		return sqlOther
	}
	rest := words[1:]
	if len(rest) > 0 && (rest[0] == "WORK" || rest[0] == "TRANSACTION") {
		rest = rest[1:]
	}
	chain := len(rest) >= 2 && rest[0] == "AND" && rest[1] == "CHAIN"
	switch words[0] {
	case "BEGIN":
		return sqlBegin
	case "START":
		if len(words) > 1 && words[1] == "TRANSACTION" {
			return sqlBegin
		}
	case "COMMIT", "END":
		if chain {
			return sqlChain
		}
		return sqlCommit
	case "ROLLBACK", "ABORT":
		switch {
		case len(rest) > 0 && (rest[0] == "TO" || rest[0] == "PREPARED"):
			// To a savepoint: the block goes on. A prepared transaction
			// is rolled back from outside any block.
			return sqlOther
		case chain:
			return sqlOther // a new block opens at once
		}
		return sqlEndBlock
	case "PREPARE":
		if len(words) > 1 && words[1] == "TRANSACTION" {
			return sqlEndBlock
		}
	case "INSERT", "UPDATE", "DELETE", "MERGE":
		return sqlWrite
	case "WITH":
		if write {
			return sqlWrite
		}
	}
	return sqlOther
}
