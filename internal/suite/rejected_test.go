package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvalidBodyAndKeyRules(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`
target: {url: "http://127.0.0.1:1"}
endpoints:
  - path: /a
    body: {customerId: "{{intent}}", totalCents: 4000}
    invalid_body: {customerId: "{{intent}}", totalCents: -1}
    policy: {preset: stripe, save_rejected: true, invalid_key_status: 422}
  - path: /b
`), env(nil))
	require.NoError(t, err)
	e := s.Endpoints[0]
	require.NotNil(t, e.Endpoint.InvalidBody)
	assert.JSONEq(t, `{"customerId":"ic-1","totalCents":-1}`, e.Endpoint.InvalidBody.Fill(in))
	assert.True(t, e.Policy.SaveRejected)
	assert.Equal(t, 422, e.Policy.InvalidKeyStatus)
	assert.Nil(t, s.Endpoints[1].Endpoint.InvalidBody)
	assert.False(t, s.Endpoints[1].Policy.SaveRejected, "the IETF default saves no rejection")
	assert.Equal(t, 400, s.Endpoints[1].Policy.InvalidKeyStatus)

	_, err = Parse("s.yaml", []byte("endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    policy: {invalid_key_status: 1000}\n"), env(nil))
	assert.ErrorContains(t, err, "endpoints[0].policy.invalid_key_status")
}
