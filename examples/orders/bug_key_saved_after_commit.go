package orders

// KeySavedAfterCommit: the order commits in its transaction, and the reply
// is saved under the key afterwards, by one autocommitted UPDATE, so a
// process killed between the two leaves an order whose key still says
// "running"; once the lease runs out, the retry takes the key over and
// creates a second order.
//
// How it happens: the middleware's key store is a table beside the data,
// written through the pool with a single statement, as most store adapters
// do (no transaction: each statement commits on its own). The handler's
// transaction commits the order; the middleware then records the response.
// A kill at that moment (a deploy's SIGKILL after its grace period, an OOM)
// loses the link between the two. Unlike SeparateKeyStore, nothing here
// sends a second COMMIT: a fault that waits for one never fires, which is
// why crash-lease misses it. The reference saves the reply inside the
// order's own transaction.
//
// Everything else is the reference's, the claim, the lease and the fence
// included. idemcheck's crash-after-commit check lets the order's COMMIT
// through, kills the target when the database's answer comes back (held on
// the link, so this UPDATE is never sent), restarts it, retries past the
// lease, and reports duplicate-effect.

import "context"

// KeySavedAfterCommit saves the key's reply after the order committed.
const KeySavedAfterCommit Variant = "key-saved-after-commit"

// keySavedAfterCommit replaces the work.
func keySavedAfterCommit(st *steps) { st.work = (*Server).workThenSave }

func (s *Server) workThenSave(ctx context.Context, req request, token string) (reply, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return reply{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := s.st.fence(ctx, tx, req, token); err != nil {
		return reply{}, err
	}
	rep, created, err := s.execute(ctx, tx, req)
	if err != nil {
		return reply{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return reply{}, err
	}
	if created {
		s.commits.Add(1)
	}

	// THE BUG: the order is committed; the key does not know it yet.
	if s.cfg.AfterEffect != nil {
		s.cfg.AfterEffect(ctx, req.key)
	}
	// The key store's write: one statement through the pool, autocommitted.
	if err := s.st.finish(ctx, s.pool, req, rep); err != nil {
		return reply{}, err
	}
	return rep, nil
}
