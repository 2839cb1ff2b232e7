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
	s := sqlLexer{lastWordEnd: -1}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ';':
			s.flush()
			i++
		case isSQLSpace(c):
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			i = skipLineComment(q, i)
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			i = skipBlockComment(q, i)
		case c == '\'':
			// E'...' strings take backslash escapes; others only ''.
			backslash := s.lastWordEnd == i && strings.EqualFold(s.lastWord, "E")
			i = skipQuoted(q, i, '\'', backslash)
			s.token('o')
		case c == '"':
			i = skipQuoted(q, i, '"', false)
			s.token('w')
		case c == '$':
			i = skipDollar(q, i)
			s.token('o')
		case isWordByte(c) && !(c >= '0' && c <= '9'):
			i = s.word(q, i)
		case c == '(' || c == ')':
			s.token(c)
			i++
		default:
			s.token('o')
			i++
		}
	}
	s.flush()
	return s.out
}

// sqlLexer is what classifySQL knows of the statement it is in, and the
// classes of those it has finished.
type sqlLexer struct {
	out     []sqlClass
	words   []string // the statement's first words, upper case
	started bool
	write   bool
	prev    byte // the previous token: 'w' a word, '(' or ')', 'o' anything else
	// The last word and where it ended: a string right after the word E
	// takes backslash escapes. Kept across statements.
	lastWordEnd int
	lastWord    string
}

// flush ends the statement, classing it if it had any token.
func (s *sqlLexer) flush() {
	if s.started {
		s.out = append(s.out, classOf(s.words, s.write))
	}
	s.words, s.started, s.write, s.prev = s.words[:0], false, false, 0
}

// token records a token other than a word: prev is its kind.
func (s *sqlLexer) token(prev byte) {
	s.started, s.prev = true, prev
}

// word reads the word at q[i:] and returns where it ends. A write keyword
// right after a parenthesis makes a WITH query a write.
func (s *sqlLexer) word(q string, i int) int {
	j := i
	for j < len(q) && (isWordByte(q[j]) || q[j] == '$') {
		j++
	}
	w := strings.ToUpper(q[i:j])
	if len(s.words) < 4 {
		s.words = append(s.words, w)
	}
	if (s.prev == '(' || s.prev == ')') && writeWords[w] {
		s.write = true
	}
	s.started, s.prev, s.lastWordEnd, s.lastWord = true, 'w', j, w
	return j
}

func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// skipLineComment returns where the -- comment at q[i:] ends: its newline.
func skipLineComment(q string, i int) int {
	for i < len(q) && q[i] != '\n' {
		i++
	}
	return i
}

// skipBlockComment returns the index past the /* comment at q[i:], which
// may nest.
func skipBlockComment(q string, i int) int {
	depth := 0
	for i < len(q) {
		switch {
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			depth++
			i += 2
		case q[i] == '*' && i+1 < len(q) && q[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipQuoted returns the index past the string or quoted identifier that
// opens at q[i] with quote, in which a doubled quote stands for itself, as
// does any byte after a backslash when backslash is set. An unclosed one
// runs to the end.
func skipQuoted(q string, i int, quote byte, backslash bool) int {
	i++
	for i < len(q) {
		if backslash && q[i] == '\\' {
			i += 2
			continue
		}
		if q[i] == quote {
			if i+1 < len(q) && q[i+1] == quote {
				i += 2
				continue
			}
			break
		}
		i++
	}
	return i + 1
}

// skipDollar returns the index past the $ at q[i]: a parameter ($1) or a
// dollar-quoted string ($tag$ ... $tag$, unclosed it runs to the end); a
// lone $ is one byte.
func skipDollar(q string, i int) int {
	j := i + 1
	if j < len(q) && q[j] >= '0' && q[j] <= '9' {
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		return j
	}
	for j < len(q) && isWordByte(q[j]) {
		j++
	}
	if j < len(q) && q[j] == '$' {
		tag := q[i : j+1]
		if k := strings.Index(q[j+1:], tag); k >= 0 {
			return j + 1 + k + len(tag)
		}
		return len(q)
	}
	return i + 1
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
