package mysqlwire

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// A conversation is what each side sends, in the order it is sent: the
// tests feed it to a scanner in chunks of any size, each message before
// the next (a relay scans a side's bytes before forwarding them, so a
// command is always scanned before its answer).
type msg struct {
	up   bool // client to server
	data []byte
}

// pkt frames payload as packets from sequence id seq on, split at
// maxPacket as the protocol does.
func pkt(seq byte, payload []byte) []byte {
	var out []byte
	for {
		n := min(len(payload), maxPacket)
		out = append(out, byte(n), byte(n>>8), byte(n>>16), seq)
		out = append(out, payload[:n]...)
		payload = payload[n:]
		seq++
		if n < maxPacket {
			return out
		}
	}
}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// greetingPayload is an Initial Handshake Packet (protocol 10). A MariaDB
// server leaves ClientMySQL unset and puts ext in the last 4 reserved
// bytes.
func greetingPayload(caps, ext uint32, status uint16) []byte {
	return cat([]byte{10}, []byte("10.11.14-MariaDB\x00"), le32(7), []byte("abcdefgh"), []byte{0},
		le16(uint16(caps)), []byte{45}, le16(status), le16(uint16(caps>>16)), []byte{21},
		make([]byte, 6), le32(ext), []byte("ijklmnopqrst\x00"), []byte("mysql_native_password\x00"))
}

// responsePayload is a HandshakeResponse41.
func responsePayload(caps, ext uint32) []byte {
	return cat(le32(caps), le32(1<<24), []byte{45}, make([]byte, 19), le32(ext),
		[]byte("root\x00"), []byte{0}, []byte("db\x00"), []byte("mysql_native_password\x00"))
}

func okPayload(header byte, affected uint64, status uint16) []byte {
	return cat([]byte{header, byte(affected), 0}, le16(status), le16(0))
}

func eofPayload(status uint16) []byte { return cat([]byte{0xfe}, le16(0), le16(status)) }

func errPayload(code uint16, msg string) []byte {
	return cat([]byte{0xff}, le16(code), []byte("#23000"), []byte(msg))
}

// colDef is a Column Definition packet's payload.
func colDef(name string) []byte {
	ls := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	return cat(ls("def"), ls("db"), ls("t"), ls("t"), ls(name), ls(name), []byte{0x0c}, le16(45), le32(80), []byte{0xfd}, le16(0), []byte{0}, le16(0))
}

func textRow(vals ...string) []byte {
	var out []byte
	for _, v := range vals {
		out = append(out, byte(len(v)))
		out = append(out, v...)
	}
	return out
}

// conv builds conversations for a client and server with the given
// capabilities.
type conv struct {
	caps, ext uint32
	msgs      []msg
}

const baseCaps = ClientMySQL | ClientProtocol41 | ClientMultiStatements | 1<<15 | 1<<19 // SECURE_CONNECTION, PLUGIN_AUTH

// newConv starts a conversation; with MariaDB capabilities (ext), the
// server is MariaDB's, which leaves ClientMySQL unset.
func newConv(caps, ext uint32) *conv {
	if ext != 0 {
		caps &^= ClientMySQL
	}
	c := &conv{caps: caps, ext: ext}
	c.server(pkt(0, greetingPayload(caps, ext, StatusAutocommit)))
	c.client(pkt(1, responsePayload(caps, ext)))
	c.server(pkt(2, okPayload(0, 0, StatusAutocommit)))
	return c
}

func (c *conv) client(b []byte) *conv { c.msgs = append(c.msgs, msg{up: true, data: b}); return c }
func (c *conv) server(b []byte) *conv { c.msgs = append(c.msgs, msg{up: false, data: b}); return c }

func (c *conv) deprecateEOF() bool { return c.caps&ClientDeprecateEOF != 0 }

// query sends a COM_QUERY and the server's OK with status.
func (c *conv) query(q string, status uint16) *conv {
	c.client(pkt(0, append([]byte{ComQuery}, q...)))
	return c.server(pkt(1, okPayload(0, 1, status)))
}

// resultSet sends the packets of a text result set from sequence seq on,
// ended with status, and returns the next sequence id.
func (c *conv) resultSet(seq byte, cols []string, rows [][]string, status uint16) byte {
	var b []byte
	add := func(p []byte) { b = append(b, pkt(seq, p)...); seq++ }
	add([]byte{byte(len(cols))})
	for _, col := range cols {
		add(colDef(col))
	}
	if !c.deprecateEOF() {
		add(eofPayload(status &^ StatusMoreResultsExists))
	}
	for _, r := range rows {
		add(textRow(r...))
	}
	if c.deprecateEOF() {
		add(okPayload(0xfe, 0, status))
	} else {
		add(eofPayload(status))
	}
	c.server(b)
	return seq
}

// absEv is an event with its offsets in its direction's whole stream.
type absEv struct {
	up bool
	Event
}

// feedConv feeds a conversation to a new scanner, each message in chunks
// of size k (all of it at once for k <= 0), and returns the events with
// absolute offsets.
func feedConv(msgs []msg, k int) []absEv {
	s := New()
	var out []absEv
	var upPos, downPos int
	for _, m := range msgs {
		b := m.data
		size := k
		if size <= 0 {
			size = max(len(b), 1)
		}
		for i := 0; i < len(b); i += size {
			chunk := b[i:min(i+size, len(b))]
			pos := &downPos
			scan := s.Server
			if m.up {
				pos, scan = &upPos, s.Client
			}
			for _, e := range scan(chunk) {
				e.Start += *pos
				e.End += *pos
				out = append(out, absEv{up: m.up, Event: e})
			}
			*pos += len(chunk)
		}
	}
	return out
}

// lines describes events one a line, with offsets.
func lines(evs []absEv) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %d..%d", e.Kind, e.Start, e.End)
		switch e.Kind {
		case EventCommand:
			fmt.Fprintf(&b, " #%d %s %s %q effect=%s write=%s", e.Command.ID, e.Command.Name(), e.Command.Class(), e.Command.SQL, e.Command.Effect, e.Command.Write)
		case EventAnswer:
			fmt.Fprintf(&b, " #%d %s", e.Command.ID, e.Command.Name())
		}
		switch e.Kind {
		case EventAnswer, EventConnected:
			fmt.Fprintf(&b, " ok=%v err=%d status=%#x/%v results=%d rows=%d", e.Answer.OK, e.Answer.ErrCode,
				e.Answer.Status, e.Answer.HasStatus, e.Answer.Results, e.Answer.Rows)
		case EventStop:
			fmt.Fprintf(&b, " tls=%v %s", e.TLS, e.Reason)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
