package idemcheck

import "time"

// ProviderCall is one call the target made to a downstream provider double
// (a payment provider idemcheck served on loopback and handed to the
// target by its base URL). The double behaves as a careful provider does:
// a POST creates a charge, a POST under a key it has seen with the same
// body replays the saved answer, and one with another body is refused. A
// call is effective when it created a charge: a keyless POST always does.
type ProviderCall struct {
	// Provider names the double: the environment variable that handed the
	// target its URL (PROVIDER_URL by default).
	Provider string `json:"provider"`
	// Seq numbers the provider's calls from 1, in the order they arrived.
	Seq    int    `json:"seq"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Key is the idempotency key the call carried; empty when it carried
	// none.
	Key  string `json:"key,omitempty"`
	Body string `json:"body,omitempty"`
	// Conn is the target's end of the connection the call came on
	// (host:port): calls on one connection came from one client of it.
	Conn  string    `json:"conn"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Status is what the double answered, 0 when the reply was cut on
	// purpose (Fault) before it was sent.
	Status int `json:"status,omitempty"`
	// Charge is the id of the charge the call created or replayed.
	Charge string `json:"charge,omitempty"`
	// Created: the call created a new charge (an effect at the provider),
	// rather than replaying one or being refused.
	Created bool `json:"created,omitempty"`
	// Replayed: the call's key was known with the same body, and the
	// saved answer was sent again.
	Replayed bool `json:"replayed,omitempty"`
	// Fault is the fault the double applied to the call (a ProviderFault
	// value's name), empty for none.
	Fault string `json:"fault,omitempty"`
	// Mapped says how the call was tied to its intent: MappedByID (the
	// intent's id appeared in the call) or MappedByWindow (it arrived
	// while the intent's round ran and named no intent).
	Mapped string `json:"mapped,omitempty"`
}

// How a provider call was tied to an intent (ProviderCall.Mapped).
const (
	// MappedByID: the call carried the intent's id (the target forwarded
	// it, in the charge's metadata, say).
	MappedByID = "id"
	// MappedByWindow: the call named no intent and arrived while the
	// intent's round ran; rounds run one after another, so the round is
	// the only client traffic it can stem from, unless the target calls
	// the provider later on its own (a queue, a retry job).
	MappedByWindow = "window"
)

// Effective reports whether the call created a charge.
func (c ProviderCall) Effective() bool { return c.Created }

// DefaultProviderEnv is the environment variable that hands a started
// target the base URL of its provider double, unless told otherwise.
const DefaultProviderEnv = "PROVIDER_URL"

// Did says what the provider did with the call: "charged ID", "replayed
// ID", "no answer", or otherwise the given words (how a refusal is said).
func (c ProviderCall) Did(refused string) string {
	switch {
	case c.Created:
		return "charged " + c.Charge
	case c.Replayed:
		return "replayed " + c.Charge
	case c.Status == 0:
		return "no answer"
	}
	return refused
}
