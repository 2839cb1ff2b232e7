package mysqlwire

import "strings"

// Class is what a statement does to its connection's transaction, or
// whether it writes or reads: the categories of faults/' classifySQL for
// PostgreSQL, with MySQL's own (REPLACE, LOAD DATA, SET autocommit).
type Class uint8

const (
	// Other is anything else: DDL, SET of other variables, CALL, DO...
	Other Class = iota
	// Begin opens a transaction: BEGIN [WORK], START TRANSACTION, XA
	// START. Inside a transaction it commits that one first.
	Begin
	// Commit commits the transaction: COMMIT [WORK] [AND [NO] CHAIN], XA
	// COMMIT.
	Commit
	// Rollback ends the transaction, committing nothing: ROLLBACK [WORK],
	// XA ROLLBACK (ROLLBACK TO SAVEPOINT is Other: the transaction goes on).
	Rollback
	// Write writes rows: INSERT, UPDATE, DELETE, REPLACE, LOAD DATA/XML,
	// or a WITH query whose main statement or a CTE writes.
	Write
	// Read reads only: SELECT (FOR UPDATE too: see Statement.Locking),
	// SHOW, DESCRIBE, EXPLAIN, TABLE, VALUES, WITH ... SELECT.
	Read
	// SetAutocommit sets the session's autocommit (Statement.Autocommit
	// says to what). Turned on inside a transaction, it commits it.
	SetAutocommit
)

var classNames = [...]string{"other", "begin", "commit", "rollback", "write", "read", "set-autocommit"}

// String names the class as the package doc does.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class?"
}

// Statement is one statement of a query string, as Classify reads it.
type Statement struct {
	Class Class
	// Chain: COMMIT AND CHAIN or ROLLBACK AND CHAIN, after which a new
	// transaction is open at once.
	Chain bool
	// Locking: a read that locks what it reads (FOR UPDATE, FOR SHARE,
	// LOCK IN SHARE MODE). It stays a Read, as SELECT ... FOR UPDATE is no
	// write for faults/ on PostgreSQL either.
	Locking bool
	// Autocommit is the value a SetAutocommit statement sets.
	Autocommit bool
	// ImplicitCommit: a statement of class Other that commits an open
	// transaction before it runs (DDL, LOCK TABLES, GRANT, ...).
	ImplicitCommit bool
}

// writeWords start a statement that writes rows.
var writeWords = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true}

// readWords start a statement that only reads.
var readWords = map[string]bool{"SELECT": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "EXPLAIN": true,
	"TABLE": true, "VALUES": true, "HELP": true}

// implicitWords start a statement that commits an open transaction first
// (MySQL's "Statements That Cause an Implicit Commit").
var implicitWords = map[string]bool{"ALTER": true, "CREATE": true, "DROP": true, "RENAME": true, "TRUNCATE": true,
	"LOCK": true, "UNLOCK": true, "GRANT": true, "REVOKE": true, "ANALYZE": true, "OPTIMIZE": true, "REPAIR": true,
	"CHECK": true, "FLUSH": true, "RESET": true, "INSTALL": true, "UNINSTALL": true, "CACHE": true}

// maxTokens bounds the tokens kept of each statement: its class shows in
// its first words (SET's assignments excepted, which rarely run long).
const maxTokens = 48

// token kinds.
const (
	tWord  = 'w' // a keyword or bare identifier, upper-cased
	tNum   = 'n'
	tStr   = 's' // a quoted string, unquoted
	tIdent = 'i' // a `quoted` identifier
)

type token struct {
	kind byte // tWord, tNum, tStr, tIdent, or the punctuation byte itself
	text string
}

// lexer state for one statement.
type stmtLex struct {
	toks    []token
	write   bool // a write keyword follows or closes a parenthesis (WITH)
	locking bool
	prev    string // the previous word (FOR UPDATE, IN SHARE MODE)
	last    byte   // the previous token's kind
}

func (l *stmtLex) add(t token) {
	if t.kind == tWord {
		if (l.last == '(' || l.last == ')') && writeWords[t.text] {
			l.write = true
		}
		if l.prev == "FOR" && (t.text == "UPDATE" || t.text == "SHARE") || l.prev == "SHARE" && t.text == "MODE" {
			l.locking = true
		}
		l.prev = t.text
	}
	l.last = t.kind
	if len(l.toks) < maxTokens {
		l.toks = append(l.toks, t)
	}
}

