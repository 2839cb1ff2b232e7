package orders

import (
	"context"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/examples/apikit"
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
	// providerKey is the idempotency key a charge at the payment provider
	// carries ("" for none), from the request (provider.go).
	providerKey func(ctx context.Context, req request) string
	// chargeAfterCommit charges the provider after the work committed,
	// not inside it (bug_charge_after_commit.go).
	chargeAfterCommit bool
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
		providerKey: providerKey,
	}
}

// zoo lists the reference and every variant: the idemcheck check that
// catches its bug, the anomaly kind that check reports, and the step it
// replaces.
var zoo = apikit.Variants[Variant, func(*steps)]{
	{Name: Reference},
	{Name: CheckThenInsert, Check: "concurrent-burst", Anomaly: "duplicate-effect", Impl: checkThenInsert},
	// The read and the write are one round trip apart: a timed burst
	// mostly misses it, a scheduled one never does.
	{Name: NarrowCheckThenInsert, Check: "concurrent-burst", Anomaly: "duplicate-effect", Needs: apikit.NeedsLink, Impl: narrowCheckThenInsert},
	// A claim taken by last writer wins: it shows when a copy's write
	// lands after another copy finished, which timing gives in some rounds
	// and writes released in turn give in every one (so a run by URL,
	// whose bursts are timed, may miss it: NeedsLink).
	{Name: UpsertClaim, Check: "concurrent-burst", Anomaly: "duplicate-effect", Needs: apikit.NeedsLink, Impl: upsertClaim},
	{Name: NoFingerprint, Check: "payload-mismatch", Anomaly: "payload-mismatch-accepted", Impl: noFingerprint},
	{Name: RawBytesFingerprint, Check: "reordered-body", Anomaly: "false-mismatch", Impl: rawBytesFingerprint},
	// The check sends the order's key and body to POST /payments, which
	// takes an order-shaped body as a payment on account (parsePayment).
	{Name: BodyOnlyFingerprint, Check: "cross-endpoint", Anomaly: "cross-endpoint-replay", Impl: bodyOnlyFingerprint},
	{Name: DedupeByBody, Check: "distinct-keys", Anomaly: "over-deduplication", Impl: dedupeByBody},
	{Name: KeyOptional, Check: "missing-key", Anomaly: "missing-key-accepted", Impl: keyOptional},
	// Its read and its INSERT are one round trip apart, as narrow
	// check-then-insert's: a timed burst (by URL) may miss it.
	{Name: UniqueViolation500, Check: "concurrent-burst", Anomaly: "server-error-under-retry", Needs: apikit.NeedsLink, Impl: uniqueViolation500},
	{Name: RerenderReplay, Check: "sequential-replay", Anomaly: "replay-mismatch", Impl: rerenderReplay},
	// The check's first attempt must be a charge the processor stand-in
	// declines once: totalCents (or amountCents) of DeclineOnceCents.
	{Name: ErrorsNotSaved, Check: "failed-attempt", Anomaly: "replay-mismatch", Impl: errorsNotSaved},
	{Name: NotScopedPerClient, Check: "cross-tenant", Anomaly: "cross-tenant-replay", Impl: notScopedPerClient},
	// The check must wait longer than ShortTTLRetention between the
	// original and its replay.
	{Name: ShortTTL, Check: "sequential-replay", Anomaly: "fresh-result-on-replay", Impl: shortTTL},
	// The check's first attempt must fail inside its work transaction
	// (the database link cut mid-transaction, or a database error).
	{Name: ClaimNeverReleased, Check: "failed-attempt", Anomaly: "stuck-key", Needs: apikit.NeedsLink, Impl: claimNeverReleased},
	// The check's first attempt must fail after its work committed: the
	// database link cut once the database had answered the COMMIT.
	{Name: ReleaseOnError, Check: "failed-attempt", Anomaly: "duplicate-effect", Needs: apikit.NeedsLink, Impl: releaseOnError},
	// The crash must fall between the claim and the commit.
	{Name: NoLease, Check: "crash-lease", Anomaly: "stuck-key", Impl: noLease},
	{Name: LeaseNoFencing, Check: "lease-fencing", Anomaly: "duplicate-effect", Impl: leaseNoFencing},
	// The crash must fall after the order's COMMIT and before the key's:
	// the second COMMIT of the attempt.
	{Name: SeparateKeyStore, Check: "crash-lease", Anomaly: "duplicate-effect", Impl: separateKeyStore},
	// The burst must reach two instances on one database (RoundRobin, or
	// the binary's -instances 2).
	{Name: InMemoryLock, Check: "concurrent-burst", Anomaly: "duplicate-effect", Needs: apikit.NeedsLink, Impl: inMemoryLock},
	// The retry must come after a restart of the target.
	{Name: InMemoryKeyStore, Check: "restart-replay", Anomaly: "duplicate-effect", Impl: inMemoryKeyStore},
	// The kill must fall after the order's COMMIT and before the key's
	// autocommitted UPDATE: the statement the target sends next.
	{Name: KeySavedAfterCommit, Check: "crash-after-commit", Anomaly: "duplicate-effect", Impl: keySavedAfterCommit},
	// The retry must arrive while the first attempt's transaction is open:
	// held at its COMMIT, say.
	{Name: CheckInTransaction, Check: "in-flight-retry", Anomaly: "duplicate-effect", Impl: checkInTransaction},
	// The check's first body must fail validation (by default idemcheck
	// breaks the type of every member of the order).
	{Name: SavesValidationErrors, Check: "corrected-retry", Anomaly: "rejected-request-saved", Impl: savesValidationErrors},
	// The check's two long keys must differ only past the 64th character.
	{Name: TruncatesKeys, Check: "key-syntax", Anomaly: "over-deduplication", Impl: truncatesKeys},
	// The variants below charge a payment provider (PROVIDER_URL, a
	// double idemcheck serves): without one they are the reference.
	// A failed first attempt charged; its retry charges again.
	{Name: FreshProviderKey, Check: "failed-attempt", Anomaly: "provider-duplicate-charge", Needs: apikit.NeedsProvider, Impl: freshProviderKey},
	{Name: NoProviderKey, Check: "concurrent-burst", Anomaly: "provider-call-without-key", Needs: apikit.NeedsProvider, Impl: noProviderKey},
	// The crash must fall after the charge and before the work's COMMIT.
	{Name: ProviderKeyPerAttempt, Check: "crash-lease", Anomaly: "provider-duplicate-charge", Needs: apikit.NeedsProvider, Impl: providerKeyPerAttempt},
	{Name: ChargeAfterCommit, Check: "lost-reply", Anomaly: "provider-call-without-key", Needs: apikit.NeedsProvider, Impl: chargeAfterCommit},
}
