package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Signing: the settings go together, the secret is never quoted, and a
// signed description hides its secret and signature header.
func TestSigningRules(t *testing.T) {
	for _, c := range []struct {
		set  func(*config.Spec)
		want string
	}{
		{func(s *config.Spec) { s.Sign = "paypal"; s.SignSecret = "s3cret-value" }, `--sign: unknown signing scheme "paypal" (known: github, shopify, slack, standard-webhooks, stripe)`},
		{func(s *config.Spec) { s.Sign = "stripe" }, "--sign-secret is missing: stripe signs with a secret"},
		{func(s *config.Spec) { s.SignSkew = -time.Hour }, "--sign-skew goes with --sign, the signing scheme"},
		{func(s *config.Spec) { s.SignSecret = "s3cret-value" }, "--sign-secret goes with --sign"},
		{func(s *config.Spec) { s.Sign, s.SignSecret = "standard-webhooks", "whsec_s3cret-value!" }, "--sign-secret: a standard-webhooks secret is whsec_ followed by its key in base64"},
		{func(s *config.Spec) { s.Sign, s.SignSecret, s.SignHeader = "github", "s3cret-value", "X Sig" }, `--sign-header "X Sig" is not an HTTP header name`},
		{func(s *config.Spec) { s.Body = `{"a":"{{body}}"}` }, "--body uses {{body}}, the body itself"},
		{func(s *config.Spec) {
			s.Headers = []config.Header{{Name: "X-Sig", Value: `{{hmac_sha256_hex "s3cret-value"}}`}}
		}, "--header X-Sig: hmac_sha256_hex at byte 2 takes 2 arguments, got 1"},
	} {
		s := spec()
		c.set(&s)
		_, err := config.Build(s)
		require.Error(t, err, c.want)
		var fe *idemcheck.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Contains(t, fe.Text(config.FlagWords), c.want)
		assert.NotContains(t, err.Error(), "s3cret-value")
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	}

	s := spec()
	s.Sign, s.SignSecret, s.SignSkew = scenarios.SignStandardWebhooks, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", -10*time.Minute
	b, err := config.Build(s)
	require.NoError(t, err)
	require.NotNil(t, b.Config.Endpoint.Sign)
	assert.Equal(t, -10*time.Minute, b.Config.Endpoint.Sign.Skew)
	assert.Contains(t, b.Config.Secrets, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	assert.Contains(t, b.Config.Secrets, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	assert.Contains(t, b.Config.Redact, "webhook-signature")
}

// A suite signs with a sign: mapping, its secret from the environment.
func TestSigningInSuite(t *testing.T) {
	env := func(name string) (string, bool) { return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", name == "WH_SECRET" }
	const head = "target: {url: 'http://127.0.0.1:8080'}\nendpoints:\n  - path: /events\n"
	s, err := suite.Parse("s.yaml", []byte(head+"    sign: {scheme: standard-webhooks, secret: '${WH_SECRET}', skew: -10m}\n"), env)
	require.NoError(t, err)
	g := s.Endpoints[0].Endpoint.Sign
	require.NotNil(t, g)
	assert.Equal(t, scenarios.Signing{Scheme: "standard-webhooks", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Skew: -10 * time.Minute}, *g)
	assert.Contains(t, s.Secrets, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	for yaml, want := range map[string]string{
		"    sign: {scheme: stripe, secret: literal-secret}\n":             "s.yaml:4: endpoints[0].sign.secret: the secret comes from the environment: write '${NAME}'",
		"    sign: {scheme: paypal, secret: '${WH_SECRET}'}\n":             `s.yaml:4: endpoints[0].sign.scheme: unknown signing scheme "paypal"`,
		"    sign: {secret: '${WH_SECRET}'}\n":                             "endpoints[0].sign.scheme: missing: the signing scheme",
		"    sign: {scheme: stripe, secret: '${WH_SECRET}', skew: soon}\n": `endpoints[0].sign.skew: expected a duration such as -10m, got "soon"`,
	} {
		_, err := suite.Parse("s.yaml", []byte(head+yaml), env)
		require.Error(t, err, yaml)
		assert.Contains(t, err.Error(), want, yaml)
		assert.NotContains(t, err.Error(), "literal-secret")
	}
}

// idemchecktest says the signing fields as Target's.
func TestSigningInGoWords(t *testing.T) {
	_, err := idemchecktest.Check(context.Background(), idemchecktest.Target{URL: "http://127.0.0.1:1", Path: "/events",
		Sign: &scenarios.Signing{Scheme: "github"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "idemchecktest: Sign.Secret is missing: github signs with a secret")
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
}

// A policy file takes the same sign: block, read beside the policy (the
// policy holds no secret), with what ${NAME} expanded to among its
// secrets. A suite whose policy is such a file signs its endpoints so; an
// endpoint's own sign: replaces the file's, and an endpoint's own preset
// replaces the policy and its signing.
func TestSigningInAPolicyFile(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	env := func(name string) (string, bool) { return secret, name == "WH_SECRET" }
	dir := t.TempDir()
	file := filepath.Join(dir, "webhook-policy.yaml")
	doc := "preset: webhook\nmismatch_status: 0\nsign: {scheme: slack, secret: '${WH_SECRET}', header: X-Sig, skew: -1m}\n"
	require.NoError(t, os.WriteFile(file, []byte(doc), 0o600))
	pf, err := suite.ReadPolicyFile(file, []byte(doc), env)
	require.NoError(t, err)
	assert.Equal(t, idemcheck.Webhook(), pf.Policy)
	assert.Equal(t, &suite.Signing{Scheme: "slack", Secret: secret, Header: "X-Sig", Skew: -time.Minute}, pf.Sign)
	assert.Contains(t, pf.Secrets, secret)
	pf, err = suite.ReadPolicyFile(file, []byte("preset: webhook\n"), env)
	require.NoError(t, err)
	assert.Nil(t, pf.Sign)

	s, err := suite.Parse(filepath.Join(dir, "s.yaml"), []byte(`target: {url: 'http://127.0.0.1:8080'}
policy: webhook-policy.yaml
endpoints:
  - path: /slack
  - path: /github
    sign: {scheme: github, secret: '${WH_SECRET}'}
  - path: /orders
    policy: ietf
  - path: /tuned
    policy: {mismatch_status: 422}
`), env)
	require.NoError(t, err)
	assert.Contains(t, s.Secrets, secret, "the policy file's secret is hidden in the suite's run")
	slack := scenarios.Signing{Scheme: "slack", Secret: secret, Header: "X-Sig", Skew: -time.Minute}
	for i, want := range []*scenarios.Signing{&slack, {Scheme: "github", Secret: secret}, nil, &slack} {
		assert.Equal(t, want, s.Endpoints[i].Endpoint.Sign, s.Endpoints[i].Name)
	}
	assert.Equal(t, 422, s.Endpoints[3].Policy.MismatchStatus)

	// A sign: block is the policy file's, not a suite's inline policy's.
	_, err = suite.Parse("s.yaml", []byte("target: {url: 'http://127.0.0.1:8080'}\npolicy: {preset: webhook, sign: {scheme: github, secret: '${WH_SECRET}'}}\nendpoints: [{path: /a}]\n"), env)
	assert.ErrorContains(t, err, "s.yaml:2: policy.sign: unknown field")

	// Its errors name the file, the line and the field, as a suite's do,
	// and never quote the secret.
	for doc, want := range map[string]string{
		"sign: {scheme: paypal, secret: '${WH_SECRET}'}\n":             `p.yaml:1: sign.scheme: unknown signing scheme "paypal"`,
		"preset: stripe\nsign:\n  scheme: stripe\n  secret: literal\n": "p.yaml:4: sign.secret: the secret comes from the environment: write '${NAME}'",
		"sign: {scheme: github}\n":                                     "p.yaml:1: sign.secret is missing: github signs with a secret",
		"sign: {scheme: stripe, secret: '${WH_SECRET}', skew: soon}\n": `p.yaml:1: sign.skew: expected a duration such as -10m, got "soon"`,
		"sign: stripe\n": "p.yaml:1: sign: expected a mapping of scheme, secret, header, skew",
	} {
		_, err := suite.ReadPolicyFile("p.yaml", []byte(doc), env)
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), want, doc)
		assert.NotContains(t, err.Error(), "literal", doc)
		assert.NotContains(t, err.Error(), "MfKQ9r8", doc)
	}
	_, err = suite.ReadPolicyFile("p.yaml", []byte("sign: {scheme: standard-webhooks, secret: '${BAD}'}\n"),
		func(string) (string, bool) { return "whsec_n0t-base64!", true })
	assert.ErrorContains(t, err, "p.yaml:1: sign.secret: a standard-webhooks secret is whsec_ followed by its key in base64")
	assert.NotContains(t, err.Error(), "n0t-base64")
}
