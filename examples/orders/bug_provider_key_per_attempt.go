package orders

// ProviderKeyPerAttempt: the key sent to the payment provider is derived
// from the attempt (the id a request-id middleware gives each HTTP
// request) rather than from the intent (the client's Idempotency-Key). It
// looks like a stable key, and within one request it is; but each retry
// of the client is a new request, with a new id, so an attempt that
// charged and then died leaves a charge its retry does not find.
//
// How it happens: "every charge needs a unique key", and the request id is
// unique and already at hand in the context.
//
// idemcheck's crash-lease check kills the target while the first attempt
// waits at its COMMIT, after the charge; the retry takes the key over once
// the lease ran out and charges under its own request id: a second charge,
// reported as provider-duplicate-charge.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// ProviderKeyPerAttempt derives the provider key from the HTTP request.
const ProviderKeyPerAttempt Variant = "provider-key-per-attempt"

func providerKeyPerAttempt(st *steps) {
	st.providerKey = func(ctx context.Context, req request) string {
		sum := sha256.Sum256([]byte(requestID(ctx) + "\x00" + string(req.op.kind)))
		return "orders-" + hex.EncodeToString(sum[:])[:40]
	}
}
