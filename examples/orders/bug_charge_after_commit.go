package orders

// ChargeAfterCommit: the order commits first, and the customer is charged
// afterwards, with no key and no record of the charge in the order: no
// reconciliation can tell which orders were charged. A process killed
// between the COMMIT and the charge leaves an order never charged; a
// charge whose reply is lost is retried by the HTTP client as a new one.
//
// How it happens: "don't hold a transaction open across a network call",
// applied by moving the call after the COMMIT, without the outbox or the
// key that would make it safe there.
//
// Its calls carry no key, which every check that reaches the provider
// sees; lost-reply reports provider-call-without-key.

import "context"

// ChargeAfterCommit charges the provider after the order committed.
const ChargeAfterCommit Variant = "charge-after-commit"

func chargeAfterCommit(st *steps) {
	st.chargeAfterCommit = true
	st.work = (*Server).chargeAfterWork
	st.providerKey = func(context.Context, request) string { return "" }
}
