package ordersmysql

// LeaseNoFencing: the leased flow (leased.go) without the fence. Claims
// have a lease, and a retry takes over a claim whose owner went silent;
// but silent is not dead (a GC pause, a long lock wait): the work does not
// check that its attempt still holds the key, so an original that was
// only stalled past its lease commits its order after the retry committed
// its own.
//
// idemcheck's lease-fencing check freezes the first attempt at its work's
// START TRANSACTION past the lease, lets a retry take over and finish,
// resumes the first, and reports duplicate-effect.
const LeaseNoFencing = "lease-no-fencing"
