package idemcheck

// Check names are stable: they appear in reports, suite files and JUnit.
// They are names only: each check is one value in package scenarios, whose
// registry is the one list of checks, in the order a certification runs them.
const (
	CheckConcurrentBurst  = "concurrent-burst"
	CheckSequentialReplay = "sequential-replay"
	CheckLostReply        = "lost-reply"
	CheckPayloadMismatch  = "payload-mismatch"
	CheckReorderedBody    = "reordered-body"
	CheckCrossEndpoint    = "cross-endpoint"
	CheckDistinctKeys     = "distinct-keys"
	CheckMissingKey       = "missing-key"
	CheckFailedAttempt    = "failed-attempt"
	CheckCrashLease       = "crash-lease"
	// CheckRestartReplay: an intent completes, the target is killed and
	// restarted, and the retry must be a replay.
	CheckRestartReplay = "restart-replay"
	// CheckCrashAfterCommit: the target is killed after its effect
	// committed and before its reply reached the client, then restarted;
	// the retry must be a replay, never a second effect.
	CheckCrashAfterCommit = "crash-after-commit"
	// CheckInFlightRetry: a retry is sent while the first attempt is held
	// inside the target (at its database link); it must get the in-progress
	// status or wait for the replay, never cause a second effect.
	CheckInFlightRetry    = "in-flight-retry"
	CheckLeaseFencing     = "lease-fencing"
	CheckCrossTenant      = "cross-tenant"
	CheckWebhookRedeliver = "webhook-redelivery"
	CheckCorrectedRetry   = "corrected-retry"
	CheckKeySyntax        = "key-syntax"
	// CheckSignature: a delivery signed with another secret, and one
	// signed an hour ago, are sent to a consumer that verifies signatures;
	// each must be refused before any work.
	CheckSignature = "signature"
	// CheckSoak is the load run of `idemcheck soak`, apart from certification.
	CheckSoak = "soak"
)

// Variant says how an attempt's request differs from its intent's
// original request. Most attempts send the original; some checks send a
// changed copy under the same key (or without it) and judge the answer.
type Variant string

const (
	// Original: the intent's own request.
	Original Variant = ""
	// OtherBody: the same key with a different body.
	OtherBody Variant = "other-body"
	// Reordered: the same JSON with its members reordered and its white
	// space changed: the same request to any server that compares meaning.
	Reordered Variant = "reordered"
	// OtherEndpoint: the same key sent to another method or path.
	OtherEndpoint Variant = "other-endpoint"
	// OtherKey: the same body under a fresh key: a new intent by contract.
	OtherKey Variant = "other-key"
	// NoKey: the request without its key header.
	NoKey Variant = "no-key"
	// Failing: the endpoint's failing body, one the target answers with an
	// error every first time (a declined card, say); its retry must replay
	// that error when the policy says errors are saved.
	Failing Variant = "failing-body"
	// TenantA: the original request sent with the first client's credentials.
	TenantA Variant = "tenant-a"
	// OtherTenant: the same key and body with a second client's credentials.
	OtherTenant Variant = "other-tenant"
	// InvalidBody: a body the target must reject before doing any work (a
	// validation error), under the intent's key: the endpoint's invalid
	// body, or one derived from its body by breaking every member's type.
	InvalidBody Variant = "invalid-body"
	// Corrected: the intent's own request sent after its InvalidBody under
	// the same key: the client's correction of a rejected request.
	Corrected Variant = "corrected"
	// EmptyKey, OverlongKey and ListKey send the request with a malformed
	// key: an empty one, one longer than MaxKeyLen, and one holding a
	// comma (two keys to a reader of the header as a list).
	EmptyKey    Variant = "empty-key"
	OverlongKey Variant = "overlong-key"
	ListKey     Variant = "list-key"
	// LongKey and LongKeyTwin send the request under two valid keys of
	// LongKeyLen characters that differ only in their last character: two
	// intents that a store which truncates keys takes for one.
	LongKey     Variant = "long-key"
	LongKeyTwin Variant = "long-key-twin"
	// BadSignature: the request signed with another secret than the
	// consumer's (a forgery); StaleSignature: the request signed properly
	// an hour ago (a replay of a captured delivery). A consumer that
	// verifies signatures refuses both before any work.
	BadSignature   Variant = "bad-signature"
	StaleSignature Variant = "stale-signature"
)

