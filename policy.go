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
	// ReplayStatuses are the statuses a replay of a success may carry, beside
	// the original status itself.
	ReplayStatuses []int `json:"replay_statuses,omitempty"`
	// InProgressStatus answers a duplicate that arrives while the first
	// attempt still runs (409 in the IETF draft). 0 means a duplicate waits
	// for the first attempt and is answered with its replay.
	InProgressStatus int `json:"in_progress_status"`
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
// (a longer one is a 400).
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
		KeyHeader:       "X-Idempotency-Key",
		CreatedStatuses: []int{200, 201, 202},
		ReplayErrors:    true,
		SaveRejected:    true,
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

// Created reports whether status is one of the policy's success statuses.
func (p Policy) Created(status int) bool { return slices.Contains(p.CreatedStatuses, status) }

// Replay reports whether status may answer a replay of a success.
func (p Policy) Replay(status int) bool {
	return p.Created(status) || slices.Contains(p.ReplayStatuses, status)
}

// HeaderTrue reports whether a header value says yes, as a replay header
// such as Idempotent-Replayed does: "true", "?1" (a structured boolean),
// "1" or "yes", in any case.
func HeaderTrue(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "true" || v == "?1" || v == "1" || v == "yes"
}

// Validate says what is wrong with a policy, naming the field.
func (p Policy) Validate() error {
	switch {
	case p.KeyHeader == "":
		return fmt.Errorf("policy: key_header is empty")
	case len(p.CreatedStatuses) == 0:
		return fmt.Errorf("policy: created_statuses is empty")
	}
	for name, s := range map[string]int{"in_progress_status": p.InProgressStatus, "mismatch_status": p.MismatchStatus, "missing_key_status": p.MissingKeyStatus, "invalid_key_status": p.InvalidKeyStatus} {
		if s != 0 && (s < 100 || s > 599) {
			return fmt.Errorf("policy: %s %d is not an HTTP status (or 0 for none)", name, s)
		}
	}
	for _, s := range p.CreatedStatuses {
		if s < 200 || s > 299 {
			return fmt.Errorf("policy: created status %d is not a 2xx", s)
		}
	}
	return nil
}
