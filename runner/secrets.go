package runner

import (
	"net/http"

	"github.com/idemcheck/idemcheck"
)

// Redacted replaces a secret in every history and report
// (idemcheck.Redacted).
const Redacted = idemcheck.Redacted

// secret returns the run's redactor (idemcheck.Redactor): the one the
// runner was given, shared with the caller's outputs, or a new one, taught
// the runner's credential headers, secret values, fields and query names,
// and told to leave the policy's key header in clear. The session teaches
// it what it sends and receives: a credential header's value, a secret
// query value or body field, a Set-Cookie.
func (s *session) secret() *idemcheck.Redactor {
	s.secretsOnce.Do(func() {
		red := s.Redactor
		if red == nil {
			red = idemcheck.NewRedactor()
		}
		red.ExemptHeader(s.Policy.KeyHeader)
		red.AddHeader(s.Redact...)
		red.AddSecret(s.Secrets...)
		red.AddField(s.RedactFields...)
		red.AddQuery(s.RedactQuery...)
		for _, t := range s.Endpoint.Tenants {
			red.AddHeader(t.Name)
		}
		// A signature, and a header computed with an HMAC, is a
		// credential: hidden by name, and learned as sent.
		for _, h := range s.Endpoint.Header {
			if h.Value.Uses("hmac_sha256_hex") || h.Value.Uses("hmac_sha256_base64") {
				red.AddHeader(h.Name)
			}
		}
		if g := s.Endpoint.Sign; g != nil {
			red.AddHeader(g.SignatureHeader())
			red.AddSecret(g.Secrets()...)
		}
		s.secrets = red
	})
	return s.secrets
}

// redact returns h with its secrets hidden (idemcheck.Redactor.Header).
func (s *session) redact(h http.Header) http.Header { return s.secret().Header(h) }

// scrub hides every known secret in v.
func (s *session) scrub(v string) string { return s.secret().String(v) }
