package orders

// SeparateKeyStore: the order commits in its own transaction and the key is
// marked done in another one after it, so a crash between the two leaves an
// order whose key still says "running", and the retry that takes the key
// over creates a second order.
//
// How it happens: idempotency as middleware. The middleware claims the key
// (in Redis, in another database, or in the same one through its own
// connection), calls the handler, which commits the order in the handler's
// own transaction, and then saves the response under the key. Between the
// handler's COMMIT and the middleware's save there is a window in which a
// crash (a deploy, an OOM kill) or a failed write to the key store loses
// the fact that the order exists. The lease then does what it should: a
// retry takes the key over, finds no reply, and executes again. The
// reference writes the order and the saved reply in one transaction, so a
// key is never without its order nor an order without its key.
//
// Everything else is the reference's, the fence included (the order's
// transaction still checks the token). idemcheck's crash-lease check
// kills the target after the order's COMMIT and before the key's (the
// attempt's second COMMIT), retries past the lease, and reports
// duplicate-effect.

import "context"

// SeparateKeyStore commits the order and the key's reply in two transactions.
const SeparateKeyStore Variant = "separate-key-store"

// separateKeyStore replaces the work.
func separateKeyStore(st *steps) { st.work = (*Server).workThenRecord }

func (s *Server) workThenRecord(ctx context.Context, req request, token string) (reply, error) {
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
	// The key store's own transaction, as a middleware with its own
	// connection would run it.
	ktx, err := s.pool.Begin(ctx)
	if err != nil {
		return reply{}, err
	}
	defer func() { _ = ktx.Rollback(ctx) }()
	if err := s.st.finish(ctx, ktx, req, rep); err != nil {
		return reply{}, err
	}
	if err := ktx.Commit(ctx); err != nil {
		return reply{}, err
	}
	return rep, nil
}
