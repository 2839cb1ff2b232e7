package scenarios

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Endpoint is the request every intent sends, with holes filled per intent.
type Endpoint struct {
	// Base is the target's scheme and authority, as the user wrote it.
	Base   *url.URL
	Method string
	Path   idemcheck.Template
	Header []Header
	Body   idemcheck.Template
	// MismatchBody, when set, is the different body payload-mismatch sends
	// under the original's key; by default the body is changed by
	// MutateBody.
	MismatchBody *idemcheck.Template
	// Other is a second endpoint for cross-endpoint; nil skips that check.
	Other *OtherEndpoint
	// Tenants, when two are given, are the credentials of two clients
	// (such as two Authorization headers): cross-tenant sends one key with
	// each.
	Tenants []Header
	// FailingBody, when set, is a body the target answers with an error
	// (a declined card, say): failed-attempt then also checks that the
	// error is saved and replayed where the policy says so.
	FailingBody *idemcheck.Template
	// InvalidBody, when set, is a body the target must reject before doing
	// any work (a validation error): corrected-retry sends it, then the
	// endpoint's body under the same key. By default it is derived from
	// the body by BreakTypes.
	InvalidBody *idemcheck.Template
	// Sign, when set, signs every attempt as a webhook sender does.
	Sign *Signing
}

// Clock is the time computed parts are taken from: now, shifted by the
// signing skew.
func (e Endpoint) Clock() time.Time {
	if e.Sign != nil {
		return time.Now().Add(e.Sign.Skew)
	}
	return time.Now()
}

// InvalidBodyFor is the body corrected-retry sends first for in: the endpoint's
// invalid body, else its body with every member's type broken.
func (e Endpoint) InvalidBodyFor(in idemcheck.Intent) string {
	if e.InvalidBody != nil {
		return e.InvalidBody.Fill(in)
	}
	b, _ := BreakTypes(e.Body.Fill(in))
	return b
}

// OtherEndpoint is where cross-endpoint sends an intent's key a second time.
type OtherEndpoint struct {
	Method string
	Path   idemcheck.Template
	// Body, when nil, is the original endpoint's body.
	Body *idemcheck.Template
}

// JSONBody reports whether the endpoint's body, filled, is a JSON object.
func (e Endpoint) JSONBody() bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(e.Body.Fill(idemcheck.Intent{ID: "ic-x-1", Key: "k", Seq: 1})), &m) == nil
}

// Header is one request header whose value may hold template holes.
type Header struct {
	Name  string
	Value idemcheck.Template
}
