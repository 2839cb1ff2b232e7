package faults

import (
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/assert"
)

// backendMsg is one backend message: its type, its length and body.
func backendMsg(typ byte, body string) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return append(b, body...)
}

// The replies scanner counts ReadyForQuery messages however the stream is
// cut into chunks, after an SSL refusal too, and stops counting on a stream
// it cannot follow.
func TestRepliesCountsReadyForQuery(t *testing.T) {
	var stream []byte
	stream = append(stream, 'N') // SSLRequest refused
	stream = append(stream, backendMsg('R', "\x00\x00\x00\x00")...)
	stream = append(stream, backendMsg('Z', "I")...)
	stream = append(stream, backendMsg('C', "INSERT 0 1\x00")...)
	stream = append(stream, backendMsg('Z', "T")...)
	stream = append(stream, backendMsg('N', "a notice\x00")...) // a NoticeResponse, not a refusal
	stream = append(stream, backendMsg('Z', "I")...)
	for _, size := range []int{1, 2, 3, 5, 7, len(stream)} {
		st := &pgRepliesState{}
		n := 0
		for b := stream; len(b) > 0; {
			k := min(size, len(b))
			c, end := st.count(b[:k], 0)
			assert.Equal(t, k, end)
			n += c
			b = b[k:]
		}
		assert.Equal(t, 3, n, "chunks of %d bytes", size)
	}
	st := &pgRepliesState{}
	n, _ := st.count(append([]byte{'S'}, backendMsg('Z', "I")...), 0)
	assert.Equal(t, 0, n, "encrypted: nothing to follow")
}

// With a stop, count ends just after the stop-th ReadyForQuery, its last
// byte included, however the stream is cut into chunks: what a
// db-cut-after passes is exactly the answers before the cut statement's.
func TestRepliesCountStopsAfterReadyForQuery(t *testing.T) {
	var stream []byte
	stream = append(stream, backendMsg('Z', "I")...)
	stream = append(stream, backendMsg('C', "INSERT 0 1\x00")...)
	stream = append(stream, backendMsg('Z', "I")...)
	first := len(stream)
	stream = append(stream, backendMsg('C', "INSERT 0 1\x00")...)
	stream = append(stream, backendMsg('Z', "I")...)
	for _, size := range []int{1, 2, 3, 5, 7, len(stream)} {
		st := &pgRepliesState{}
		read, n := 0, 0
		for b := stream; len(b) > 0 && n < 2; {
			k := min(size, len(b))
			c, end := st.count(b[:k], 2-n)
			n += c
			read += end
			b = b[end:]
		}
		assert.Equal(t, 2, n, "chunks of %d bytes", size)
		assert.Equal(t, first, read, "chunks of %d bytes: stopped just after the second ReadyForQuery", size)
	}
}

// A statement has finished once more replies came back than the ones
// sent before it, or when its connection ended.
func TestConnFinished(t *testing.T) {
	c := &dbConn{}
	c.replies.Store(2)
	assert.True(t, c.finished(1))
	assert.False(t, c.finished(2))
	c.ended.Store(true)
	assert.True(t, c.finished(2))
}

// A write's prior counts the messages sent before it that the database
// answers with a ReadyForQuery (the startup, which authentication ends
// with one, included): a simple query counts from its own message, an
// Execute from the Sync that ends its pipeline.
func TestScannerCountsPriorReplies(t *testing.T) {
	stream := encode(t,
		&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}},
		&pgproto3.Query{String: "SELECT 1"},
		&pgproto3.Query{String: "INSERT INTO t VALUES (1)"},
		&pgproto3.Parse{Query: "SELECT 2"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Parse{Query: "UPDATE t SET k = 2"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
	)
	for _, chunk := range []int{1, 3, len(stream)} {
		s := newPGScanner()
		var pend []byte
		var writes []wireEvent
		for off := 0; off < len(stream); off += chunk {
			pend = append(pend, stream[off:min(off+chunk, len(stream))]...)
			pass := 0
			for {
				n, res, size, ev := s.scan(pend[pass:])
				pass += n
				if res != scanEvent {
					break
				}
				if ev.writeKind != "" && !ev.sync {
					writes = append(writes, ev)
				}
				pass += size
			}
			pend = pend[pass:]
		}
		if assert.Len(t, writes, 2, "chunks of %d", chunk) {
			assert.Equal(t, int64(2), writes[0].prior, "the INSERT follows the startup and one query")
			assert.Equal(t, int64(4), writes[1].prior, "the UPDATE's Execute follows the startup, two queries and a Sync")
		}
	}
}
