package scenarios_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A cancelled soak ends the requests in flight instead of waiting for
// their timeout: here the target never answers and the timeout is longer
// than the test may run, so a soak that waited would hang the test.
func TestSoakCancelEndsRequestsInFlight(t *testing.T) {
	var arrived atomic.Int64
	var ended sync.WaitGroup
	first := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ended.Add(1)
		defer ended.Done()
		if arrived.Add(1) >= 2 {
			once.Do(func() { close(first) })
		}
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client going
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-first
		cancel()
	}()
	sk := &scenarios.Soak{
		Endpoint: scenarios.Endpoint{Base: base, Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`)},
		Policy:   idemcheck.IETF(), Rate: 100, Duration: time.Hour, Workers: 4, Timeout: time.Hour,
	}
	_, err = sk.Run(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	ended.Wait() // every handler saw its client go
	assert.GreaterOrEqual(t, arrived.Load(), int64(2))
}
