package tcprelay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each connection is handed over with its number, and Close ends the ones
// still open (the client's and one the handler tracked) and waits for the
// handlers.
func TestRelay(t *testing.T) {
	r, err := Listen()
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []uint64
	returned := make(chan struct{}, 2)
	r.Start(func(n uint64, client net.Conn) {
		defer func() { returned <- struct{}{} }()
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
		up, other := net.Pipe()
		defer other.Close()
		if !assert.True(t, r.Track(up)) {
			return
		}
		defer r.Untrack(up)
		fmt.Fprintf(client, "hello %d\n", n)
		_, _ = io.Copy(io.Discard, up) // until Close ends it
	})

	for want := range 2 {
		c, err := net.Dial("tcp", r.Addr())
		require.NoError(t, err)
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("hello %d\n", want), line)
	}

	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the live connections")
	}
	assert.Len(t, returned, 2, "every handler had returned")
	assert.Equal(t, []uint64{0, 1}, seen)
	assert.NoError(t, r.Close(), "a second Close does nothing")
	a, b := net.Pipe()
	defer b.Close()
	assert.False(t, r.Track(a), "a closed relay tracks nothing more")
	_, err = net.DialTimeout("tcp", r.Addr(), time.Second)
	assert.Error(t, err, "a closed relay accepts nothing more")
}
