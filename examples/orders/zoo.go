package orders

import (
	"context"
	"net/http"
	"time"
)

// The zoo: the reference and its variants, each carrying exactly one
// classic idempotency bug. idemcheck is judged by what it catches and by
// what it flags wrongly, so every variant is built from the reference's own
// machinery (parsing, fingerprint, claim, reply saving) with one step
// replaced, and its file (bug_<name>.go) holds that step and nothing else:
// whatever idemcheck reports against a variant beyond its one bug is
// idemcheck's mistake, not the variant's.

// steps are the parts of the request flow that a variant may replace. New
// starts from referenceSteps and lets the variant's apply function replace
// one part (short-ttl also changes the default retention, which is the
// value its bug is about).
type steps struct {
	// fingerprint identifies the request behind a key (request.go).
	fingerprint func(method, path string, raw []byte, body map[string]any) []byte
	// client is the scope of a key: whose key it is (request.go).
	client func(r *http.Request) []byte
	// reject answers a request whose body fails validation (request.go).
	reject func(s *Server, w http.ResponseWriter, r *http.Request, key string, raw []byte, problem string)
	// storedKey is the key a request is stored under, from the key it sent.
	storedKey func(key string) string
	// keyOptional lets a request without Idempotency-Key through parsing.
	keyOptional bool
	// create handles a parsed request from the claim to the answer.
	create func(s *Server, w http.ResponseWriter, r *http.Request, req request)
	// claim makes the request the key's owner and returns true, or answers
	// for the key and returns false.
	claim func(s *Server, w http.ResponseWriter, r *http.Request, req request, token string) bool
	// expired reports whether a running key's owner may be presumed dead.
	expired func(k keyRow) bool
	// work executes the request and saves its reply.
	work func(s *Server, ctx context.Context, req request, token string) (reply, error)
	// fence stops an owner that lost the key from committing.
	fence func(ctx context.Context, q db, req request, token string) error
	// finish records the reply of an executed request in its key row.
	finish func(ctx context.Context, q db, req request, rep reply) error
	// release handles a failed work transaction and answers the client.
	release func(s *Server, w http.ResponseWriter, r *http.Request, req request, token string, workErr error)
	// replay answers a request whose key is finished.
	replay func(s *Server, w http.ResponseWriter, r *http.Request, req request, k keyRow)
	// retention is the default of Config.Retention.
	retention time.Duration
}

// referenceSteps is the reference flow (reference.go).
func referenceSteps() steps {
	return steps{
		fingerprint: fingerprint,
		client:      clientScope,
		reject:      rejectRequest,
		storedKey:   func(key string) string { return key },
		create:      (*Server).createReference,
		claim:       (*Server).claim,
		expired:     func(k keyRow) bool { return k.expired },
		work:        (*Server).work,
		fence:       fence,
		finish:      saveReply,
		release:     (*Server).release,
		replay:      (*Server).replaySaved,
		retention:   24 * time.Hour,
	}
}

// zooEntry is one variant: the idemcheck check that catches its bug, the
// anomaly kind that check reports, and the step it replaces.
type zooEntry struct {
	variant        Variant
	check, anomaly string
	apply          func(*steps)
}

// zoo lists the reference and every variant. The check and anomaly names
// are idemcheck's stable names, written out so that this example does not
// depend on the harness that tests it.
var zoo = []zooEntry{
	{Reference, "", "", nil},
	{CheckThenInsert, "concurrent-burst", "duplicate-effect", checkThenInsert},
	// The read and the write are one round trip apart: a timed burst
	// mostly misses it, a scheduled one never does.
	{NarrowCheckThenInsert, "concurrent-burst", "duplicate-effect", narrowCheckThenInsert},
	{NoFingerprint, "payload-mismatch", "payload-mismatch-accepted", noFingerprint},
	{RawBytesFingerprint, "reordered-body", "false-mismatch", rawBytesFingerprint},
	// The check sends the order's key and body to POST /payments, which
	// takes an order-shaped body as a payment on account (parsePayment).
	{BodyOnlyFingerprint, "cross-endpoint", "cross-endpoint-replay", bodyOnlyFingerprint},
	{DedupeByBody, "distinct-keys", "over-deduplication", dedupeByBody},
	{KeyOptional, "missing-key", "missing-key-accepted", keyOptional},
	{UniqueViolation500, "concurrent-burst", "server-error-under-retry", uniqueViolation500},
	{RerenderReplay, "sequential-replay", "replay-mismatch", rerenderReplay},
	// The check's first attempt must be a charge the processor stand-in
	// declines once: totalCents (or amountCents) of DeclineOnceCents.
	{ErrorsNotSaved, "failed-attempt", "replay-mismatch", errorsNotSaved},
	{NotScopedPerClient, "cross-tenant", "cross-tenant-replay", notScopedPerClient},
	// The check must wait longer than ShortTTLRetention between the
	// original and its replay.
	{ShortTTL, "sequential-replay", "fresh-result-on-replay", shortTTL},
	// The check's first attempt must fail inside its work transaction
	// (the database link cut mid-transaction, or a database error).
	{ClaimNeverReleased, "failed-attempt", "stuck-key", claimNeverReleased},
	// The crash must fall between the claim and the commit.
	{NoLease, "crash-lease", "stuck-key", noLease},
	{LeaseNoFencing, "lease-fencing", "duplicate-effect", leaseNoFencing},
	// The crash must fall after the order's COMMIT and before the key's:
	// the second COMMIT of the attempt.
	{SeparateKeyStore, "crash-lease", "duplicate-effect", separateKeyStore},
	// The burst must reach two instances on one database (RoundRobin, or
	// the binary's -instances 2).
	{InMemoryLock, "concurrent-burst", "duplicate-effect", inMemoryLock},
	// The retry must come after a restart of the target.
	{InMemoryKeyStore, "restart-replay", "duplicate-effect", inMemoryKeyStore},
	// The kill must fall after the order's COMMIT and before the key's
	// autocommitted UPDATE: the statement the target sends next.
	{KeySavedAfterCommit, "crash-after-commit", "duplicate-effect", keySavedAfterCommit},
	// The retry must arrive while the first attempt's transaction is open:
	// held at its COMMIT, say.
	{CheckInTransaction, "in-flight-retry", "duplicate-effect", checkInTransaction},
	// The check's first body must fail validation (by default idemcheck
	// breaks the type of every member of the order).
	{SavesValidationErrors, "corrected-retry", "rejected-request-saved", savesValidationErrors},
	// The check's two long keys must differ only past the 64th character.
	{TruncatesKeys, "key-syntax", "over-deduplication", truncatesKeys},
}

func lookup(v Variant) (zooEntry, bool) {
	for _, z := range zoo {
		if z.variant == v {
			return z, true
		}
	}
	return zooEntry{}, false
}
