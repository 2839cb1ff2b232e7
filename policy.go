package idemcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Policy is what a target promises about idempotency. Providers disagree on
// details (see the contract notes in the README), so every rule that differs
// between them is a field here; the IETF draft is the default.
type Policy struct {
	// KeyHeader is the request header that carries the idempotency key.
	KeyHeader string `json:"key_header"`
	// CreatedStatuses are the statuses of a first, successful execution.
	CreatedStatuses []int `json:"created_statuses"`
	// AcceptedStatuses are the success statuses that mean "accepted, effect
	// pending" (202): the work is done later, by a background worker or a
	// queue, so the effect may land after the reply. Such a reply is a
	// success (Created holds for it) whose missing effect is not lost until
	// effects were counted settled (--settle).
	AcceptedStatuses []int `json:"accepted_statuses,omitempty"`
	// ReplayStatuses are the statuses a replay of a success may carry, beside
	// the original status itself.
	ReplayStatuses []int `json:"replay_statuses,omitempty"`
	// InProgressStatus answers a duplicate that arrives while the first
	// attempt still runs (409 in the IETF draft). 0 means a duplicate waits
	// for the first attempt and is answered with its replay. It is the
	// status messages name; InProgress tells whether a status says so.
	InProgressStatus int `json:"in_progress_status"`
	// InProgressStatuses, when set, lists every status that says "still in
	// progress", InProgressStatus among them: a target may answer 409 to a
	// duplicate and 423 when it timed out waiting on the key's lock. Empty
	// means InProgressStatus alone. Histories written before the list
	// existed hold in_progress_status only, and read the same.
	InProgressStatuses []int `json:"in_progress_statuses,omitempty"`
	// MismatchStatus answers a reused key with another request (422 in the
	// IETF draft, 400 at some providers). 0 means the target keeps no
	// request fingerprint, so the payload-mismatch rule does not apply.
	MismatchStatus int `json:"mismatch_status"`
	// MissingKeyStatus answers a request without a key; 0 means the key is optional.
	MissingKeyStatus int `json:"missing_key_status,omitempty"`
	// ReplayErrors says saved error replies are replayed too (Stripe), rather
	// than only successes being cached.
	ReplayErrors bool `json:"replay_errors"`
	// ReplayHeader, when set, is the header a replay carries ("Idempotent-Replayed").
	ReplayHeader string `json:"replay_header,omitempty"`
	// Lease is how long the target holds a claimed key before a retry may
	// take it over; 0 means unknown.
	Lease time.Duration `json:"lease_ns,omitempty"`
	// IgnoreFields are JSON pointers left out when two replies are compared
	// (for example a response timestamp the API documents as fresh).
	IgnoreFields []string `json:"ignore_fields,omitempty"`
	// KeyPointer, when set, is where the key travels in the request body
	// (a JSON pointer, such as "/eventId" for a webhook's event id) instead
	// of in KeyHeader; the body template puts {{key}} there.
	KeyPointer string `json:"key_pointer,omitempty"`
	// AckOnly says replies are acknowledgements (a webhook's 200): only
	// their statuses count, bodies are not compared, and the database alone
	// says whether the effect happened once.
	AckOnly bool `json:"ack_only,omitempty"`
	// ResourceID is the JSON pointer of the created resource's id in a
	// success body. Empty means detect it ("/id", then a top-level member
	// ending in "Id" or "_id"). Two success replies with different ids
	// describe two resources; with the same id, one resource told twice.
	ResourceID string `json:"resource_id,omitempty"`
	// SaveRejected says a request rejected before execution (a validation
	// error, 4xx) is saved under its key like an executed one, so a
	// corrected request under the same key gets the saved rejection (or
	// the mismatch status). False means nothing is saved for it and the
	// correction is executed: Stripe's rule.
	SaveRejected bool `json:"save_rejected,omitempty"`
	// InvalidKeyStatus answers a malformed key: an empty one, one over 255
	// characters, one that is a list (a comma). 0 means no rule.
	InvalidKeyStatus int `json:"invalid_key_status,omitempty"`
	// KeySyntax says whether the key-syntax rules (InvalidKeyStatus) are
	// required: KeySyntaxRequired makes an oddly formed key that was
	// accepted fail the check, as it does for a provider that documents
	// its key limits (Stripe: 255 characters). Empty (KeySyntaxRemark)
	// reports it as a conformance remark apart from the verdict: nothing
	// was lost or duplicated. Two keys taken for one is a failure either way.
	KeySyntax string `json:"key_syntax,omitempty"`
	// ArrivalHeader, when set, is a header of the target's replies that
	// says when it received the whole request, by its own clock: Unix
	// time in seconds, milliseconds, microseconds or nanoseconds (told
	// apart by size) or RFC 3339 with fractions ("X-Received-At"). A
	// burst's proof then says how tightly its attempts arrived, not only
	// how tightly they left: a tight release is not a tight arrival across
	// a network or a busy intake.
	ArrivalHeader string `json:"arrival_header,omitempty"`
	// StatusPointer, when set, says the API tells an accepted request's
	// operation status (RFC 9110 section 15.3.3: a 202 "ought to ...
	// point to a status monitor"): it is the JSON pointer of the state in
	// the monitor's representation ("/status"). While effects settle,
	// each accepted attempt's monitor is read (GET) until its state is
	// one of StatusDone or StatusFailed: a count is settled only once
	// every operation of the intent is over.
	StatusPointer string `json:"status_pointer,omitempty"`
	// StatusDone and StatusFailed are the states that mean the operation
	// finished ("succeeded") or failed for good ("failed"); any other is
	// pending. An operation that failed owes no effect.
	StatusDone   []string `json:"status_done,omitempty"`
	StatusFailed []string `json:"status_failed,omitempty"`
	// StatusURLPointer is the JSON pointer, in the accepted reply's body,
	// of the monitor's URL ("/links/status"); empty takes the reply's
	// Location header (or Content-Location). A URL relative to the
	// target, or absolute on the target's own origin: idemcheck reads no
	// other.
	StatusURLPointer string `json:"status_url_pointer,omitempty"`
}

