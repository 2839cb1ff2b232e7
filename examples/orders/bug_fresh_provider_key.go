package orders

// FreshProviderKey: the charge at the payment provider carries a fresh
// idempotency key on every call, so the provider sees each attempt's
// charge as a new one. An attempt that charged and then failed (its
// database link cut before the order committed) leaves the charge; the
// client's retry, under the same Idempotency-Key, is executed again and
// charged again. The API's own table shows one order.
//
// How it happens: the SDK is told to "use idempotency keys" and makes one
// per call (uuid.NewString() where the call is made), which protects the
// SDK's own network retries within the call and nothing else.
//
// idemcheck's failed-attempt check cuts the first attempt's database link
// at its COMMIT, after the charge; the retry charges a second time, and the
// provider double reports provider-duplicate-charge. The reference derives
// the key from the client's (providerKey).

import (
	"context"

	"github.com/google/uuid"
)

// FreshProviderKey sends the provider a new key on every charge.
const FreshProviderKey Variant = "fresh-provider-key"

func freshProviderKey(st *steps) {
	st.providerKey = func(context.Context, request) string { return uuid.NewString() }
}
