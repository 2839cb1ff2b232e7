package orders

// UpsertClaim: a claim taken by last writer wins, on purpose. DO NOT COPY.
//
// It looks like the reference with one statement made "simpler": look the
// key up; if it is unknown, claim it with an upsert, INSERT ... ON CONFLICT
// DO UPDATE, because ON CONFLICT DO NOTHING returns no row and the upsert
// always hands the claimer its row back. The work then runs in the
// reference's fenced transaction. The flaw is what the upsert does to a
// key someone else holds: it takes it over, status, token and all, even
// a key whose work has finished.
//
// The copies must land in a particular order to show it. A copy that read
// the key before another copy's claim, and whose upsert lands after that
// copy finished, takes the finished key over, passes the fence with its
// own token and commits a second order; its reply then replaces the saved
// one, so later replays name the second order while the first client
// holds the first (last writer wins). Upserts that land while the first
// copy still works do no harm: the last one's token stands and the fence
// turns the others away. So timing alone shows it in some rounds only
// (its second write must land a whole transaction after the first), and a
// burst whose writes are released together in most but not all (the
// copies whose upserts queue behind the first copy's fence land after it
// finished).
//
// idemcheck's concurrent-burst check catches it every round where it
// holds the target's database link: the burst's writes are held until
// every copy has read the key, then released one at a time, each once the
// one before has finished (scheduled in turn), and it reports
// duplicate-effect and multiple-created. The reference claims with
// ON CONFLICT DO NOTHING and reads the row it did not get.

import (
	"net/http"
)

// UpsertClaim claims the key with an upsert that takes it over from
// whoever holds it.
const UpsertClaim Variant = "upsert-claim"

// upsertClaim replaces the claim.
func upsertClaim(st *steps) { st.claim = (*Server).claimByUpsert }

func (s *Server) claimByUpsert(w http.ResponseWriter, r *http.Request, req request, token string) bool {
	// 1. Check.
	if s.answerKnownKey(w, r, req) {
		return false
	}
	if s.cfg.AfterCheck != nil {
		s.cfg.AfterCheck(r.Context(), req.key)
	}
	// 2. Claim. THE BUG: on conflict the upsert overwrites the row, so a
	// copy that passed the check takes the key over from whoever holds
	// it, a finished key included.
	var owner string
	err := s.pool.QueryRow(r.Context(), `
		INSERT INTO idempotency_keys (client, key, fingerprint, status, token, locked_until)
		VALUES ($1, $2, $3, 'running', $4, now() + make_interval(secs => $5))
		ON CONFLICT (client, key) DO UPDATE SET
			status = 'running', token = excluded.token, locked_until = excluded.locked_until
		RETURNING token`,
		req.client, req.key, req.fingerprint, token, s.cfg.Lease.Seconds()).Scan(&owner)
	if err != nil {
		writeInternal(w, r, err)
		return false
	}
	return owner == token
}
