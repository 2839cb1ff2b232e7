package faults

import (
	"bytes"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// FuzzPGScanner: whatever a client sends on the database link, the
// scanner never panics, passes every byte unchanged and in order, and
// reaches the same verdicts however the stream is cut into chunks (the
// toxic sees it in whatever pieces TCP delivers).
func FuzzPGScanner(f *testing.F) {
	seed := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			b, _ = m.Encode(b)
		}
		return b
	}
	startup := &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "app"}}
	f.Add(seed(startup, &pgproto3.Query{String: "BEGIN"}, &pgproto3.Query{String: "INSERT INTO t VALUES (1)"}, &pgproto3.Query{String: "COMMIT"}), 3)
	f.Add(seed(startup, &pgproto3.Parse{Name: "s1", Query: "INSERT INTO t VALUES ($1)"}, &pgproto3.Bind{PreparedStatement: "s1"},
		&pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Close{ObjectType: 'S', Name: "s1"}), 1)
	f.Add(seed(&pgproto3.SSLRequest{}, startup, &pgproto3.Query{String: "WITH d AS (DELETE FROM t RETURNING 1) SELECT 1; END"}), 7)
	f.Add([]byte{0x16, 0x03, 0x01, 0, 5, 1, 2, 3, 4, 5}, 2)
	f.Fuzz(func(t *testing.T, stream []byte, chunk int) {
		if chunk <= 0 || chunk > len(stream)+1 {
			chunk = 1 + len(stream)%7
		}
		passedWhole, whole, refusedWhole := scanAll(stream, max(len(stream), 1))
		passed, cut, refused := scanAll(stream, chunk)
		if refused != refusedWhole {
			t.Fatalf("refused %v in one piece, %v in chunks of %d", refusedWhole, refused, chunk)
		}
		if !slices.Equal(whole, cut) {
			t.Fatalf("matches differ: %v in one piece, %v in chunks of %d", whole, cut, chunk)
		}
		if !bytes.Equal(passed, passedWhole) || !bytes.HasPrefix(stream, passed) {
			t.Fatalf("passed bytes differ or were changed")
		}
		if !refused && len(passed) > len(stream) {
			t.Fatalf("passed %d bytes of %d", len(passed), len(stream))
		}
	})
}
