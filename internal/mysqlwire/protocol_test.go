package mysqlwire

import (
	"testing"
)

// The exchanges within a command: a LOCAL INFILE's contents, the
// authentication of COM_CHANGE_USER, and MariaDB's progress reports, pass
// inside their command's answer.
func TestExchangesWithinAnswers(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF|ClientLocalFiles, MariaDBProgress)
	c.client(pkt(0, append([]byte{ComQuery}, "LOAD DATA LOCAL INFILE 'f' INTO TABLE t"...)))
	c.server(pkt(1, append([]byte{0xfb}, 'f')))
	c.client(cat(pkt(2, []byte("1\n2\n")), pkt(3, nil)))
	c.server(pkt(4, okPayload(0, 2, StatusAutocommit)))
	c.client(pkt(0, append([]byte{ComChangeUser}, "app\x00\x00db\x00"...)))
	c.server(pkt(1, append([]byte{0xfe}, "mysql_native_password\x00abcdefghijklmnopqrst\x00"...)))
	c.client(pkt(2, []byte("01234567890123456789")))
	c.server(pkt(3, okPayload(0, 0, StatusAutocommit)))
	c.client(pkt(0, append([]byte{ComQuery}, "ALTER TABLE t ADD c INT"...)))
	c.server(pkt(1, cat([]byte{0xff, 0xff, 0xff}, []byte{1, 1, 2, 0, 0, 0, 0})))
	c.server(pkt(2, okPayload(0, 0, StatusAutocommit)))
	c.client(pkt(0, []byte{ComPing}))
	c.server(pkt(1, okPayload(0, 0, StatusAutocommit)))
	evs := checkChunks(t, c.msgs, 7)
	wantLines(t, evs[1:],
		"command "+span(c, 3)+" #1 COM_QUERY write \"LOAD DATA LOCAL INFILE 'f' INTO TABLE t\" effect=autocommit-write write=autocommit",
		"answer 99..116 #1 COM_QUERY ok=true err=0 status=0x2/true results=1 rows=0",
		"command "+span(c, 7)+" #2 COM_CHANGE_USER other \"\" effect=none write=none",
		"answer 116..175 #2 COM_CHANGE_USER ok=true err=0 status=0x2/true results=0 rows=0",
		"command "+span(c, 11)+" #3 COM_QUERY other \"ALTER TABLE t ADD c INT\" effect=none write=none",
		"answer 175..200 #3 COM_QUERY ok=true err=0 status=0x2/true results=1 rows=0",
		"command "+span(c, 14)+" #4 COM_PING other \"\" effect=none write=none",
		"answer "+span(c, 15)+" #4 COM_PING ok=true err=0 status=0x2/true results=0 rows=0",
	)
}

// MariaDB's MARIADB_CLIENT_CACHE_METADATA: a column count followed by 0
// has no column definitions; by 1, it has them.
func TestCachedMetadata(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF, MariaDBCacheMetadata)
	for _, follows := range []byte{1, 0} {
		c.client(pkt(0, cat([]byte{ComStmtExecute}, le32(1), []byte{0}, le32(1))))
		b := pkt(1, []byte{1, follows})
		seq := byte(2)
		if follows == 1 {
			b = append(b, pkt(seq, colDef("v"))...)
			seq++
		}
		b = append(b, pkt(seq, []byte{0, 0, 1, 'z'})...)
		b = append(b, pkt(seq+1, okPayload(0xfe, 0, StatusAutocommit))...)
		c.server(b)
	}
	evs := checkChunks(t, c.msgs, 5)
	if len(evs) != 5 || evs[2].Answer.Rows != 1 || evs[4].Answer.Rows != 1 || evs[4].End != len(c.msgs[2].data)+len(c.msgs[4].data)+len(c.msgs[6].data)+len(c.msgs[0].data) {
		t.Errorf("events:\n%s", lines(evs))
	}
}

