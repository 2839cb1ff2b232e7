package serve

import (
	"net/http"
	"strings"
	"sync"
)

// RateLimit is a rate limiter in front of an API, as an API gateway or a
// middleware puts there: each client (its Authorization header; the
// anonymous client without one) may have at most inFlight requests in the
// handler at once, and the rest are refused before they reach it, with
// 429 Too Many Requests and Retry-After: 1, as an RFC 7807 problem. GET
// /healthz is never limited. A refused request never reached the
// idempotency layer: idemcheck must tell the refusal from a conflict, send
// it again after Retry-After, and not count it as concurrency.
func RateLimit(inFlight int) func(http.Handler) http.Handler {
	var mu sync.Mutex
	busy := map[string]int{}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
				h.ServeHTTP(w, r)
				return
			}
			client := strings.Join(r.Header.Values("Authorization"), "\n")
			mu.Lock()
			admitted := busy[client] < inFlight
			if admitted {
				busy[client]++
			}
			mu.Unlock()
			if !admitted {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"too many requests in flight for this client; retry after 1 s"}` + "\n"))
				return
			}
			defer func() {
				mu.Lock()
				busy[client]--
				if busy[client] == 0 {
					delete(busy, client)
				}
				mu.Unlock()
			}()
			h.ServeHTTP(w, r)
		})
	}
}
