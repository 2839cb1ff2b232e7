package runner

import (
	"net/http"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Redacted replaces a secret in every history and report
// (idemcheck.Redacted).
const Redacted = idemcheck.Redacted

// secret returns the run's redactor (idemcheck.Redactor): the one the
// runner was given, shared with the caller's outputs, or a new one, taught
// what the run hides (Teach). The session teaches it what it sends and
// receives: a credential header's value, a secret query value or body
// field, a Set-Cookie.
func (s *session) secret() *idemcheck.Redactor {
	s.secretsOnce.Do(func() {
		red := s.Redactor
		if red == nil {
			red = idemcheck.NewRedactor()
		}
		Teach(red, s.Policy, s.Endpoint, s.Redact, s.Secrets, s.RedactFields, s.RedactQuery)
		s.secrets = red
	})
	return s.secrets
}

// Teach teaches red what a run of e under p hides before anything is
// sent: the credential headers named (headers), the tenants' header names,
// a header computed with an HMAC and a signature header, the secret values
// (secrets and the signing secrets), the body fields and query parameters
// named; the policy's key header stays in clear. A run's caller and its
// runner teach their shared redactor the same way.
func Teach(red *idemcheck.Redactor, p idemcheck.Policy, e scenarios.Endpoint, headers, secrets, fields, query []string) {
	red.ExemptHeader(p.KeyHeader)
	red.AddHeader(headers...)
	red.AddSecret(secrets...)
	red.AddField(fields...)
	red.AddQuery(query...)
	for _, t := range e.Tenants {
		red.AddHeader(t.Name)
	}
	// A signature, and a header computed with an HMAC, is a credential:
	// hidden by name, and learned as sent.
	for _, h := range e.Header {
		if h.Value.Uses("hmac_sha256_hex") || h.Value.Uses("hmac_sha256_base64") {
			red.AddHeader(h.Name)
		}
	}
	if g := e.Sign; g != nil {
		red.AddHeader(g.SignatureHeader())
		red.AddSecret(g.Secrets()...)
	}
}

// redact returns h with its secrets hidden (idemcheck.Redactor.Header).
func (s *session) redact(h http.Header) http.Header { return s.secret().Header(h) }

// scrub hides every known secret in v.
func (s *session) scrub(v string) string { return s.secret().String(v) }
