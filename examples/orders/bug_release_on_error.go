package orders

// ReleaseOnError: when the work reports a database error, the key is
// deleted whatever became of the work, so a COMMIT that went through
// although its answer was lost leaves an order and no key, and the retry
// makes a second order.
//
// How it happens: "on error, forget the key so the client can retry" is
// what most idempotency middlewares ask of the handler (express-
// idempotency's reportError, a catch block that deletes the cache entry),
// and it is right when the error means nothing happened. A dropped
// database connection does not mean that: the database may have committed
// the effect (a COMMIT, or a write that commits on its own) and lost only
// its answer. The handler sees an error, answers 500, forgets the key, and
// the client's retry, with the same key, is executed again. The reference
// releases only a claim still running under its own token, and when there
// is none it answers from the key row, where the committed reply is.
//
// idemcheck's failed-attempt check lets the attempt's last effect write
// reach the database and cuts the database link once the database has
// answered it, before the answer reaches the target; it retries, and
// reports duplicate-effect.

import (
	"context"
	"net/http"
	"time"
)

// ReleaseOnError deletes the key on any failure of the work.
const ReleaseOnError Variant = "release-on-error"

// releaseOnError replaces the failure path.
func releaseOnError(st *steps) { st.release = (*Server).forgetKey }

func (s *Server) forgetKey(w http.ResponseWriter, r *http.Request, req request, _ string, workErr error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	// THE BUG: the key goes, whether or not the work committed.
	_, _ = s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE client = $1 AND key = $2`, req.client, req.key)
	writeInternal(w, r, workErr)
}
