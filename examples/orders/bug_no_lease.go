package orders

// NoLease: a claim has no lease, so a claim whose owner died stays running
// for ever and every retry of that key gets 409.
//
// How it happens: the claim is a status column ('running', then 'done'),
// which is right as long as processes never die between the two. They do:
// a deploy, an OOM kill, a node lost mid-request. The key then stays
// 'running' with nobody behind it; every retry is told "in progress" and
// the client can never complete its intent with that key (nor learn
// whether it took effect). Only the retention sweep, a day later, ends it.
// The reference stamps every claim with locked_until and lets a retry take
// over a claim whose lease ran out (with a fencing token, see
// bug_lease_no_fencing.go).
//
// idemcheck's crash-lease check kills the target between the claim and
// the commit, restarts it, retries past the lease, and reports stuck-key.

// NoLease never lets a retry take over a running claim.
const NoLease Variant = "no-lease"

// noLease replaces the lease judgement.
func noLease(st *steps) { st.expired = neverExpired }

// neverExpired is the bug: running means running, however long ago.
func neverExpired(keyRow) bool { return false }