// Classify reads a query string, which may hold several statements
// separated by semicolons, and returns each statement's class in order.
// Like classifySQL in faults/ it is a lexer, not a parser: it skips
// whitespace, comments (#, "-- ", /* */) and quoted strings and
// identifiers, reads the contents of executable comments (/*! */, /*M! */)
// as SQL, and looks at each statement's first words. noBackslash is the
// session's NO_BACKSLASH_ESCAPES (a server status flag): then a backslash
// in a string is an ordinary character. A compound statement (BEGIN NOT
// ATOMIC, CREATE PROCEDURE, ...) runs to the end of the query: its
// semicolons are its own. Writes hidden in stored routines (CALL p()) or
// SQL-level prepared statements (EXECUTE s) are not seen.
func Classify(q string, noBackslash bool) []Statement {
	var out []Statement
	var l stmtLex
	compound := false
	flush := func() {
		if len(l.toks) > 0 {
			st := classOf(&l)
			out = append(out, st)
		}
		l = stmtLex{toks: l.toks[:0]}
	}
	inExec := false // inside /*! ... */
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ';' && !compound:
			flush()
			i++
		case c == ';':
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == len(q) || q[i+2] <= ' '):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '*' && inExec && i+1 < len(q) && q[i+1] == '/':
			inExec = false
			i += 2
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			var exec bool
			i, exec = blockComment(q, i)
			inExec = inExec || exec
		case c == '\'' || c == '"' || c == '`':
			j, text := quoted(q, i, !noBackslash && c != '`')
			kind := byte(tStr)
			if c == '`' {
				kind = tIdent
			}
			l.add(token{kind: kind, text: text})
			i = j
		case isWordByte(c):
			i = l.word(q, i, &compound)
		default:
			l.add(token{kind: c})
			i++
		}
	}
	flush()
	return out
}

// blockComment skips the comment that starts at q[i] ("/*"), or enters an
// executable one ("/*!", "/*M!" and a version number), whose text is SQL:
// it returns where to go on, and whether that is inside an executable
// comment.
func blockComment(q string, i int) (next int, exec bool) {
	if rest := q[i+2:]; strings.HasPrefix(rest, "!") || strings.HasPrefix(rest, "M!") {
		i += 3
		if rest[0] == 'M' {
			i++
		}
		for i < len(q) && q[i] >= '0' && q[i] <= '9' {
			i++
		}
		return i, true
	}
	if k := strings.Index(q[i+2:], "*/"); k >= 0 {
		return i + 2 + k + 2, false
	}
	return len(q), false
}

// word adds the word or number at q[i] to the statement's tokens, notes
// when the statement turns out compound (its semicolons are its own), and
// returns where it ends.
func (l *stmtLex) word(q string, i int, compound *bool) int {
	j := i
	for j < len(q) && isWordByte(q[j]) {
		j++
	}
	if q[i] >= '0' && q[i] <= '9' {
		l.add(token{kind: tNum, text: q[i:j]})
		return j
	}
	l.add(token{kind: tWord, text: strings.ToUpper(q[i:j])})
	if !*compound && len(l.toks) < maxTokens && isCompound(l.toks) {
		*compound = true
	}
	return j
}

