package config

import (
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
)

// CheckSigning checks s's signing settings alone (Sign, SignSecret,
// SignHeader, SignSkew) as Build does, for a front end that reads them
// apart from an endpoint: a policy file's sign: block. Its errors never
// quote the secret.
func CheckSigning(s Spec) error {
	_, err := s.signing()
	return err
}

// signing checks the signing settings and makes them a scenarios.Signing
// (nil without Sign). Its errors never quote the secret.
func (s Spec) signing() (*scenarios.Signing, error) {
	if s.Sign == "" {
		for _, f := range []struct {
			field idemcheck.Field
			set   bool
		}{{"SignSecret", s.SignSecret != ""}, {"SignHeader", s.SignHeader != ""}, {"SignSkew", s.SignSkew != 0}} {
			if f.set {
				return nil, usage(f.field, "%s goes with %s, the signing scheme (%s)", f.field, idemcheck.Field("Sign"), strings.Join(scenarios.SignSchemes, ", "))
			}
		}
		return nil, nil
	}
	g := &scenarios.Signing{Scheme: s.Sign, Secret: s.SignSecret, Header: s.SignHeader, Skew: s.SignSkew}
	err := g.Check()
	switch {
	case err == nil:
		return g, nil
	case s.SignSecret == "":
		return nil, usage("SignSecret", "%s is missing: %s signs with a secret (read from the environment, such as ${WEBHOOK_SECRET})", idemcheck.Field("SignSecret"), s.Sign)
	case g.Scheme == scenarios.SignStandardWebhooks && strings.Contains(err.Error(), "decode"):
		return nil, usage("SignSecret", "%s: %v", idemcheck.Field("SignSecret"), err)
	case s.SignHeader != "" && strings.Contains(err.Error(), "header"):
		return nil, usage("SignHeader", "%s %q is not an HTTP header name (%s)", idemcheck.Field("SignHeader"), s.SignHeader, headerNameRule)
	}
	return nil, usage("Sign", "%s: %v", idemcheck.Field("Sign"), err)
}
