package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func TestBreakTypes(t *testing.T) {
	got, ok := BreakTypes(`{"customerId":"ic-1","totalCents":4000,"gift":true,"items":[1],"meta":{"a":1}}`)
	require.True(t, ok)
	assert.Equal(t, `{"customerId":-1,"totalCents":"not-a-number","gift":"not-a-literal","items":"not-a-structure","meta":"not-a-structure"}`, got)
	for _, body := range []string{`{}`, `[1]`, `text`, ``} {
		_, ok := BreakTypes(body)
		assert.False(t, ok, body)
	}
}

func TestKeyShapes(t *testing.T) {
	k := "8e03978e-40d5-43e8-bc93-6894a57f9324"
	assert.Len(t, OverlongKey(k), idemcheck.MaxKeyLen+1)
	assert.True(t, strings.HasPrefix(OverlongKey(k), k))
	assert.Equal(t, k+","+k+"-2", ListKey(k))
	a, b := LongKey(k, 'a'), LongKey(k, 'b')
	assert.Len(t, a, idemcheck.LongKeyLen)
	assert.Len(t, b, idemcheck.LongKeyLen)
	assert.Equal(t, a[:idemcheck.LongKeyLen-1], b[:idemcheck.LongKeyLen-1], "they differ in their last character only")
	assert.NotEqual(t, a, b)
	for _, key := range []string{OverlongKey(k), a, b} {
		for _, r := range key {
			assert.True(t, r > ' ' && r < 0x7f && r != ',' && r != '"', "printable, no comma: %q", r)
		}
	}
}

func TestPlanNewChecks(t *testing.T) {
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`)}
	names := []string{idemcheck.CheckCorrectedRetry, idemcheck.CheckKeySyntax}
	scs, plan, err := Plan(names, Defaults, idemcheck.IETF(), e, nil, nil)
	require.NoError(t, err)
	for _, pc := range plan {
		assert.Empty(t, pc.Skip, "they need no powers: %s", pc.Name)
	}
	require.Len(t, scs, 3)
	assert.Equal(t, idemcheck.InvalidBody, scs[0].Steps[0].Variant)
	assert.Equal(t, idemcheck.Corrected, scs[0].Steps[1].Variant)

	_, plan, err = Plan(names, Defaults, idemcheck.Webhook(), e, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, plan[0].Skip, "key_pointer")
	assert.Contains(t, plan[1].Skip, "key_pointer")

	plain := Endpoint{Body: idemcheck.MustTemplate(`text`)}
	_, plan, err = Plan(names, Defaults, idemcheck.IETF(), plain, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, plan[0].Skip, "(set InvalidBody)")
	given := idemcheck.MustTemplate(`oops`)
	plain.InvalidBody = &given
	_, plan, err = Plan(names, Defaults, idemcheck.IETF(), plain, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, plan[0].Skip)
}
