package orders

// LeaseNoFencing: claims have a lease, but the work does not check that its
// attempt still holds the key, so an original that was only paused commits
// after a retry took over, and the intent is executed twice.
//
// How it happens: the lease is added to fix stuck keys (bug_no_lease.go),
// and it works: a retry takes over a claim whose owner went silent. But
// silent is not dead. A stop-the-world GC pause, a VM migration, a slow
// network or a long lock wait lets the lease run out under a live owner;
// the retry takes over and commits its order, and then the original wakes
// up and commits its own. The reference fences: a fresh token per
// attempt, and the work transaction locks the key row and checks the token
// before writing anything.
//
// idemcheck's lease-fencing check pauses the first attempt past the lease,
// lets a retry take over and finish, resumes the first, and reports
// duplicate-effect.

import "context"

// LeaseNoFencing lets an attempt that lost its lease commit anyway.
const LeaseNoFencing Variant = "lease-no-fencing"

// leaseNoFencing replaces the fence.
func leaseNoFencing(st *steps) { st.fence = noFence }

// noFence is the bug: no check that the token is still ours.
func noFence(context.Context, db, request, string) error { return nil }
