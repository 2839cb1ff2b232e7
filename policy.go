package idemcheck

import (
	"fmt"
	"slices"
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
	// attempt still runs (409 in the IETF draft).
	InProgressStatus int `json:"in_progress_status"`
	// MismatchStatus answers a reused key with another request (422 in the
	// IETF draft, 400 at some providers).
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
	// ResourceID is the JSON pointer of the created resource's id in a
	// success body. Empty means detect it ("/id", then a top-level member
	// ending in "Id" or "_id"). Two success replies with different ids
	// describe two resources; with the same id, one resource told twice.
	ResourceID string `json:"resource_id,omitempty"`
}

// IETF is the policy of the IETF Idempotency-Key draft, idemcheck's default.
func IETF() Policy {
	return Policy{
		KeyHeader:        "Idempotency-Key",
		CreatedStatuses:  []int{200, 201, 202},
		InProgressStatus: 409,
		MismatchStatus:   422,
		MissingKeyStatus: 400,
		ReplayErrors:     true,
		ReplayHeader:     "",
	}
}

// Created reports whether status is one of the policy's success statuses.
func (p Policy) Created(status int) bool { return slices.Contains(p.CreatedStatuses, status) }

// Replay reports whether status may answer a replay of a success.
func (p Policy) Replay(status int) bool {
	return p.Created(status) || slices.Contains(p.ReplayStatuses, status)
}

// Validate says what is wrong with a policy, naming the field.
func (p Policy) Validate() error {
	switch {
	case p.KeyHeader == "":
		return fmt.Errorf("policy: key_header is empty")
	case len(p.CreatedStatuses) == 0:
		return fmt.Errorf("policy: created_statuses is empty")
	case p.InProgressStatus < 100 || p.InProgressStatus > 599:
		return fmt.Errorf("policy: in_progress_status %d is not an HTTP status", p.InProgressStatus)
	case p.MismatchStatus < 100 || p.MismatchStatus > 599:
		return fmt.Errorf("policy: mismatch_status %d is not an HTTP status", p.MismatchStatus)
	}
	for _, s := range p.CreatedStatuses {
		if s < 200 || s > 299 {
			return fmt.Errorf("policy: created status %d is not a 2xx", s)
		}
	}
	return nil
}
