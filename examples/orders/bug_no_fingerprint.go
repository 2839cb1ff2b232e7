package orders

// NoFingerprint: the body is never compared, so a key reused with another
// body is answered with the first body's saved result.
//
// How it happens: many idempotency middlewares cache the response under
// the route and the key (method + path + Idempotency-Key) and stop there,
// because "the client promised one key per request". A client that does
// reuse a key (a bug in its key generation, a retry loop that rebuilds the
// request with a new amount) asked for 50.00 and is told, with a 201, that
// its order for 19.99 exists: it believes the new request succeeded, and
// nothing tells it otherwise. The IETF draft answers such a request 422.
//
// Here the fingerprint keeps the method and path (so the endpoints stay
// apart, as in the reference) and drops the body. idemcheck's
// payload-mismatch check sends an intent, then its key with another body,
// and reports payload-mismatch-accepted: the changed request got a 2xx.

// NoFingerprint does not compare the body of a reused key.
const NoFingerprint Variant = "no-fingerprint"

// noFingerprint replaces the fingerprint.
func noFingerprint(st *steps) { st.fingerprint = endpointOnlyFingerprint }

// endpointOnlyFingerprint is the bug: where the request went, not what it
// asked for.
func endpointOnlyFingerprint(method, path string, _ []byte, _ map[string]any) []byte {
	return digest([]byte(method), []byte(path))
}
