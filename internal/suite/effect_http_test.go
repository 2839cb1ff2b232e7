package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEffectHTTP(t *testing.T) {
	const head = "target: {url: 'http://127.0.0.1:8080'}\nendpoints:\n  - path: /orders\n    body: '{\"c\":\"{{intent}}\"}'\n"
	s, err := Parse("s.yaml", []byte(head+"    effect: {http: 'GET /orders?customerId={{intent}}', count: /data}\n"), env(nil))
	require.NoError(t, err, "no database needed")
	e := s.Endpoints[0]
	require.NotNil(t, e.EffectHTTP)
	assert.Equal(t, "/orders?customerId=ic-1", e.EffectHTTP.Fill(in))
	assert.Equal(t, "/data", e.EffectCount)
	assert.Empty(t, e.EffectSQL)

	s, err = Parse("s.yaml", []byte(head+"    effect: {http: '/orders/{{intent}}/events', count: ''}\n"), env(nil))
	require.NoError(t, err, "the method may be left out; an empty pointer is the whole answer")
	assert.Equal(t, "/orders/ic-1/events", s.Endpoints[0].EffectHTTP.Fill(in))

	for _, c := range []struct{ effect, want string }{
		{"{http: 'DELETE /orders?c={{intent}}', count: /data}", `s.yaml:5: endpoints[0].effect.http: "DELETE": the effect read-back only sends GET`},
		{"{http: 'GET /orders', count: /data}", "has no {{intent}}"},
		{"{http: 'GET /orders?c={{intent}}'}", "endpoints[0].effect.http needs count: the JSON pointer"},
		{"{http: 'GET /orders?c={{intent}}', count: data}", "must start with /"},
		{"{http: 'GET /o?c={{intent}}', count: /d, sql: 'SELECT 1'}", "give sql or http, not both"},
		{"{sql: 'SELECT 1', count: /d}", "count goes with http"},
		{"{http: 'GET /o?c={{nope}}', count: /d}", "unknown template function {{nope}}"},
	} {
		_, err := Parse("s.yaml", []byte(head+"    effect: "+c.effect+"\n"), env(nil))
		require.Error(t, err, c.effect)
		assert.Contains(t, err.Error(), c.want)
	}
}