// MaxKeyLen is the longest key a target must take (Stripe: 255
// characters); OverlongKey is one character longer.
const MaxKeyLen = 255

// LongKeyLen is the length of LongKey and LongKeyTwin: well within
// MaxKeyLen, well past the 64 characters a store may cut keys to.
const LongKeyLen = 200

// MalformedKey reports whether v sends a key the target must refuse.
func (v Variant) MalformedKey() bool { return v == EmptyKey || v == OverlongKey || v == ListKey }

// SameRequest reports whether v asks for the same thing as the original.
func (v Variant) SameRequest() bool { return v == Original || v == Reordered || v == TenantA }

// Delivers reports whether v asks the target to process a request, rather
// than one the target must refuse: under an ack-only policy these are the
// deliveries a webhook sender makes again until they are acknowledged (the
// event itself, a failing event, another event, the event from another
// client).
func (v Variant) Delivers() bool {
	return v.SameRequest() || v == Failing || v == OtherKey || v == OtherTenant
}

// Kind names a class of idempotency bug. Kinds are stable: they appear in
// JSON and JUnit reports and CI pipelines match on them.
type Kind string

const (
	// DuplicateEffect: the database holds more than one effect for one intent.
	DuplicateEffect Kind = "duplicate-effect"
	// MultipleCreated: overlapping attempts of one intent were answered with
	// more than one distinct created resource.
	MultipleCreated Kind = "multiple-created"
	// ReplayMismatch: a replay describes the same resource as the original
	// but with another status or body; or a retry sent after the original's
	// success had arrived was answered with anything but that success (the
	// in-progress status, or another status such as 422), when the saved
	// reply was due.
	ReplayMismatch Kind = "replay-mismatch"
	// FreshResultOnReplay: a retry sent after the original had succeeded was
	// executed again and answered with a new resource.
	FreshResultOnReplay     Kind = "fresh-result-on-replay"
	PayloadMismatchAccepted Kind = "payload-mismatch-accepted"
	FalseMismatch           Kind = "false-mismatch"
	CrossEndpointReplay     Kind = "cross-endpoint-replay"
	CrossTenantReplay       Kind = "cross-tenant-replay"
	OverDeduplication       Kind = "over-deduplication"
	MissingKeyAccepted      Kind = "missing-key-accepted"
	// ServerErrorUnderRetry: a 5xx where a conflict or a replay was due.
	ServerErrorUnderRetry Kind = "server-error-under-retry"
	StuckKey              Kind = "stuck-key"
	// LostEffect: the client was told of a success that the database does not hold.
	LostEffect Kind = "lost-effect"
	// LateDuplicateEffect: counted again after the last check, an intent
	// held more effects than it was judged with, and more than it may: a
	// second effect appeared after the reply and after the first count (a
	// background worker retried after its effect committed, a job
	// enqueued twice and run later).
	LateDuplicateEffect Kind = "late-duplicate-effect"
	// UnexpectedStatus: a status the policy does not allow at that point.
	UnexpectedStatus Kind = "unexpected-status"
	// NeverAcknowledged: under an ack-only policy (a webhook consumer), an
	// event was delivered again and again, within the sender's bound, and
	// no delivery was acknowledged: the sender gives up and the event is
	// never processed.
	NeverAcknowledged Kind = "never-acknowledged"
	// RejectedRequestSaved: a request rejected before execution (a
	// validation error) was saved under its key where the policy says
	// rejections are not saved, so the client's corrected request under
	// the same key got the rejection back (or a mismatch) instead of
	// being executed.
	RejectedRequestSaved Kind = "rejected-request-saved"
	// MalformedKeyAccepted: a key that is not a valid key (empty, too long,
	// a list) was taken and the request executed, where the policy says
	// such keys are refused.
	MalformedKeyAccepted Kind = "malformed-key-accepted"
	// ProviderDuplicateCharge: one client intent caused two or more
	// effective charges at a downstream provider: the target reached it
	// under distinct keys (a fresh key per attempt, a key derived from the
	// attempt) or with no key, so a retry charged the customer again while
	// the API's own table may show one order.
	ProviderDuplicateCharge Kind = "provider-duplicate-charge"
	// ProviderCallWithoutKey: the target called a downstream provider with
	// no idempotency key, so the provider cannot tell that call's retry
	// from a new charge.
	ProviderCallWithoutKey Kind = "provider-call-without-key"
	// TargetExitedFinding: the target process exited under a fault
	// idemcheck applied (a dropped database link, say): a robustness
	// finding, reported apart from the idempotency verdict. Its name is
	// not TargetExited, the event of the same value.
	TargetExitedFinding Kind = "target-exited"
	// ServerErrorUnderFault: a 5xx on an attempt idemcheck itself broke
	// (a cut link, a failed downstream call): the expected outcome of the
	// fault, a robustness finding apart from the verdict.
	ServerErrorUnderFault Kind = "server-error-under-fault"
	// BadSignatureAccepted: a delivery signed with another secret was
	// acknowledged or left an effect: the consumer acts on forged events
	// (it checks the signature after the work, or not at all).
	BadSignatureAccepted Kind = "bad-signature-accepted"
	// StaleSignatureAccepted: a delivery properly signed an hour ago was
	// acknowledged, far outside the five-minute tolerance senders document:
	// a captured delivery can be replayed. A conformance remark (the
	// FindingClass mechanism classes it so): the event id still keeps its
	// effect single.
	StaleSignatureAccepted Kind = "stale-signature-accepted"
)

