package serve

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/wire"
)

// The server answers over HTTP/1.1 and h2c, and returns nil once its
// context ends.
func TestHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- HTTP(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(r.Proto))
		}), time.Second)
	}()
	addr := ln.Addr().String()
	for _, p := range []wire.Protocol{wire.ProtocolHTTP1, wire.ProtocolH2} {
		r := (&wire.Client{Protocol: p}).SendBurst(ctx, addr, []wire.Request{{Path: "/"}, {Path: "/"}})
		assert.Equal(t, p, r.Protocol)
		for _, res := range r.Results {
			require.NoError(t, res.Err)
			assert.Equal(t, map[wire.Protocol]string{wire.ProtocolHTTP1: "HTTP/1.1", wire.ProtocolH2: "HTTP/2.0"}[p], string(res.Body))
		}
	}
	cancel()
	assert.NoError(t, <-done)
}

func TestPoolConfig(t *testing.T) {
	cfg, err := PoolConfig("postgres://u@127.0.0.1:5432/db")
	require.NoError(t, err)
	assert.EqualValues(t, 32, cfg.MaxConns)
	cfg, err = PoolConfig("postgres://u@127.0.0.1:5432/db?pool_max_conns=3")
	require.NoError(t, err)
	assert.EqualValues(t, 3, cfg.MaxConns, "the DSN's own size is kept")
	_, err = PoolConfig("postgres://u@127.0.0.1:notaport/db")
	assert.Error(t, err)
}
