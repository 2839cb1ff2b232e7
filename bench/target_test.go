package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/wire"
)

func TestDuplicates(t *testing.T) {
	us := int64(time.Microsecond)
	offs := []int64{0, 5 * us, 19 * us, 20 * us, 300 * us}
	assert.Equal(t, 0, Duplicates(offs, 5*time.Microsecond), "an arrival exactly W after the first sees the insert")
	assert.Equal(t, 2, Duplicates(offs, 20*time.Microsecond))
	assert.Equal(t, 3, Duplicates(offs, 50*time.Microsecond))
	assert.Equal(t, 4, Duplicates(offs, time.Millisecond))
	assert.Equal(t, 0, Duplicates([]int64{0}, time.Second))
	assert.Equal(t, 0, Duplicates(nil, time.Second))
}

func TestOffsets(t *testing.T) {
	t0 := time.Now()
	got := Offsets([]time.Time{t0.Add(30), t0, t0.Add(10)})
	assert.Equal(t, []int64{0, 10, 30}, got)
	assert.Equal(t, []int64{}, Offsets(nil))
}

// Every driver delivers its whole burst to the race target, over the
// protocol it stands for, and the target hands the arrivals back once.
func TestDriversOnRaceTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go Serve(ln, NewRaceTarget(200*time.Microsecond))
	defer ln.Close()
	addr := ln.Addr().String()
	ctx := context.Background()

	const n = 8
	barrier, err := NewBarrier(ctx, addr, n)
	require.NoError(t, err)
	drivers := []Driver{NewWire(addr, n, wire.ProtocolHTTP1, 0), NewWire(addr, n, wire.ProtocolH2, 0), NewWire(addr, n, wire.ProtocolH2, 1), NewVegeta(addr, n), barrier}
	fetch := &http.Client{Timeout: 5 * time.Second}
	for i, d := range drivers {
		t.Run(d.Name(), func(t *testing.T) {
			defer d.Close()
			for round := range 3 {
				key := "k-" + d.Name() + "-" + string(rune('a'+i)) + string(rune('a'+round))
				_, err := d.Burst(ctx, key)
				require.NoError(t, err)
				offs, err := FetchArrivals(ctx, fetch, addr, key)
				require.NoError(t, err)
				require.Len(t, offs, n)
				assert.Zero(t, offs[0])
				assert.IsNonDecreasing(t, offs)
				again, err := FetchArrivals(ctx, fetch, addr, key)
				require.NoError(t, err)
				assert.Empty(t, again, "arrivals are handed back once")
			}
		})
	}
	assert.Zero(t, barrier.(ColdDialer).ColdDials(), "the barrier's requests went on its warmed connections")
}

// Over TLS, vegeta's bursts reach the target over HTTP/2 and the barrier's
// over HTTP/1.1 on its warmed connections, as their Wire says, and the
// arrivals come back over TLS too.
func TestDriversOverTLS(t *testing.T) {
	cfg, err := SelfSignedTLS()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	target := NewRaceTarget(200 * time.Microsecond)
	var mu sync.Mutex
	protos := map[string]map[string]int{} // key: proto: requests
	go ServeTLS(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key := r.Header.Get("Idempotency-Key"); key != "" {
			mu.Lock()
			if protos[key] == nil {
				protos[key] = map[string]int{}
			}
			protos[key][r.Proto]++
			mu.Unlock()
		}
		target.ServeHTTP(w, r)
	}), cfg)
	defer ln.Close()
	addr := ln.Addr().String()
	ctx := context.Background()

	const n = 8
	barrier, err := NewBarrierTLS(ctx, addr, n)
	require.NoError(t, err)
	fetch := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: InsecureTLS()}}
	for _, c := range []struct {
		d     Driver
		proto string
		wire  string
	}{{NewVegetaTLS(addr, n), "HTTP/2.0", "h2 over TLS"}, {barrier, "HTTP/1.1", "HTTP/1.1 over TLS"}} {
		t.Run(c.d.Name(), func(t *testing.T) {
			defer c.d.Close()
			for round := range 3 {
				key := fmt.Sprintf("tls-%s-%d", c.d.Name(), round)
				_, err := c.d.Burst(ctx, key)
				require.NoError(t, err)
				offs, err := FetchArrivalsFrom(ctx, fetch, "https://"+addr, key)
				require.NoError(t, err)
				require.Len(t, offs, n)
				mu.Lock()
				assert.Equal(t, map[string]int{c.proto: n}, protos[key])
				mu.Unlock()
				assert.Equal(t, c.wire, c.d.(Wirer).Wire())
			}
		})
	}
	assert.Zero(t, barrier.(ColdDialer).ColdDials(), "the barrier's requests went on its warmed connections")
}
