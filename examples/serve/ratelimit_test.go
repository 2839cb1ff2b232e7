package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limiter admits a client's requests up to its limit in flight and
// refuses the next with 429 and Retry-After: 1; another client, and the
// readiness probe, are not held back by it.
func TestRateLimitRefusesBeyondTheRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := RateLimit(1)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(path, auth string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	held := make(chan *http.Response)
	go func() { held <- send("/hold", "Bearer a") }()
	<-entered

	resp := send("/orders", "Bearer a")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusCreated, send("/orders", "Bearer b").StatusCode, "another client has its own limit")
	probe, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	probe.Body.Close()
	assert.Equal(t, http.StatusCreated, probe.StatusCode, "the readiness probe is never limited")

	close(release)
	assert.Equal(t, http.StatusCreated, (<-held).StatusCode)
	assert.Equal(t, http.StatusCreated, send("/orders", "Bearer a").StatusCode, "admitted again once the first left the handler")
}
