package mysqlwire

import (
	"testing"
)

// encodeConv writes a conversation as the fuzzer's input: each message
// as a direction byte (odd: from the client), a 16-bit length, and that
// many bytes.
func encodeConv(msgs []msg) []byte {
	var out []byte
	for _, m := range msgs {
		for b := m.data; ; {
			n := min(len(b), 0xffff)
			tag := byte(0)
			if m.up {
				tag = 1
			}
			out = append(out, tag, byte(n), byte(n>>8))
			out = append(out, b[:n]...)
			b = b[n:]
			if len(b) == 0 {
				break
			}
		}
	}
	return out
}

// decodeConv reads the fuzzer's input back into messages; a short tail is
// one last message of what is left.
func decodeConv(in []byte) []msg {
	var out []msg
	for len(in) > 0 {
		if len(in) < 3 {
			return append(out, msg{up: in[0]&1 == 1, data: in[1:]})
		}
		n := min(int(in[1])|int(in[2])<<8, len(in)-3)
		out = append(out, msg{up: in[0]&1 == 1, data: in[3 : 3+n]})
		in = in[3+n:]
	}
	return out
}

// FuzzScanner: whatever either side sends, the scanner never panics, its
// offsets stay within the chunk it was given, it says nothing after it
// stopped, and it finds the same events at the same places however each
// message is cut into chunks (the relay hands it whatever reads gave).
func FuzzScanner(f *testing.F) {
	tx := newConv(baseCaps|ClientDeprecateEOF, 0)
	tx.query("BEGIN", StatusInTrans).query("INSERT INTO t VALUES (1)", StatusInTrans).query("COMMIT", StatusAutocommit)
	f.Add(encodeConv(tx.msgs), 3)
	rs := newConv(baseCaps, 0)
	rs.client(pkt(0, append([]byte{ComQuery}, "SELECT a FROM t; SELECT 2"...)))
	seq := rs.resultSet(1, []string{"a"}, [][]string{{"1"}, {"2"}}, StatusAutocommit|StatusMoreResultsExists)
	rs.resultSet(seq, []string{"b"}, nil, StatusAutocommit)
	f.Add(encodeConv(rs.msgs), 5)
	ps := newConv(baseCaps|ClientDeprecateEOF, MariaDBCacheMetadata|MariaDBProgress)
	ps.client(pkt(0, append([]byte{ComStmtPrepare}, "UPDATE t SET a = ?"...)))
	ps.server(cat(pkt(1, cat([]byte{0}, le32(1), le16(0), le16(1), []byte{0}, le16(0))), pkt(2, colDef("?"))))
	ps.client(pkt(0, cat([]byte{ComStmtExecute}, le32(1), []byte{0}, le32(1))))
	ps.server(pkt(1, okPayload(0, 1, StatusAutocommit)))
	f.Add(encodeConv(ps.msgs), 1)
	ssl := []msg{{up: false, data: pkt(0, greetingPayload(baseCaps|ClientSSL, 0, 0))},
		{up: true, data: pkt(1, cat(le32(baseCaps|ClientSSL), le32(0), []byte{45}, make([]byte, 23)))}}
	f.Add(encodeConv(ssl), 2)
	f.Add([]byte{0, 5, 0, 0x16, 0x03, 0x01, 0, 5, 1, 1, 0}, 1)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		msgs := decodeConv(in)
		if chunk <= 0 || chunk > len(in)+1 {
			chunk = 1 + len(in)%7
		}
		whole := fuzzFeed(t, msgs, 0)
		if cut := fuzzFeed(t, msgs, chunk); cut != whole {
			t.Fatalf("in chunks of %d:\n%s\nwhole:\n%s", chunk, cut, whole)
		}
	})
}

// fuzzFeed feeds msgs as feedConv does, checking each chunk's events.
func fuzzFeed(t *testing.T, msgs []msg, k int) string {
	s := New()
	stopped := false
	var out []absEv
	var upPos, downPos int
	for _, m := range msgs {
		size := k
		if size <= 0 {
			size = max(len(m.data), 1)
		}
		for i := 0; i < len(m.data); i += size {
			chunk := m.data[i:min(i+size, len(m.data))]
			pos, scan := &downPos, s.Server
			if m.up {
				pos, scan = &upPos, s.Client
			}
			for _, e := range scan(chunk) {
				if stopped {
					t.Fatalf("an event after the scanner stopped: %+v", e)
				}
				if e.End < 0 || e.End > len(chunk) || e.Start > e.End {
					t.Fatalf("%s at %d..%d in a chunk of %d", e.Kind, e.Start, e.End, len(chunk))
				}
				stopped = e.Kind == EventStop
				e.Start += *pos
				e.End += *pos
				out = append(out, absEv{up: m.up, Event: e})
			}
			*pos += len(chunk)
		}
	}
	if _, st := s.Stopped(); st != stopped {
		t.Fatalf("Stopped() = %v after events that say %v", st, stopped)
	}
	return lines(out)
}

// BenchmarkScannerRows: what the scanner costs a relay on the bulk of a
// database link's bytes, rows, fed in 16 KiB chunks.
func BenchmarkScannerRows(b *testing.B) {
	c := newConv(baseCaps|ClientDeprecateEOF, 0)
	setup := len(c.msgs)
	rows := make([][]string, 10000)
	for i := range rows {
		rows[i] = []string{"12345", "a value of some forty bytes, give or take"}
	}
	c.client(pkt(0, append([]byte{ComQuery}, "SELECT id, v FROM t"...)))
	c.resultSet(1, []string{"id", "v"}, rows, StatusAutocommit)
	query, answer := c.msgs[setup].data, c.msgs[setup+1].data
	b.SetBytes(int64(len(answer)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := New()
		for _, m := range c.msgs[:setup] {
			if m.up {
				s.Client(m.data)
			} else {
				s.Server(m.data)
			}
		}
		s.Client(query)
		b.StartTimer()
		n := 0
		for i := 0; i < len(answer); i += 16 << 10 {
			n += len(s.Server(answer[i:min(i+16<<10, len(answer))]))
		}
		if n != 1 {
			b.Fatalf("%d events", n)
		}
	}
}
