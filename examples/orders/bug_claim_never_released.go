package orders

// ClaimNeverReleased: when the work transaction fails, the claim is left
// running, so every retry gets 409 until the lease runs out.
//
// How it happens: the happy path is written first (claim, work, mark done)
// and the error path is a bare "return 500". The work rolled back, nobody
// is working on the key, and yet it says "running": the client that does
// what the 500 invites (retry with the same key) is told "in progress,
// retry later", again and again. With the reference's lease the key frees
// itself after Config.Lease (30 s by default), which is already long past
// most clients' patience; without a lease it stays stuck for ever. The
// reference deletes its claim (guarded by its token) before answering 500.
//
// idemcheck's failed-attempt check makes the first attempt fail inside its
// work transaction (the database link cut mid-transaction; a test can use
// a database error), retries, and reports stuck-key.

import "net/http"

// ClaimNeverReleased leaves a failed attempt's claim running.
const ClaimNeverReleased Variant = "claim-never-released"

// claimNeverReleased replaces the failure path.
func claimNeverReleased(st *steps) { st.release = (*Server).answerWithoutRelease }

func (s *Server) answerWithoutRelease(w http.ResponseWriter, r *http.Request, _ request, _ string, workErr error) {
	// THE BUG: the claim stays.
	writeInternal(w, r, workErr)
}
