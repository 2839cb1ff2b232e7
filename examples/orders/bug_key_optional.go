package orders

// KeyOptional: a request without Idempotency-Key is executed, without any
// protection against its own retries.
//
// How it happens: the key is added to an existing API, and to keep old
// clients working the handler goes "if there is a key, deduplicate; else
// just do it". Those old clients (and every new one whose SDK forgot the
// header) retry after timeouts like everybody else, and each retry is a
// new order. Stripe makes the key optional on purpose and says so; an API
// whose policy requires it must answer 400, so that a client missing it
// finds out on its first request instead of from a duplicate charge.
//
// idemcheck's missing-key check sends a request without the key and, when
// the policy requires one, reports missing-key-accepted for the 201.

import "net/http"

// KeyOptional executes requests that carry no Idempotency-Key.
const KeyOptional Variant = "key-optional"

// keyOptional lets a keyless request through parsing and executes it
// unguarded; a request with a key takes the reference flow.
func keyOptional(st *steps) {
	st.keyOptional = true
	next := st.create
	st.create = func(s *Server, w http.ResponseWriter, r *http.Request, req request) {
		if req.key != "" {
			next(s, w, r, req)
			return
		}
		// THE BUG: no key, so no claim and no saved reply: just do it.
		rep, created, err := s.execute(r.Context(), s.pool, req)
		if err != nil {
			writeInternal(w, r, err)
			return
		}
		if created {
			s.commits.Add(1)
		}
		rep.write(w, false)
	}
}
