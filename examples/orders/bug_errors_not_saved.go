package orders

// ErrorsNotSaved: only successes are saved; an executed request that
// failed gives its key back, so its retry runs again and can come out
// differently.
//
// How it happens: "we cache 2xx responses" is the first version of every
// idempotency layer, and it feels safe: a failure is not worth
// remembering, the client will just try again. But a failure that was the
// outcome of executing the request (a declined charge, an order refused by
// a rule, a 500 after the work began) is an answer the client already
// acted on. Its retry, with the same key, is meant to learn that answer
// again; executed anew, it may succeed (the card's soft decline has
// cleared), and the client that showed "payment declined" has in fact
// charged the customer. Stripe saves every result once execution began,
// errors included, and the policy says errors are replayed.
//
// The trigger is real and deterministic: the processor stand-in declines a
// payer's first charge of DeclineOnceCents and approves the next
// (effects.go); the reference saves that 402 and replays it. idemcheck's
// failed-attempt check, given that amount, sends the intent and then its
// retry, and reports replay-mismatch: the retry's 201 is not the saved
// 402.

import "context"

// ErrorsNotSaved saves 2xx replies only and releases the key on any other.
const ErrorsNotSaved Variant = "errors-not-saved"

// errorsNotSaved replaces how a reply is recorded.
func errorsNotSaved(st *steps) { st.finish = saveSuccessOnly }

func saveSuccessOnly(ctx context.Context, q db, req request, rep reply) error {
	if rep.status >= 200 && rep.status < 300 {
		return saveReply(ctx, q, req, rep)
	}
	// THE BUG: the decline happened, but the key forgets it.
	_, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE client = $1 AND key = $2`, req.client, req.key)
	return err
}