// The values of Policy.KeySyntax.
const (
	KeySyntaxRemark   = "remark"
	KeySyntaxRequired = "required"
)

// Counts reports whether a finding counts against the verdict under p:
// every failure, and the key-syntax check's conformance remarks where p
// requires key syntax. Robustness findings never do.
func (p Policy) Counts(a Anomaly) bool {
	switch a.Finding() {
	case ConformanceFinding:
		return p.KeySyntax == KeySyntaxRequired && a.Check == CheckKeySyntax
	case RobustnessFinding:
		return false
	}
	return true
}

// IETF is the policy of the IETF Idempotency-Key draft, idemcheck's
// default: 409 for a concurrent duplicate, 422 for a reused key with
// another payload, 400 for a missing key, earlier results (errors too)
// returned to retries.
//
// Rejected requests are not saved: the draft returns the earlier result to
// a retry of a completed request, and a request refused by validation
// before any work began completed nothing; saving it would tie the key to
// a payload the client has to correct, so the correction would be refused
// for ever. The draft's key is a Structured Field string (section 2.1): a
// header that is not one (empty, a list) is as good as missing, and gets
// the missing key's 400.
func IETF() Policy {
	return Policy{
		KeyHeader:        "Idempotency-Key",
		CreatedStatuses:  []int{200, 201, 202},
		AcceptedStatuses: []int{202},
		InProgressStatus: 409,
		MismatchStatus:   422,
		MissingKeyStatus: 400,
		ReplayErrors:     true,
		InvalidKeyStatus: 400,
	}
}

// Stripe is Stripe's published contract: creations answer 200, the key is
// optional, parameters that differ from the original's are an
// idempotency_error (400), a concurrent duplicate gets 409, the first
// result is saved whether it succeeded or failed (500s included), and
// replays carry Idempotent-Replayed: true. Nothing is saved when
// validation fails before execution, and keys are at most 255 characters
// (a longer one is a 400): a documented limit, so key syntax is required.
func Stripe() Policy {
	return Policy{
		KeyHeader:        "Idempotency-Key",
		CreatedStatuses:  []int{200},
		InProgressStatus: 409,
		MismatchStatus:   400,
		ReplayErrors:     true,
		ReplayHeader:     "Idempotent-Replayed",
		Lease:            0,
		SaveRejected:     false,
		InvalidKeyStatus: 400,
		KeySyntax:        KeySyntaxRequired,
	}
}

