package mysqlwire

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// checkChunks feeds the conversation whole and in chunks of every size up
// to max, and fails unless the events are the same each time; it returns
// them.
func checkChunks(t *testing.T, msgs []msg, maxChunk int) []absEv {
	t.Helper()
	whole := lines(feedConv(msgs, 0))
	for k := 1; k <= maxChunk; k++ {
		if got := lines(feedConv(msgs, k)); got != whole {
			t.Fatalf("in chunks of %d:\n%s\nwhole:\n%s", k, got, whole)
		}
	}
	return feedConv(msgs, 0)
}

func wantLines(t *testing.T, evs []absEv, want ...string) {
	t.Helper()
	got := strings.TrimSpace(lines(evs))
	if got != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// A transaction and an autocommitted write: each command is an event
// where it ends on the client's side, each answer where its last byte
// is, at the same offsets however the stream is cut.
func TestTransactionAcrossChunks(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	c.query("BEGIN", StatusAutocommit|StatusInTrans)
	c.query("/* app */ insert INTO t VALUES (1)", StatusAutocommit|StatusInTrans)
	c.query("  commit  ", StatusAutocommit)
	c.query("-- note\nINSERT INTO t VALUES (2)", StatusAutocommit)
	evs := checkChunks(t, c.msgs, 40)
	wantLines(t, evs,
		"connected 88..99 ok=true err=0 status=0x2/true results=0 rows=0",
		"command 67..77 #1 COM_QUERY begin \"BEGIN\" effect=none write=none",
		"answer 99..110 #1 COM_QUERY ok=true err=0 status=0x3/true results=1 rows=0",
		"command 77..116 #2 COM_QUERY write \"/* app */ insert INTO t VALUES (1)\" effect=none write=in-transaction",
		"answer 110..121 #2 COM_QUERY ok=true err=0 status=0x3/true results=1 rows=0",
		"command 116..131 #3 COM_QUERY commit \"  commit  \" effect=commit write=commit",
		"answer 121..132 #3 COM_QUERY ok=true err=0 status=0x2/true results=1 rows=0",
		"command 131..168 #4 COM_QUERY write \"-- note\\nINSERT INTO t VALUES (2)\" effect=autocommit-write write=autocommit",
		"answer 132..143 #4 COM_QUERY ok=true err=0 status=0x2/true results=1 rows=0",
	)
}

// A result set ends with an OK packet (0xfe) with CLIENT_DEPRECATE_EOF,
// with an EOF packet without it, after an EOF that ends the column
// definitions; both report the rows and the status of the last packet.
func TestResultSetEnds(t *testing.T) {
	for _, caps := range []uint32{baseCaps, baseCaps | ClientDeprecateEOF} {
		c := newConv(caps, 0)
		c.client(pkt(0, append([]byte{ComQuery}, "SELECT a, b FROM t FOR UPDATE"...)))
		c.resultSet(1, []string{"a", "b"}, [][]string{{"1", "x"}, {"2", "y"}, {"3", ""}}, StatusAutocommit|StatusInTrans)
		c.query("SELECT 1", StatusAutocommit) // an OK: the scanner is in step again
		evs := checkChunks(t, c.msgs, 13)
		if len(evs) != 5 {
			t.Fatalf("caps %#x: %d events:\n%s", caps, len(evs), lines(evs))
		}
		a := evs[2]
		if a.Kind != EventAnswer || itoa(a.Start)+".."+itoa(a.End) != span(c, 4) || !a.Answer.OK || a.Answer.Rows != 3 || a.Answer.Results != 1 || !a.Answer.InTransaction() {
			t.Errorf("caps %#x: answer %+v, want OK, 3 rows, in a transaction, ending at %s", caps, a, span(c, 4))
		}
		if st := evs[1].Command.Statements; len(st) != 1 || st[0].Class != Read || !st[0].Locking {
			t.Errorf("caps %#x: SELECT ... FOR UPDATE is %+v, want a locking read", caps, st)
		}
		if evs[4].Kind != EventAnswer || evs[4].Command.ID != 2 {
			t.Errorf("caps %#x: the next answer is %+v", caps, evs[4])
		}
	}
}

// Several statements in one COM_QUERY get several results; the answer
// ends with the one that has no SERVER_MORE_RESULTS_EXISTS. An ERR ends
// it too.
func TestMoreResults(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	c.client(pkt(0, append([]byte{ComQuery}, "INSERT INTO t VALUES (1); SELECT 1; COMMIT"...)))
	c.server(pkt(1, okPayload(0, 1, StatusInTrans|StatusMoreResultsExists)))
	seq := c.resultSet(2, []string{"1"}, [][]string{{"1"}}, StatusInTrans|StatusMoreResultsExists)
	c.server(pkt(seq, okPayload(0, 0, StatusAutocommit)))
	c.client(pkt(0, append([]byte{ComQuery}, "DELETE FROM t; DELETE FROM u"...)))
	c.server(pkt(1, okPayload(0, 1, StatusAutocommit|StatusMoreResultsExists)))
	c.server(pkt(2, errPayload(1146, "no table u")))
	evs := checkChunks(t, c.msgs, 9)
	if len(evs) != 5 {
		t.Fatalf("%d events:\n%s", len(evs), lines(evs))
	}
	if a := evs[2].Answer; evs[2].Kind != EventAnswer || !a.OK || a.Results != 3 || a.Rows != 1 || a.InTransaction() {
		t.Errorf("first answer: %+v", evs[2])
	}
	if got := evs[1].Command; len(got.Statements) != 3 || got.Effect != EffectAutocommitWrite || got.Write != WriteAutocommit {
		t.Errorf("with autocommit, each statement commits: %+v", got)
	}
	if a := evs[4].Answer; a.OK || a.ErrCode != 1146 || a.SQLState != "23000" || a.Message != "no table u" {
		t.Errorf("second answer: %+v", a)
	}
}

// A payload of 0xffffff bytes or more spans packets; the scanner joins
// them, keeps only the first MiB of a query, and a text row whose first
// byte is 0xfe (a value over 16 MiB) is a row, not the end of the rows.
func TestMultiPacketPayloads(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxPacket+5)
	q := append([]byte{ComQuery}, "INSERT INTO t VALUES ('"...)
	q = append(q, big...)
	q = append(q, "')"...)
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	c.client(pkt(0, q))
	c.server(pkt(2, okPayload(0, 1, StatusAutocommit)))
	// A payload of exactly 0xffffff bytes ends with an empty packet.
	exact := append([]byte{ComQuery}, bytes.Repeat([]byte(" "), maxPacket-1)...)
	c.client(pkt(0, exact))
	c.server(pkt(2, okPayload(0, 0, StatusAutocommit)))
	// A row of one value over 16 MiB.
	c.client(pkt(0, append([]byte{ComQuery}, "SELECT v FROM t"...)))
	row := cat([]byte{0xfe}, le32(uint32(len(big))), le32(0), big)
	c.server(cat(pkt(1, []byte{1}), pkt(2, colDef("v")), pkt(3, row)))
	c.server(pkt(5, okPayload(0xfe, 0, StatusAutocommit)))
	evs := feedConv(c.msgs, 1<<20)
	if whole := feedConv(c.msgs, 0); lines(whole) != lines(evs) {
		t.Fatalf("in chunks:\n%s\nwhole:\n%s", lines(evs), lines(whole))
	}
	if len(evs) != 7 {
		t.Fatalf("%d events:\n%s", len(evs), lines(evs))
	}
	cmd := evs[1]
	if cmd.Kind != EventCommand || span(c, 3) != itoa(cmd.Start)+".."+itoa(cmd.End) || cmd.Command.Class() != Write || len(cmd.Command.SQL) != keepClient-1 {
		t.Errorf("the big query: %d..%d %s, %d bytes of SQL", cmd.Start, cmd.End, cmd.Command.Class(), len(cmd.Command.SQL))
	}
	if len(c.msgs[5].data) != maxPacket+8 || evs[3].End-evs[3].Start != maxPacket+8 {
		t.Errorf("the exact query: %d..%d", evs[3].Start, evs[3].End)
	}
	if a := evs[6]; a.Kind != EventAnswer || a.Answer.Rows != 1 || !a.Answer.OK {
		t.Errorf("the big row's answer: %+v", a)
	}
}

