package orders

// SavesValidationErrors: a request refused by validation is saved under its
// key like an executed one, so the client's corrected request, sent again
// with the same key, is refused for ever.
//
// How it happens: the idempotency layer is a middleware around the
// handler. It claims the key, calls the handler, and saves whatever the
// handler answered, 400s included, because "the earlier result, success
// or error" is what a retry must get. But a 400 from validation is not an
// outcome of the request: nothing ran. The client reads "totalCents must
// be a number", fixes its body and sends it with the key it already has,
// as it would after any error; the key now belongs to the rejected body,
// and the correction gets 422 (the saved fingerprint differs) or, in a
// layer without fingerprints, the stored 400 again. The order can never be
// placed under that key. Stripe saves nothing when validation fails before
// execution; the reference answers 400 and stores nothing (request.go).
//
// idemcheck's corrected-retry check sends a body the target refuses (by
// default the order with every member's type broken), then the order
// itself under the same key, and reports rejected-request-saved for the
// 422.

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// SavesValidationErrors saves validation errors under the request's key.
const SavesValidationErrors Variant = "saves-validation-errors"

// savesValidationErrors replaces how a request that fails validation is answered.
func savesValidationErrors(st *steps) { st.reject = saveRejection }

func saveRejection(s *Server, w http.ResponseWriter, r *http.Request, key string, raw []byte, problemText string) {
	rep := problem(http.StatusBadRequest, problemText)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	// THE BUG: the rejection is saved as the key's finished reply, under
	// the fingerprint of the body that was refused.
	_, err := s.pool.Exec(ctx, `
		INSERT INTO idempotency_keys (client, key, fingerprint, status, token, locked_until, response_status, content_type, response_body, finished_at)
		VALUES ($1, $2, $3, 'done', $4, now(), $5, $6, $7, now())
		ON CONFLICT (client, key) DO NOTHING`,
		s.st.client(r), key, digest([]byte(r.Method), []byte(r.URL.Path), raw), uuid.NewString(), rep.status, rep.contentType, rep.body)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	rep.write(w, false)
}
