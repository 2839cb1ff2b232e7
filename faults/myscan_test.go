package faults

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/mysqlwire"
)

// segment is what one side of a recorded connection sent in one read.
type segment struct {
	client bool
	b      []byte
}

// recordMySQL relays one connection to addr and records both directions,
// each read logged before it is forwarded, so the log keeps the order in
// which a relay sees them.
func recordMySQL(t *testing.T, addr string) (listen string, log func() []segment) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var segs []segment
	var wg sync.WaitGroup
	pipe := func(from, to net.Conn, client bool) {
		defer wg.Done()
		defer to.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := from.Read(buf)
			if n > 0 {
				mu.Lock()
				segs = append(segs, segment{client: client, b: bytes.Clone(buf[:n])})
				mu.Unlock()
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", addr)
		if err != nil {
			c.Close()
			return
		}
		wg.Add(2)
		go pipe(c, s, true)
		go pipe(s, c, false)
	}()
	return ln.Addr().String(), func() []segment {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return segs
	}
}

// replayMySQL feeds a recorded connection to the MySQL scanners in chunks
// of k bytes, the client's side through the watch toxic's loop (scan,
// pass, scan on), and returns the events and the client's bytes in the
// order they were passed. Every event must be one whole command packet.
func replayMySQL(t *testing.T, segs []segment, k int) (evs []wireEvent, passed []byte) {
	t.Helper()
	sc := mysqlwire.New()
	up, down := newMyScanner(sc), myAnswers{s: sc}
	var pend []byte
	for _, s := range segs {
		for off := 0; off < len(s.b); off += k {
			c := s.b[off:min(off+k, len(s.b))]
			if !s.client {
				down.answers(c)
				continue
			}
			pend = append(pend, c...)
			pass := 0
			for {
				n, res, size, ev := up.scan(pend[pass:])
				require.NotEqual(t, scanRefuse, res, up.refusal())
				pass += n
				if res == scanMore {
					break
				}
				msg := pend[pass : pass+size]
				require.GreaterOrEqual(t, size, 5, "chunks of %d", k)
				assert.Equal(t, size-4, int(msg[0])|int(msg[1])<<8|int(msg[2])<<16, "chunks of %d: the event is one whole packet", k)
				assert.Zero(t, msg[3], "chunks of %d: a command's packet is number 0", k)
				evs = append(evs, ev)
				pass += size
			}
			passed = append(passed, pend[:pass]...)
			pend = pend[pass:]
		}
	}
	assert.Empty(t, pend, "chunks of %d: nothing kept back at the end", k)
	return evs, passed
}

// The MySQL side of the watcher finds the same statements, at the same
// places, however a relay's reads cut the stream: a connection to MariaDB
// recorded and replayed in chunks of 1, 2, 3, 7 bytes and whole.
func TestMyScannerCutsAnywhere(t *testing.T) {
	s := newMyShop(t)
	addr, log := recordMySQL(t, s.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := s.open(t, addr, false)
	for _, inTx := range []bool{false, true} {
		_, err := s.write(db, inTx) // with arguments: prepared statements
		require.NoError(t, err)
	}
	// Without arguments: the text protocol (COM_QUERY).
	_, err := db.ExecContext(ctx, "INSERT INTO orders (id) VALUES (1000)")
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (1001)")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.NoError(t, db.PingContext(ctx))
	require.NoError(t, db.Close())
	segs := log()
	var client []byte
	for _, sg := range segs {
		if sg.client {
			client = append(client, sg.b...)
		}
	}
	whole, passed := replayMySQL(t, segs, 1<<30)
	require.Equal(t, client, passed)
	var effects []string
	for _, ev := range whole {
		if ev.effect {
			effects = append(effects, ev.kind)
		}
	}
	assert.Equal(t, []string{idemcheck.LandedAutocommitWrite, idemcheck.LandedCommit, idemcheck.LandedAutocommitWrite, idemcheck.LandedCommit}, effects)
	for _, k := range []int{1, 2, 3, 7} {
		evs, passed := replayMySQL(t, segs, k)
		assert.Equal(t, whole, evs, "chunks of %d", k)
		assert.Equal(t, client, passed, "chunks of %d: every byte passed once, in order", k)
	}
}
