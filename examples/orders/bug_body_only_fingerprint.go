package orders

// BodyOnlyFingerprint: the fingerprint covers the body only, and keys are
// looked up without the endpoint, so an order's key sent to /payments with
// the same body is answered with the order's saved reply.
//
// How it happens: one key table serves every endpoint (it should: the key
// belongs to the client's intent, not to a route), and the fingerprint is
// "a hash of the request payload", as the IETF draft words it, the method
// and path forgotten. A client that reuses a key across operations (one
// key per checkout, sent to both "create order" and "pay") gets, from the
// second call, the first call's 201: the payment was never made, and the
// caller was told it was.
//
// POST /payments takes an order-shaped body ({"customerId","totalCents"},
// a payment on account), so the same bytes are a valid request on both
// endpoints and only the fingerprint can tell the two apart. idemcheck's
// cross-endpoint check sends an intent, then its key and body to the other
// endpoint, and reports cross-endpoint-replay.

// BodyOnlyFingerprint leaves the method and path out of the fingerprint.
const BodyOnlyFingerprint Variant = "body-only-fingerprint"

// bodyOnlyFingerprint replaces the fingerprint.
func bodyOnlyFingerprint(st *steps) { st.fingerprint = bodyFingerprint }

// bodyFingerprint is the bug: what was asked, not of whom.
func bodyFingerprint(_, _ string, _ []byte, body map[string]any) []byte {
	return digest(canonical(body))
}