// GoFiber is the documented behaviour of the Fiber web framework's
// idempotency middleware: the key is X-Idempotency-Key (a 36-character
// UUID) and optional, no request fingerprint is kept (a reused key with
// another body is replayed), a concurrent duplicate waits on a lock and is
// answered with the replay, and keys live 30 minutes. The middleware
// stores the handler's response whatever its status whenever the handler
// returns no error, so a validation error the handler writes itself
// (c.Status(400).JSON(...)) is saved under the key (a handler that returns
// fiber.NewError instead saves nothing: set save_rejected false). An empty
// key skips the middleware; a key of another length than 36 characters
// fails its validation with a plain error, which Fiber's default error
// handler answers 500, so no status is promised for malformed keys.
func GoFiber() Policy {
	return Policy{
		KeyHeader:        "X-Idempotency-Key",
		CreatedStatuses:  []int{200, 201, 202},
		AcceptedStatuses: []int{202},
		ReplayErrors:     true,
		SaveRejected:     true,
	}
}

// Webhook is the contract of a webhook or queue consumer: the event id in
// the body is the key, any 2xx acknowledges, a failed delivery is
// delivered again and must then be applied (errors are not saved), and the
// effect must happen exactly once. The key is the event id in the body, not
// a header, so no key-syntax rule applies (InvalidKeyStatus 0), and a
// rejected delivery is not saved: it is not acknowledged, and the sender
// delivers it again.
func Webhook() Policy {
	return Policy{
		KeyHeader:        "Idempotency-Key",
		KeyPointer:       "/eventId",
		CreatedStatuses:  []int{200, 201, 202, 204},
		AcceptedStatuses: []int{202},
		InProgressStatus: 409,
		MissingKeyStatus: 400,
		AckOnly:          true,
	}
}

// Presets are the named policies a suite or --policy flag can start from.
var Presets = map[string]func() Policy{"ietf": IETF, "stripe": Stripe, "gofiber": GoFiber, "webhook": Webhook}

// PresetNames lists the presets in a stable order, for messages.
func PresetNames() []string { return []string{"gofiber", "ietf", "stripe", "webhook"} }

