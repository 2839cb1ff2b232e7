package config

import (
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
)

// policyFields are the Go names of the policy's fields, by the names a
// policy file (and idemcheck.PolicyError) gives them.
var policyFields = map[string]string{
	"key_header": "KeyHeader", "created_statuses": "CreatedStatuses", "accepted_statuses": "AcceptedStatuses", "replay_statuses": "ReplayStatuses",
	"in_progress_status": "InProgressStatus", "in_progress_statuses": "InProgressStatuses", "mismatch_status": "MismatchStatus",
	"missing_key_status": "MissingKeyStatus", "replay_errors": "ReplayErrors", "replay_header": "ReplayHeader", "lease": "Lease",
	"ignore_fields": "IgnoreFields", "resource_id": "ResourceID", "key_pointer": "KeyPointer", "ack_only": "AckOnly",
	"save_rejected": "SaveRejected", "invalid_key_status": "InvalidKeyStatus", "key_syntax": "KeySyntax",
	"status_pointer": "StatusPointer", "status_done": "StatusDone", "status_failed": "StatusFailed", "status_url_pointer": "StatusURLPointer",
	"arrival_header": "ArrivalHeader",
}

// PolicyField is the Field of a policy's field by its policy-file name
// (key_header is Policy.KeyHeader).
func PolicyField(name string) idemcheck.Field {
	if g, ok := policyFields[name]; ok {
		return idemcheck.Field("Policy." + g)
	}
	return idemcheck.Field("Policy." + name)
}

// CheckPolicy checks a policy: idemcheck.Policy.Validate's rules, the JSON
// pointers it holds, and a lease that is not negative. Its error names the
// policy field as a Field (Policy.KeyHeader).
func CheckPolicy(p idemcheck.Policy) error {
	if err := p.Validate(); err != nil {
		pe, ok := err.(*idemcheck.PolicyError)
		if !ok {
			return idemcheck.Usagef("%v", err)
		}
		f := PolicyField(pe.Field)
		if rest, ok := strings.CutPrefix(pe.Msg, pe.Field); ok {
			return usage(f, "%s %s", f, strings.TrimLeft(rest, ": "))
		}
		return usage(f, "%s: %s", f, pe.Msg)
	}
	for _, ptr := range append([]string{p.ResourceID}, p.IgnoreFields...) {
		if err := assert.ValidatePointer(ptr); err != nil {
			f := idemcheck.Field("Policy.IgnoreFields")
			if ptr == p.ResourceID {
				f = "Policy.ResourceID"
			}
			return usage(f, "%s: %v", f, err)
		}
	}
	for f, ptr := range map[idemcheck.Field]string{"Policy.StatusPointer": p.StatusPointer, "Policy.StatusURLPointer": p.StatusURLPointer} {
		if ptr != "" && assert.ValidatePointer(ptr) != nil {
			return usage(f, "%s %q must be a JSON pointer such as /status", f, ptr)
		}
	}
	if p.KeyPointer != "" && assert.ValidatePointer(p.KeyPointer) != nil {
		return usage("Policy.KeyPointer", "%s %q must be a JSON pointer such as /eventId", idemcheck.Field("Policy.KeyPointer"), p.KeyPointer)
	}
	if p.Lease < 0 {
		return usage("Policy.Lease", "%s %v must not be negative: give the target's lease, such as 2s", idemcheck.Field("Policy.Lease"), p.Lease)
	}
	return nil
}
