package idemcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTemplate(t *testing.T) {
	in := Intent{ID: "ic-1", Key: "k-1", Seq: 7}
	tp, err := ParseTemplate(`{"customerId":"{{intent}}","n":{{ seq }},"k":"{{key}}"}`)
	require.NoError(t, err)
	assert.Equal(t, `{"customerId":"ic-1","n":7,"k":"k-1"}`, tp.Fill(in))
	assert.True(t, tp.Uses("intent"))
	assert.False(t, MustTemplate("plain").Uses("key"))
	assert.Equal(t, "plain", MustTemplate("plain").Fill(in))

	_, err = ParseTemplate(`{"a":"{{uuid}}"}`)
	assert.EqualError(t, err, "unknown template name {{uuid}} (known: {{key}}, {{intent}}, {{seq}})")
	_, err = ParseTemplate(`{"a":"{{intent"}`)
	assert.EqualError(t, err, "unclosed {{ at offset 6")
}
