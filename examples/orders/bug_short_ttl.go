package orders

// ShortTTL: the key store forgets keys after a TTL shorter than the
// clients' retry window, so a late retry executes again.
//
// How it happens: keys live in a cache with a TTL picked for memory, not
// for clients: a gofiber-style 30 minutes, or seconds in a "temporary"
// setting that stayed. A client that retries from a job queue with
// exponential back-off, or after an outage, or the next morning, comes
// back after the key expired; its retry is a new request, and the order is
// created twice, each time with a fresh 201. Expiry itself is fine (the
// contract lets keys expire, Stripe keeps them 24 hours): the bug is an
// expiry shorter than the retries it is meant to catch.
//
// The variant keeps keys ShortTTLRetention (Config.Retention overrides it)
// and, like a cache's TTL, forgets them the moment it passes: expired keys
// are swept before every request. idemcheck's sequential-replay check,
// waiting longer than the TTL between the original and its replay (2 s is
// safe for the default), reports fresh-result-on-replay.

import (
	"net/http"
	"time"
)

// ShortTTL forgets finished keys after ShortTTLRetention.
const ShortTTL Variant = "short-ttl"

// ShortTTLRetention is the ShortTTL variant's default key retention: far
// shorter than any client's retry window, and short enough for a test to
// wait out.
const ShortTTLRetention = time.Second

// shortTTL sets the retention and sweeps on every request.
func shortTTL(st *steps) {
	st.retention = ShortTTLRetention // THE BUG
	next := st.create
	st.create = func(s *Server, w http.ResponseWriter, r *http.Request, req request) {
		if _, err := s.Sweep(r.Context()); err != nil {
			writeInternal(w, r, err)
			return
		}
		next(s, w, r, req)
	}
}