// quoted reads the string or identifier quoted at q[i] and returns where
// it ends and its first bytes (SET reads values like 'ON'); an
// unterminated one runs to the end.
func quoted(q string, i int, backslash bool) (int, string) {
	quote := q[i]
	var b strings.Builder
	keep := func(c byte) {
		if b.Len() < 64 {
			b.WriteByte(c)
		}
	}
	i++
	for i < len(q) {
		c := q[i]
		switch {
		case backslash && c == '\\' && i+1 < len(q):
			keep(q[i+1])
			i += 2
			continue
		case c == quote && i+1 < len(q) && q[i+1] == quote:
			keep(c)
			i += 2
			continue
		case c == quote:
			return i + 1, b.String()
		}
		keep(c)
		i++
	}
	return i, b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// isCompound reports whether a statement's first words start a compound
// statement or a stored program, whose body holds semicolons.
func isCompound(toks []token) bool {
	w := func(i int) string {
		if i < len(toks) && toks[i].kind == tWord {
			return toks[i].text
		}
		return ""
	}
	switch w(0) {
	case "BEGIN":
		return w(1) == "NOT"
	case "CREATE":
		// The first object word after OR REPLACE, DEFINER = u@h, ...
		for i := 1; i < len(toks); i++ {
			switch w(i) {
			case "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE":
				return true
			case "TABLE", "VIEW", "INDEX", "DATABASE", "SCHEMA", "USER", "ROLE", "SEQUENCE", "SERVER",
				"TABLESPACE", "TEMPORARY", "UNIQUE", "FULLTEXT", "SPATIAL":
				return false
			}
		}
	case "IF", "WHILE", "LOOP", "REPEAT", "CASE":
		return true
	}
	return false
}

// classOf classes a statement by its tokens.
func classOf(l *stmtLex) Statement {
	var words []string // the leading words, up to the first other token
	for _, t := range l.toks {
		if t.kind == '(' && len(words) == 0 {
			continue // (SELECT ...) UNION ...
		}
		if t.kind != tWord {
			break
		}
		words = append(words, t.text)
	}
	if len(words) == 0 {
		return Statement{}
	}
	rest := words[1:]
	if len(rest) > 0 && rest[0] == "WORK" {
		rest = rest[1:]
	}
	chain := len(rest) >= 2 && rest[0] == "AND" && rest[1] == "CHAIN"
	switch w := words[0]; {
	case w == "BEGIN":
		if len(rest) == 0 || rest[0] != "NOT" {
			return Statement{Class: Begin}
		}
	case w == "START":
		if len(rest) > 0 && rest[0] == "TRANSACTION" {
			return Statement{Class: Begin}
		}
	case w == "COMMIT":
		return Statement{Class: Commit, Chain: chain}
	case w == "ROLLBACK":
		if len(rest) > 0 && rest[0] == "TO" {
			return Statement{}
		}
		return Statement{Class: Rollback, Chain: chain}
	case w == "XA" && len(rest) > 0:
		switch rest[0] {
		case "START", "BEGIN":
			return Statement{Class: Begin}
		case "COMMIT":
			return Statement{Class: Commit}
		case "ROLLBACK":
			return Statement{Class: Rollback}
		}
	case writeWords[w], w == "LOAD" && len(rest) > 0 && (rest[0] == "DATA" || rest[0] == "XML"):
		return Statement{Class: Write}
	case w == "WITH":
		if l.write {
			return Statement{Class: Write}
		}
		return Statement{Class: Read, Locking: l.locking}
	case readWords[w]:
		return Statement{Class: Read, Locking: l.locking}
	case w == "SET":
		if on, ok := setsAutocommit(l.toks[1:]); ok {
			return Statement{Class: SetAutocommit, Autocommit: on}
		}
	case implicitWords[w]:
		temporary := len(rest) > 0 && rest[0] == "TEMPORARY"
		return Statement{ImplicitCommit: !temporary}
	}
	return Statement{}
}

// setsAutocommit reads the assignments of a SET statement (toks follow
// SET) and reports whether one sets the session's autocommit, and to
// what: autocommit, @@autocommit, @@session.autocommit, @@local.autocommit,
// SESSION autocommit, LOCAL autocommit; not GLOBAL ones, nor a user
// variable @autocommit.
func setsAutocommit(toks []token) (on, ok bool) {
	for i := 0; i < len(toks); {
		// One assignment: [scope] name = value, up to a comma.
		global, user := false, false
		j := i
		for ; j < len(toks) && toks[j].kind != '=' && toks[j].kind != ','; j++ {
		}
		name := ""
		for k := i; k < j; k++ {
			t := toks[k]
			switch {
			case t.kind == tWord && (t.text == "GLOBAL" || t.text == "PERSIST" || t.text == "PERSIST_ONLY"):
				global = true
			case t.kind == '@' && (k+1 >= j || toks[k+1].kind != '@') && (k == i || toks[k-1].kind != '@'):
				user = true
			case t.kind == tWord || t.kind == tIdent:
				name = strings.ToUpper(t.text)
			}
		}
		if j < len(toks) && toks[j].kind == '=' && name == "AUTOCOMMIT" && !global && !user && j+1 < len(toks) {
			switch v := toks[j+1]; strings.ToUpper(v.text) {
			case "1", "ON", "TRUE", "DEFAULT":
				on, ok = true, true
			case "0", "OFF", "FALSE":
				on, ok = false, true
			}
		}
		// On to the next assignment.
		for j < len(toks) && toks[j].kind != ',' {
			j++
		}
		i = j + 1
	}
	return on, ok
}
