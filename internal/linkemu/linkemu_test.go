package linkemu

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo is an upstream that stamps when each byte reached it and echoes it.
func echo(t *testing.T) (addr string, arrivals chan time.Time) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	arrivals = make(chan time.Time, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			arrivals <- time.Now()
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String(), arrivals
}

// A byte crosses the link no sooner than the base delay each way, and a
// byte written while the one before is still on its way waits behind it:
// it arrives a delay of its own after the first was delivered.
func TestLinkDelaysInOrder(t *testing.T) {
	addr, arrivals := echo(t)
	p := Profile{Name: "test", Base: 30 * time.Millisecond}
	l, err := Listen(addr, p)
	require.NoError(t, err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer c.Close()

	sent := time.Now()
	_, err = c.Write([]byte{'a'})
	require.NoError(t, err)
	time.Sleep(p.Base / 5) // a read of its own, while 'a' is on its way
	_, err = c.Write([]byte{'b'})
	require.NoError(t, err)
	first, second := <-arrivals, <-arrivals
	assert.GreaterOrEqual(t, first.Sub(sent), p.Base, "the first byte arrived before the link's delay")
	assert.GreaterOrEqual(t, second.Sub(first), p.Base, "the second byte did not wait behind the first")

	b := make([]byte, 2)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(b))
	assert.GreaterOrEqual(t, time.Since(sent), 3*p.Base, "the echo came back sooner than two crossings")
}

func TestByName(t *testing.T) {
	for _, p := range Profiles {
		got, err := ByName(p.Name)
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	got, err := ByName("10ms+0s")
	require.NoError(t, err)
	assert.Equal(t, Profile{Name: "10ms+0s", Base: 10 * time.Millisecond}, got, "a base delay and no jitter")
	for _, bad := range []string{"moon", "10ms+", "+4ms", "-1ms+0s", "10ms+-1ms"} {
		_, err = ByName(bad)
		assert.ErrorContains(t, err, "loopback, lan, wan, or BASE+JITTER such as 10ms+0s", bad)
	}
}
