package idemcheck

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPresetsOnRejectedRequestsAndKeySyntax(t *testing.T) {
	assert.False(t, Stripe().SaveRejected, "Stripe saves nothing when validation fails")
	assert.False(t, IETF().SaveRejected)
	assert.True(t, GoFiber().SaveRejected)
	assert.Equal(t, 400, IETF().InvalidKeyStatus)
	assert.Equal(t, 400, Stripe().InvalidKeyStatus)
	assert.Zero(t, Webhook().InvalidKeyStatus, "the key is in the body")
	assert.Zero(t, GoFiber().InvalidKeyStatus, "Fiber answers a malformed key 500: no promise")

	p := IETF()
	p.InvalidKeyStatus = 40
	assert.ErrorContains(t, p.Validate(), "invalid_key_status 40")

	b, err := json.Marshal(GoFiber())
	require.NoError(t, err)
	assert.Contains(t, string(b), `"save_rejected":true`)
	assert.NotContains(t, string(b), `invalid_key_status`)
	assert.True(t, EmptyKey.MalformedKey() && OverlongKey.MalformedKey() && ListKey.MalformedKey())
	assert.False(t, LongKey.MalformedKey() || InvalidBody.SameRequest() || Corrected.SameRequest())
}
