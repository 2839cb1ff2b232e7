package ordersmysql

// SeparateKeyStore: the leased flow (leased.go) with the order committed
// in its own transaction and the key's reply saved in another after it,
// as idempotency middleware with its own connection does. A crash (a
// deploy, an OOM kill) or a failed write between the two COMMITs leaves
// an order whose key still says running; once the lease runs out a retry
// takes the key over, finds no reply, and creates a second order. The
// fence is kept: the bug is the gap, not the takeover.
//
// idemcheck's crash-lease check kills the target while its second COMMIT
// (the key's) is held on the database link, retries past the lease, and
// reports duplicate-effect.
const SeparateKeyStore = "separate-key-store"
