package orders

// NoProviderKey: the charge at the payment provider carries no idempotency
// key at all. The provider cannot tell a retry of a charge from a new one,
// so any attempt that charged and then failed is charged again by its
// retry, and a network retry inside the HTTP client charges twice on its
// own.
//
// How it happens: the provider's API takes the key as an optional header,
// and the integration was written from its quick-start, which leaves it
// out.
//
// Every check whose requests reach the provider sees the keyless call;
// concurrent-burst, the first, reports provider-call-without-key.

import "context"

// NoProviderKey charges the provider without a key.
const NoProviderKey Variant = "no-provider-key"

func noProviderKey(st *steps) {
	st.providerKey = func(context.Context, request) string { return "" }
}