// Preset returns the named policy.
func Preset(name string) (Policy, error) {
	f, ok := Presets[name]
	if !ok {
		return Policy{}, fmt.Errorf("unknown policy preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return f(), nil
}

// Created reports whether status is one of the policy's success statuses:
// a created one, or an accepted one (the work pending).
func (p Policy) Created(status int) bool {
	return slices.Contains(p.CreatedStatuses, status) || p.Accepted(status)
}

// Accepted reports whether status means "accepted, effect pending"
// (AcceptedStatuses): a success whose effect may land after the reply.
func (p Policy) Accepted(status int) bool { return slices.Contains(p.AcceptedStatuses, status) }

// Replay reports whether status may answer a replay of a success.
func (p Policy) Replay(status int) bool {
	return p.Created(status) || slices.Contains(p.ReplayStatuses, status)
}

// InProgress reports whether status says the key's first attempt is still
// running: InProgressStatus or one of InProgressStatuses. 0 never is.
func (p Policy) InProgress(status int) bool {
	return status != 0 && (status == p.InProgressStatus || slices.Contains(p.InProgressStatuses, status))
}

// SetInProgress makes statuses the policy's in-progress statuses, the first
// one the status messages name; none, or a single 0, means a duplicate waits
// for the first attempt and gets its replay.
func (p *Policy) SetInProgress(statuses ...int) {
	p.InProgressStatus, p.InProgressStatuses = 0, nil
	if len(statuses) == 0 || len(statuses) == 1 && statuses[0] == 0 {
		return
	}
	p.InProgressStatus = statuses[0]
	if len(statuses) > 1 {
		p.InProgressStatuses = slices.Clone(statuses)
	}
}

// InProgressList returns every in-progress status, InProgressStatus first,
// for messages; nil when a duplicate waits for the replay.
func (p Policy) InProgressList() []int {
	var out []int
	if p.InProgressStatus != 0 {
		out = append(out, p.InProgressStatus)
	}
	for _, s := range p.InProgressStatuses {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// validHeaderName reports whether name can be an HTTP header's name: a
// token of RFC 9110 section 5.6.2 (letters, digits and !#$%&'*+-.^_`|~),
// with no space, colon or control character. The rest of the harness asks
// httpguts.ValidHeaderFieldName, the same rule; the root keeps its own so
// that a Policy validates itself with the standard library alone.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// PolicyError is a policy that cannot be right, naming the field (as a
// policy file spells it) so a suite or policy file can point at its line.
type PolicyError struct {
	Field string
	Msg   string
}

func (e *PolicyError) Error() string { return "policy: " + e.Msg }

func policyErrorf(field, format string, args ...any) error {
	return &PolicyError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// headerNameRule says what a header name may hold, for messages.
const headerNameRule = "a token: letters, digits and !#$%&'*+-.^_`|~, no spaces or colons"

// Validate says what is wrong with a policy, naming the field. Errors are
// *PolicyError.
func (p Policy) Validate() error {
	switch {
	case p.KeyHeader == "":
		return policyErrorf("key_header", "key_header is empty")
	case !validHeaderName(p.KeyHeader):
		return policyErrorf("key_header", "key_header %q is not an HTTP header name (%s)", p.KeyHeader, headerNameRule)
	case p.ReplayHeader != "" && !validHeaderName(p.ReplayHeader):
		return policyErrorf("replay_header", "replay_header %q is not an HTTP header name (%s)", p.ReplayHeader, headerNameRule)
	case p.ArrivalHeader != "" && !validHeaderName(p.ArrivalHeader):
		return policyErrorf("arrival_header", "arrival_header %q is not an HTTP header name (%s)", p.ArrivalHeader, headerNameRule)
	case len(p.CreatedStatuses) == 0:
		return policyErrorf("created_statuses", "created_statuses is empty")
	}
	for _, f := range []struct {
		name string
		s    int
	}{{"in_progress_status", p.InProgressStatus}, {"mismatch_status", p.MismatchStatus}, {"missing_key_status", p.MissingKeyStatus}, {"invalid_key_status", p.InvalidKeyStatus}} {
		if f.s != 0 && (f.s < 100 || f.s > 599) {
			return policyErrorf(f.name, "%s %d is not an HTTP status: use 100 to 599, or 0 for none", f.name, f.s)
		}
	}
	for _, s := range p.CreatedStatuses {
		if s < 200 || s > 299 {
			return policyErrorf("created_statuses", "created status %d is not a 2xx", s)
		}
	}
	for _, s := range p.AcceptedStatuses {
		if s < 200 || s > 299 {
			return policyErrorf("accepted_statuses", "accepted status %d is not a 2xx", s)
		}
	}
	for _, s := range p.InProgressStatuses {
		if s < 100 || s > 599 {
			return policyErrorf("in_progress_statuses", "in_progress_statuses: %d is not an HTTP status", s)
		}
		if p.Replay(s) {
			return policyErrorf("in_progress_statuses", "in_progress_statuses: %d is also a success status, and a reply cannot be both", s)
		}
	}
	switch {
	case p.StatusPointer == "" && (len(p.StatusDone) > 0 || len(p.StatusFailed) > 0 || p.StatusURLPointer != ""):
		return policyErrorf("status_pointer", "status_pointer is empty: give the JSON pointer of the state in the status monitor's answer (such as /status) for status_done, status_failed or status_url_pointer to mean anything")
	case p.StatusPointer != "" && len(p.StatusDone) == 0:
		return policyErrorf("status_done", "status_done is empty: give the states that mean an accepted operation finished, such as [succeeded]")
	case p.StatusPointer != "" && len(p.AcceptedStatuses) == 0:
		return policyErrorf("accepted_statuses", "accepted_statuses is empty: status_pointer reads the status monitor of an accepted (202) reply")
	}
	for _, d := range p.StatusDone {
		if slices.Contains(p.StatusFailed, d) {
			return policyErrorf("status_failed", "status_failed: %q is also in status_done, and an operation cannot be both", d)
		}
	}
	switch p.KeySyntax {
	case "", KeySyntaxRemark, KeySyntaxRequired:
	default:
		return policyErrorf("key_syntax", "key_syntax %q is neither %s nor %s", p.KeySyntax, KeySyntaxRequired, KeySyntaxRemark)
	}
	if len(p.InProgressStatuses) > 0 && !slices.Contains(p.InProgressStatuses, p.InProgressStatus) {
		return policyErrorf("in_progress_statuses", "in_progress_statuses %v does not hold in_progress_status %d: list every in-progress status, the main one first",
			p.InProgressStatuses, p.InProgressStatus)
	}
	return nil
}
