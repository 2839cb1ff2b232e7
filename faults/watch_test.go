package faults

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// encode concatenates frontend messages as a client writes them.
func encode(t *testing.T, msgs ...pgproto3.FrontendMessage) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		b, err = m.Encode(b)
		require.NoError(t, err)
	}
	return b
}

type seen struct {
	at   int // offset of the matching message in the stream
	sql  string
	kind string
}

// commitRule is a rule with the match that was db-cut's default before the
// effect write: COMMIT or END.
var commitRule = &watchRule{re: regexp.MustCompile(CommitPattern)}

// scanAll feeds stream to a scanner in chunks of size chunk (the way the
// toxic receives it), lets every message pass, and returns the bytes
// passed, the messages r matches and whether the scanner refused the stream.
func scanAll(stream []byte, chunk int) (passed []byte, matches []seen, refused bool) {
	return scanWith(commitRule, stream, chunk)
}

func scanWith(r *watchRule, stream []byte, chunk int) (passed []byte, matches []seen, refused bool) {
	s := newPGScanner()
	var pend []byte
	base := 0 // offset of pend[0] in stream
	for off := 0; off < len(stream); off += chunk {
		pend = append(pend, stream[off:min(off+chunk, len(stream))]...)
		pass := 0
		for {
			n, res, size, ev := s.scan(pend[pass:])
			pass += n
			if res == scanRefuse {
				return append(passed, pend[:pass]...), matches, true
			}
			if res == scanMore {
				break
			}
			if r.match(ev, false) {
				matches = append(matches, seen{at: base + pass, sql: ev.sql, kind: ev.kind})
			}
			pass += size
		}
		passed = append(passed, pend[:pass]...)
		pend, base = pend[pass:], base+pass
	}
	return passed, matches, false
}