// A prepared statement: its text is remembered under the id its
// COM_STMT_PREPARE_OK gave, each COM_STMT_EXECUTE is classified by it,
// COM_STMT_CLOSE gets no answer and forgets it; the binary rows of an
// execution end as text rows do.
func TestPreparedStatements(t *testing.T) {
	for _, caps := range []uint32{baseCaps, baseCaps | ClientDeprecateEOF} {
		c := newConv(caps, 0)
		eof := !c.deprecateEOF()
		prepare := func(id uint32, q string, cols, params int) {
			c.client(pkt(0, append([]byte{ComStmtPrepare}, q...)))
			seq := byte(1)
			b := pkt(seq, cat([]byte{0}, le32(id), le16(uint16(cols)), le16(uint16(params)), []byte{0}, le16(0)))
			for _, n := range []int{params, cols} {
				for i := 0; i < n; i++ {
					seq++
					b = append(b, pkt(seq, colDef("?"))...)
				}
				if n > 0 && eof {
					seq++
					b = append(b, pkt(seq, eofPayload(StatusAutocommit))...)
				}
			}
			c.server(b)
		}
		execute := func(id uint32) {
			c.client(pkt(0, cat([]byte{ComStmtExecute}, le32(id), []byte{0}, le32(1), []byte{0, 1, 3, 0}, le32(5))))
		}
		prepare(7, "INSERT INTO t VALUES (?, ?)", 0, 2)
		execute(7)
		c.server(pkt(1, okPayload(0, 1, StatusAutocommit)))
		prepare(8, "SELECT v FROM t WHERE id = ?", 1, 1)
		execute(8)
		rows := cat(pkt(1, []byte{1}), pkt(2, colDef("v")))
		seq := byte(3)
		if eof {
			rows = append(rows, pkt(seq, eofPayload(StatusAutocommit))...)
			seq++
		}
		rows = append(rows, pkt(seq, []byte{0, 0, 1, 'z'})...)
		if eof {
			rows = append(rows, pkt(seq+1, eofPayload(StatusAutocommit))...)
		} else {
			rows = append(rows, pkt(seq+1, okPayload(0xfe, 0, StatusAutocommit))...)
		}
		c.server(rows)
		c.client(pkt(0, cat([]byte{ComStmtClose}, le32(7))))
		execute(7)
		c.server(pkt(1, errPayload(1243, "unknown statement")))
		evs := checkChunks(t, c.msgs, 11)
		wantLines(t, evs[1:],
			"command "+span(c, 3)+" #1 COM_STMT_PREPARE write \"INSERT INTO t VALUES (?, ?)\" effect=none write=none",
			"answer "+span(c, 4)+" #1 COM_STMT_PREPARE ok=true err=0 status=0x0/false results=0 rows=0",
			"command "+span(c, 5)+" #2 COM_STMT_EXECUTE write \"INSERT INTO t VALUES (?, ?)\" effect=autocommit-write write=autocommit",
			"answer "+span(c, 6)+" #2 COM_STMT_EXECUTE ok=true err=0 status=0x2/true results=1 rows=0",
			"command "+span(c, 7)+" #3 COM_STMT_PREPARE read \"SELECT v FROM t WHERE id = ?\" effect=none write=none",
			"answer "+span(c, 8)+" #3 COM_STMT_PREPARE ok=true err=0 status=0x0/false results=0 rows=0",
			"command "+span(c, 9)+" #4 COM_STMT_EXECUTE read \"SELECT v FROM t WHERE id = ?\" effect=none write=none",
			"answer "+span(c, 10)+" #4 COM_STMT_EXECUTE ok=true err=0 status=0x2/true results=1 rows=1",
			"command "+span(c, 11)+" #5 COM_STMT_CLOSE other \"INSERT INTO t VALUES (?, ?)\" effect=none write=none",
			"command "+span(c, 12)+" #6 COM_STMT_EXECUTE other \"\" effect=none write=none",
			"answer "+span(c, 13)+" #6 COM_STMT_EXECUTE ok=false err=1243 status=0x0/false results=0 rows=0",
		)
	}
}

