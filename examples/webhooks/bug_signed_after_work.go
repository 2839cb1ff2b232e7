package webhooks

// SignedAfterWork: the consumer applies the event, then checks its
// signature: a forged or replayed delivery is refused with 401, and its
// work is already committed.
//
// How it happens: the signature check is added late, as a filter on the
// reply ("reject unsigned webhooks") rather than a gate before the
// handler, or it runs in a middleware placed after the one that processes
// the event, or the raw body it needs is read only after the framework
// has parsed and handled the JSON. Every signed delivery still works, and
// every unsigned one is refused, so tests that look at statuses pass; the
// ledger tells otherwise. The reference verifies first, over the exact
// bytes received, and does nothing for a delivery that fails.
//
// idemcheck's signature check (with --sign) sends the event signed with
// another secret and then signed an hour ago; both are refused, and the
// effect query counts one effect: bad-signature-accepted. Only a signed
// consumer (WEBHOOK_SECRET) has this variant's bug; unsigned, it is the
// reference.

// SignedAfterWork verifies the signature after the event was applied.
const SignedAfterWork Variant = "signed-after-work"