// FindingClass says what a finding means for the verdict. Only failures
// (and conformance remarks where the policy requires them) make a check
// fail: a correct service must be able to pass while a remark about its
// key syntax, or a crash under a fault, is still reported.
type FindingClass string

const (
	// FailureFinding: a broken idempotency promise (a second effect, a
	// lost effect, a wrong replay, a leak across tenants, a stuck key, a
	// mismatch accepted, two keys taken for one). It fails the check.
	FailureFinding FindingClass = "failure"
	// ConformanceFinding: something oddly formed was accepted, or a status
	// the policy did not expect answered where nothing was lost (a long or
	// a list key taken). It is reported in its own section and fails the
	// check only where the policy requires it (Policy.KeySyntax).
	ConformanceFinding FindingClass = "conformance"
	// RobustnessFinding: the target exited, or answered a 5xx, under a
	// fault idemcheck applied. It is reported apart from the verdict.
	RobustnessFinding FindingClass = "robustness"
)

// Class is the class of findings of kind k. It goes by the kind's value,
// so a kind read from a report classifies the same; a kind it does not
// know is a failure, never a remark.
func (k Kind) Class() FindingClass {
	switch k {
	case MalformedKeyAccepted, StaleSignatureAccepted:
		return ConformanceFinding
	case TargetExitedFinding, ServerErrorUnderFault:
		return RobustnessFinding
	}
	return FailureFinding
}

// Anomaly is one broken promise, with the evidence that witnesses it. The
// data (attempts, evidence, observed counts) is kept apart from the prose
// (Explanation), so a reviewer can verify the prose against the data.
type Anomaly struct {
	Kind Kind `json:"kind"`
	// Class is what the finding means for the verdict: usually its kind's
	// Class, but a checker may say that one finding of a failure kind
	// loses nothing (an unexpected status answering a malformed key is a
	// conformance remark). Empty, in a report written before classes,
	// means the kind's.
	Class  FindingClass `json:"class,omitempty"`
	Check  string       `json:"check"`
	Intent string       `json:"intent"`
	Key    string       `json:"key,omitempty"`
	// Explanation says in a sentence or two what happened and why it breaks
	// the contract, in terms a reviewer can check by hand.
	Explanation string `json:"explanation"`
	// Attempts are the IDs of the attempts that witness the anomaly.
	Attempts []int `json:"attempts"`
	// Evidence shows each witnessing attempt as it was seen on the wire.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Observed holds the counts read from the database and other figures.
	Observed map[string]any `json:"observed,omitempty"`
	// Calls are the target's calls to a downstream provider that witness
	// the anomaly (the provider-* kinds).
	Calls []ProviderCall `json:"calls,omitempty"`
}

// Finding is the anomaly's class: Class, or its kind's when unset.
func (a Anomaly) Finding() FindingClass {
	if a.Class != "" {
		return a.Class
	}
	return a.Kind.Class()
}

// Evidence is one attempt as the wire showed it.
type Evidence struct {
	Attempt int    `json:"attempt"`
	Step    int    `json:"step"`
	Status  int    `json:"status,omitempty"`
	Body    string `json:"body,omitempty"`
	Error   string `json:"error,omitempty"`
	// Replayed is the value of the policy's replay header, when the policy names one.
	Replayed string `json:"replayed,omitempty"`
}
