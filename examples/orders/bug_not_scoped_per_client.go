package orders

// NotScopedPerClient: keys are global, not per client, so one client's key
// replays another client's saved response to it.
//
// How it happens: the key table's primary key is the key alone, because
// "keys are UUIDs, they never collide". They do when a client's key
// generator is weak (a counter, a timestamp, a hash of the cart), when two
// tenants' integrations share a library with a fixed seed, or when an
// attacker replays a key seen in a log: the second client then receives
// the first client's order (its id, its customer, its amount) and creates
// nothing. That is a data leak as well as a lost request.
//
// Here the key's scope is dropped: every request counts as the anonymous
// client. idemcheck's cross-tenant check sends one key with the same body
// under two different Authorization headers and reports
// cross-tenant-replay.

import "net/http"

// NotScopedPerClient shares one key namespace between all clients.
const NotScopedPerClient Variant = "not-scoped-per-client"

// notScopedPerClient replaces the key's scope.
func notScopedPerClient(st *steps) { st.client = everyoneTheSameClient }

// everyoneTheSameClient is the bug: the caller does not matter.
func everyoneTheSameClient(*http.Request) []byte { return []byte{} }