// TestPGScanner follows a realistic session: an SSLRequest refused by the
// server, then startup, simple queries, the extended protocol with unnamed
// and named statements, a named COMMIT re-run by Bind and Execute alone,
// and Close. Every chunking of the stream gives the same verdicts, and every
// byte passes, unchanged and in order.
func TestPGScanner(t *testing.T) {
	var stream []byte
	var want []seen
	add := func(match string, msgs ...pgproto3.FrontendMessage) {
		if match != "" {
			// The match is the last message given.
			want = append(want, seen{at: len(stream) + len(encode(t, msgs[:len(msgs)-1]...)), sql: match, kind: idemcheck.LandedCommit})
		}
		stream = append(stream, encode(t, msgs...)...)
	}
	add("", &pgproto3.SSLRequest{}) // the server answers 'N'; startup follows on this connection
	add("", &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "app", "database": "shop"}})
	add("", &pgproto3.PasswordMessage{Password: "COMMIT"}) // SQL-looking bytes in a message that carries none
	add("", &pgproto3.Query{String: "BEGIN"})
	add("", &pgproto3.Query{String: "INSERT INTO orders VALUES (1)"})
	add("commit", &pgproto3.Query{String: "commit"})
	add("  END;", &pgproto3.Query{String: "  END;"})
	add("", &pgproto3.Query{String: "SELECT 'COMMIT'"})
	add("", &pgproto3.Query{String: "COMMITTED"}) // \b: not a COMMIT
	// Extended protocol, unnamed statement and portal, as pgconn.ExecParams.
	add("COMMIT", &pgproto3.Parse{Query: "COMMIT"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{})
	add("", &pgproto3.Sync{})
	// A named COMMIT prepared once, then run by Bind and Execute alone.
	add("", &pgproto3.Parse{Name: "c", Query: "COMMIT"}, &pgproto3.Describe{ObjectType: 'S', Name: "c"}, &pgproto3.Sync{})
	add("COMMIT", &pgproto3.Bind{PreparedStatement: "c", DestinationPortal: "p"}, &pgproto3.Execute{Portal: "p"})
	add("", &pgproto3.Sync{})
	add("COMMIT", &pgproto3.Bind{PreparedStatement: "c"}, &pgproto3.Execute{})
	add("", &pgproto3.Sync{})
	// An INSERT bound with parameters does not match, nor does a portal
	// rebound from another statement.
	add("", &pgproto3.Parse{Name: "i", Query: "INSERT INTO orders VALUES ($1)"},
		&pgproto3.Bind{PreparedStatement: "i", DestinationPortal: "p", Parameters: [][]byte{[]byte("COMMIT")}},
		&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
	// Closing the statement forgets it.
	add("", &pgproto3.Close{ObjectType: 'S', Name: "c"}, &pgproto3.Bind{PreparedStatement: "c"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	// A long message the scanner does not read passes as it streams.
	add("", &pgproto3.CopyData{Data: bytes.Repeat([]byte("COMMIT "), 5000)})
	add("", &pgproto3.Terminate{})

	for _, chunk := range []int{1, 2, 3, 7, 64, 1500, len(stream)} {
		passed, matches, refused := scanAll(stream, chunk)
		assert.False(t, refused, "chunk %d", chunk)
		assert.Equal(t, stream, passed, "chunk %d: every byte passes, in order", chunk)
		assert.Equal(t, want, matches, "chunk %d", chunk)
	}
	require.Len(t, want, 5)
}

// A client that starts TLS, or sends bytes that are not the protocol,
// cannot be watched; the scanner says so instead of letting it through
// unwatched. The bytes before the point of no return pass.
func TestPGScannerRefusesWhatItCannotRead(t *testing.T) {
	ssl := encode(t, &pgproto3.SSLRequest{})
	clientHello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	passed, _, refused := scanAll(append(append([]byte{}, ssl...), clientHello...), 1)
	assert.True(t, refused, "TLS after SSLRequest")
	assert.Equal(t, ssl, passed)

	startup := encode(t, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
	garbage := append(append([]byte{}, startup...), 'Q', 0, 0, 0, 2)
	passed, _, refused = scanAll(garbage, 4)
	assert.True(t, refused, "a length shorter than itself")
	assert.Equal(t, startup, passed)

	_, _, refused = scanAll([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 5)
	assert.True(t, refused, "not PostgreSQL at all")

	// A CancelRequest connection carries nothing to watch.
	cancel := encode(t, &pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{0, 0, 0, 2}})
	passed, matches, refused := scanAll(cancel, 3)
	assert.False(t, refused)
	assert.Empty(t, matches)
	assert.Equal(t, cancel, passed)
}

// The effect write: the default rule matches a transaction's COMMIT, a
// write sent outside a block (a simple query, or the Sync that commits an
// extended-protocol write), and nothing else: not a write inside a block,
// not a SELECT, not a BEGIN, not a write rolled back with its block.
func TestPGScannerEffectWrite(t *testing.T) {
	const (
		commit = idemcheck.LandedCommit
		auto   = idemcheck.LandedAutocommitWrite
	)
	var stream []byte
	var want []seen
	add := func(sql, kind string, msgs ...pgproto3.FrontendMessage) {
		if kind != "" {
			want = append(want, seen{at: len(stream) + len(encode(t, msgs[:len(msgs)-1]...)), sql: sql, kind: kind})
		}
		stream = append(stream, encode(t, msgs...)...)
	}
	add("", "", &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "app", "database": "shop"}})
	// Simple queries: an autocommitted INSERT lands on its own Query.
	add("INSERT INTO orders VALUES (1)", auto, &pgproto3.Query{String: "INSERT INTO orders VALUES (1)"})
	add("", "", &pgproto3.Query{String: "SELECT * FROM orders FOR UPDATE"})
	add("", "", &pgproto3.Query{String: "WITH o AS (SELECT 1) SELECT * FROM o FOR UPDATE"})
	add("/* claim */ with k as (insert into keys values (1) returning 1) select * from k", auto,
		&pgproto3.Query{String: "/* claim */ with k as (insert into keys values (1) returning 1) select * from k"})
	add("WITH o AS (SELECT 1) DELETE FROM orders", auto, &pgproto3.Query{String: "WITH o AS (SELECT 1) DELETE FROM orders"})
	// A block: the writes in it do not land, its COMMIT does.
	add("", "", &pgproto3.Query{String: "BEGIN"})
	add("", "", &pgproto3.Query{String: "UPDATE orders SET id = 2"})
	add("", "", &pgproto3.Query{String: "ROLLBACK TO SAVEPOINT a"}) // the block goes on
	add("", "", &pgproto3.Query{String: "DELETE FROM orders"})
	add("commit", commit, &pgproto3.Query{String: "commit"})
	// A block rolled back: nothing lands; after it, writes autocommit again.
	add("", "", &pgproto3.Query{String: "start transaction isolation level serializable"})
	add("", "", &pgproto3.Query{String: "INSERT INTO orders VALUES (3)"})
	add("", "", &pgproto3.Query{String: "ABORT"})
	add("MERGE INTO orders USING x ON true WHEN NOT MATCHED THEN INSERT VALUES (4)", auto,
		&pgproto3.Query{String: "MERGE INTO orders USING x ON true WHEN NOT MATCHED THEN INSERT VALUES (4)"})
	// A whole transaction in one query lands once, as a commit; strings,
	// comments and dollar quotes do not fool the statement splitter.
	add("BEGIN; INSERT INTO t VALUES ('COMMIT;'); -- COMMIT;\nSELECT $x$;COMMIT$x$; END", commit,
		&pgproto3.Query{String: "BEGIN; INSERT INTO t VALUES ('COMMIT;'); -- COMMIT;\nSELECT $x$;COMMIT$x$; END"})
	// Extended protocol outside a block: the INSERT runs at Execute and
	// commits at Sync, where it lands; a SELECT's Sync does not.
	add("", "", &pgproto3.Parse{Name: "i", Query: "INSERT INTO orders VALUES ($1)"}, &pgproto3.Describe{ObjectType: 'S', Name: "i"}, &pgproto3.Sync{})
	add("", "", &pgproto3.Bind{PreparedStatement: "i", Parameters: [][]byte{[]byte("5")}}, &pgproto3.Execute{})
	add("INSERT INTO orders VALUES ($1)", auto, &pgproto3.Sync{})
	add("", "", &pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	// Two writes in one implicit transaction commit together: one landing.
	add("", "", &pgproto3.Bind{PreparedStatement: "i"}, &pgproto3.Execute{},
		&pgproto3.Parse{Query: "UPDATE orders SET id = 7"}, &pgproto3.Bind{}, &pgproto3.Execute{})
	add("INSERT INTO orders VALUES ($1)", auto, &pgproto3.Sync{})
	// A BEGIN pipelined with its first write: the write is in the block.
	add("", "", &pgproto3.Parse{Query: "begin"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "i"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	add("COMMIT", commit, &pgproto3.Parse{Query: "COMMIT"}, &pgproto3.Bind{}, &pgproto3.Execute{})
	add("", "", &pgproto3.Sync{})
	add("", "", &pgproto3.Terminate{})

	effect := &watchRule{}
	for _, chunk := range []int{1, 3, 64, len(stream)} {
		passed, matches, refused := scanWith(effect, stream, chunk)
		assert.False(t, refused, "chunk %d", chunk)
		assert.Equal(t, stream, passed, "chunk %d: every byte passes, in order", chunk)
		assert.Equal(t, want, matches, "chunk %d", chunk)
	}
	require.Len(t, want, 9)
}

func TestClassifySQL(t *testing.T) {
	for q, want := range map[string][]sqlClass{
		"":                                      nil,
		"  ;; ":                                 nil,
		"begin isolation level serializable":    {sqlBegin},
		"START TRANSACTION":                     {sqlBegin},
		"COMMIT WORK":                           {sqlCommit},
		"commit and chain":                      {sqlChain},
		"COMMIT AND NO CHAIN":                   {sqlCommit},
		"end transaction":                       {sqlCommit},
		"ROLLBACK":                              {sqlEndBlock},
		"rollback to savepoint s":               {sqlOther},
		"ROLLBACK TRANSACTION TO s":             {sqlOther},
		"PREPARE TRANSACTION 'x'":               {sqlEndBlock},
		"insert into t values (E'\\';')":        {sqlWrite},
		"insert into t values ('\\'); select 1": {sqlWrite, sqlOther},
		`UPDATE "select" SET a = 1`:             {sqlWrite},
		"SELECT 1 FOR UPDATE":                   {sqlOther},
		"SELECT $1; DELETE FROM t":              {sqlOther, sqlWrite},
		"WITH a AS MATERIALIZED (UPDATE t SET x = 1 RETURNING *) SELECT * FROM a": {sqlWrite},
		"WITH a AS (SELECT 1) UPDATE t SET x = 1":                                 {sqlWrite},
		"WITH a AS (SELECT 1 FOR UPDATE) SELECT * FROM a":                         {sqlOther},
		"/* BEGIN */ SELECT 'INSERT'":                                             {sqlOther},
		"DO $$BEGIN INSERT INTO t VALUES (1); COMMIT; END$$":                      {sqlOther},
	} {
		assert.Equal(t, want, classifySQL(q), "%q", q)
	}
}