// span is "start..end" of the message msgs[i] in its direction's stream.
func span(c *conv, i int) string {
	pos := 0
	for j, m := range c.msgs {
		if m.up != c.msgs[i].up {
			continue
		}
		if j == i {
			return itoa(pos) + ".." + itoa(pos+len(m.data))
		}
		pos += len(m.data)
	}
	return "?"
}

func itoa(n int) string { return strconv.Itoa(n) }

// An SSLRequest stops the scanner with the reason, and nothing after it
// is read.
func TestSSLRequestStops(t *testing.T) {
	caps := baseCaps | ClientSSL
	s := New()
	if evs := s.Server(pkt(0, greetingPayload(caps, 0, StatusAutocommit))); len(evs) != 0 {
		t.Fatalf("greeting: %+v", evs)
	}
	ssl := pkt(1, cat(le32(caps), le32(1<<24), []byte{45}, make([]byte, 23)))
	evs := s.Client(ssl)
	if len(evs) != 1 || evs[0].Kind != EventStop || !evs[0].TLS || !strings.Contains(evs[0].Reason, "TLS") {
		t.Fatalf("SSLRequest: %+v", evs)
	}
	if reason, stopped := s.Stopped(); !stopped || reason != evs[0].Reason {
		t.Errorf("Stopped() = %q, %v", reason, stopped)
	}
	if evs := s.Client([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); len(evs) != 0 {
		t.Errorf("after the SSLRequest: %+v", evs)
	}
	if evs := s.Server(pkt(2, okPayload(0, 0, 0))); len(evs) != 0 {
		t.Errorf("after the SSLRequest: %+v", evs)
	}
}

// What is not the protocol stops the scanner with a reason, never a
// panic: a first packet that is no greeting, a server packet out of
// sequence or that no command asked for, an invalid column count, a
// packet continuing a payload out of sequence, compression.
func TestGarbageStops(t *testing.T) {
	ok := newConv(baseCaps|ClientDeprecateEOF, 0).msgs
	cases := map[string][]msg{
		"no greeting":     {{up: false, data: []byte("HTTP/1.1 400 Bad Request\r\n\r\n")}},
		"out of sequence": append(append([]msg(nil), ok...), msg{true, pkt(0, []byte{ComPing})}, msg{false, pkt(5, okPayload(0, 0, 0))}),
		"unasked":         append(append([]msg(nil), ok...), msg{false, pkt(0, okPayload(0, 0, 0))}),
		"column count":    append(append([]msg(nil), ok...), msg{true, pkt(0, []byte{ComQuery, 'x'})}, msg{false, pkt(1, []byte{0xfc, 0, 0})}),
		"continuation": append(append([]msg(nil), ok...), msg{true, append(pkt(0, append([]byte{ComQuery}, bytes.Repeat([]byte("x"), maxPacket-1)...))[:maxPacket+4],
			0, 0, 0, 9)}),
		"compressed": newConv(baseCaps|ClientCompress, 0).client([]byte{9, 0, 0, 0, 0, 0, 0, 1, 2}).msgs,
		"old client": {{up: false, data: pkt(0, greetingPayload(baseCaps, 0, 0))}, {up: true, data: pkt(1, []byte{0, 0, 0, 0, 0})}},
	}
	for name, msgs := range cases {
		evs := feedConv(msgs, 0)
		last := evs[len(evs)-1]
		if last.Kind != EventStop || last.Reason == "" || last.TLS {
			t.Errorf("%s: events:\n%s", name, lines(evs))
		}
	}
}

// ClientPartial counts the bytes of a command not yet complete, however
// many chunks they came in, and nothing once it is.
func TestClientPartial(t *testing.T) {
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	s := New()
	for _, m := range c.msgs {
		if m.up {
			s.Client(m.data)
		} else {
			s.Server(m.data)
		}
	}
	q := pkt(0, append([]byte{ComQuery}, "COMMIT"...))
	if evs := s.Client(q[:2]); len(evs) != 0 || s.ClientPartial() != 2 {
		t.Fatalf("after 2 bytes: %+v, partial %d", evs, s.ClientPartial())
	}
	if evs := s.Client(q[2:7]); len(evs) != 0 || s.ClientPartial() != 7 {
		t.Fatalf("after 7 bytes: %+v, partial %d", evs, s.ClientPartial())
	}
	evs := s.Client(append(q[7:], 1, 0))
	if len(evs) != 1 || evs[0].Start != -7 || evs[0].End != len(q)-7 || s.ClientPartial() != 2 {
		t.Fatalf("the rest: %+v, partial %d", evs, s.ClientPartial())
	}
}