// An ERR the server sends unasked (before it closes an idle connection)
// is an answer to no command; a pipelined COM_STMT_EXECUTE of id -1 runs
// the statement prepared last (MariaDB); with CLIENT_QUERY_ATTRIBUTES and
// none sent, the query follows the attribute counts.
func TestOddCommands(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF|ClientQueryAttributes, 0)
	c.client(pkt(0, append([]byte{ComQuery, 0, 1}, "UPDATE t SET a = 1"...)))
	c.server(pkt(1, okPayload(0, 1, StatusAutocommit)))
	c.client(cat(pkt(0, append([]byte{ComStmtPrepare}, "DELETE FROM t WHERE id = ?"...)),
		pkt(0, cat([]byte{ComStmtExecute}, le32(0xffffffff), []byte{0}, le32(1)))))
	c.server(cat(pkt(1, cat([]byte{0}, le32(3), le16(0), le16(0), []byte{0}, le16(0))), pkt(1, okPayload(0, 1, StatusAutocommit))))
	c.server(pkt(0, errPayload(4031, "The client was disconnected by the server because of inactivity.")))
	evs := checkChunks(t, c.msgs, 6)
	wantLines(t, evs[1:],
		"command "+span(c, 3)+" #1 COM_QUERY write \"UPDATE t SET a = 1\" effect=autocommit-write write=autocommit",
		"answer "+span(c, 4)+" #1 COM_QUERY ok=true err=0 status=0x2/true results=1 rows=0",
		"command 92..123 #2 COM_STMT_PREPARE write \"DELETE FROM t WHERE id = ?\" effect=none write=none",
		"command 123..137 #3 COM_STMT_EXECUTE write \"DELETE FROM t WHERE id = ?\" effect=autocommit-write write=autocommit",
		"answer 110..126 #2 COM_STMT_PREPARE ok=true err=0 status=0x0/false results=0 rows=0",
		"answer 126..137 #3 COM_STMT_EXECUTE ok=true err=0 status=0x2/true results=1 rows=0",
		"answer "+span(c, 7)+" #0 COM_0x00 ok=false err=4031 status=0x0/false results=0 rows=0",
	)
}

// The transaction state the classification uses follows the server's
// status flags: a write is autocommitted only when autocommit is on and
// no transaction is open; BEGIN inside a transaction commits it.
func TestTransactionStateFromStatus(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	c.query("SET autocommit=0", 0)
	c.query("INSERT INTO t VALUES (1)", StatusInTrans)
	c.query("BEGIN", StatusInTrans)
	c.query("INSERT INTO t VALUES (2)", StatusInTrans)
	c.query("SET autocommit=1", StatusAutocommit)
	c.query("INSERT INTO t VALUES (3)", StatusAutocommit)
	c.query("CREATE TABLE u (a INT)", StatusAutocommit)
	evs := feedConv(c.msgs, 0)
	want := []struct {
		effect Effect
		write  WriteKind
		inTx   bool
	}{
		{NoEffect, NoWrite, false},
		{NoEffect, WriteInTransaction, false},
		{EffectCommit, NoWrite, true},
		{NoEffect, WriteInTransaction, true},
		{EffectCommit, NoWrite, true},
		{EffectAutocommitWrite, WriteAutocommit, false},
		{NoEffect, NoWrite, false},
	}
	var got []Command
	for _, e := range evs {
		if e.Kind == EventCommand {
			got = append(got, e.Command)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("events:\n%s", lines(evs))
	}
	for i, w := range want {
		if g := got[i]; g.Effect != w.effect || g.Write != w.write || g.InTransaction != w.inTx {
			t.Errorf("%s: effect %s write %s in transaction %v, want %s %s %v", g.SQL, g.Effect, g.Write, g.InTransaction, w.effect, w.write, w.inTx)
		}
	}
}

// With CLIENT_QUERY_ATTRIBUTES, the query follows the attributes' names,
// types and values (NULL ones have none); attributes that cannot be read
// leave the text unknown.
func TestQueryAttributes(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF|ClientQueryAttributes, 0)
	attrs := cat([]byte{ComQuery, 3, 1, 0x02, 1},
		[]byte{0x0f, 0, 1, 'a'}, []byte{0x08, 0x80, 2, 'b', 'b'}, []byte{0x0c, 0, 1, 'c'},
		[]byte{3, 'x', 'y', 'z'}, []byte{4, 0xea, 0x07, 1, 2})
	c.client(pkt(0, append(attrs, "COMMIT"...)))
	c.server(pkt(1, okPayload(0, 0, StatusAutocommit)))
	c.client(pkt(0, cat([]byte{ComQuery, 1, 1, 0, 2, 0x0f, 0, 1, 'a'}, []byte("DELETE FROM t"))))
	c.server(pkt(1, okPayload(0, 0, StatusAutocommit)))
	evs := checkChunks(t, c.msgs, 4)
	if len(evs) != 5 || evs[1].Command.SQL != "COMMIT" || evs[1].Command.Class() != Commit || evs[3].Command.SQL != "" {
		t.Errorf("events:\n%s", lines(evs))
	}
}
