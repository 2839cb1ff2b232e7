package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
)

// BuildSoak makes a soak's Settings as Build makes a certification's, and
// reads its faults: the cut share is cut-reply's, first; over https:// its
// default cuts nothing.
func TestBuildSoakSharesBuildsSettings(t *testing.T) {
	s := spec()
	s.Rate, s.RedactFields, s.RedactQuery = 250, []string{"/card/number"}, []string{"api_key"}
	k := config.SoakSpec{Duration: time.Second, CutShare: 0.05, Faults: []string{"reset@0.1"}, Seed: 9}
	b, err := config.BuildSoak(s, k)
	require.NoError(t, err)
	cert, err := config.Build(spec())
	require.NoError(t, err)
	c := b.Config
	assert.Equal(t, 250.0, c.Rate, "the soak's rate is its pace, not a defaulted cap")
	assert.Equal(t, cert.Config.Timeout, c.Timeout)
	assert.Equal(t, cert.Config.MaxBody, c.MaxBody)
	assert.Equal(t, cert.Config.Endpoint.Path, c.Endpoint.Path)
	assert.Equal(t, []string{"/card/number"}, c.RedactFields)
	assert.Equal(t, []string{"api_key"}, c.RedactQuery)
	require.Len(t, c.Faults, 2)
	assert.Equal(t, "cut-reply", c.Faults[0].Fault.Name)
	assert.Equal(t, 0.05, c.Faults[0].Share)
	assert.Equal(t, "reset", c.Faults[1].Fault.Name)

	s.URL = "https://127.0.0.1:8443"
	b, err = config.BuildSoak(s, config.SoakSpec{Duration: time.Second, CutShare: 0.01})
	require.NoError(t, err)
	assert.Empty(t, b.Config.Faults, "over TLS the default cut share cuts nothing")
}

// A soak's faults are refused by Field, before anything starts.
func TestBuildSoakRefusesFaultsByField(t *testing.T) {
	for _, c := range []struct {
		k     config.SoakSpec
		field idemcheck.Field
		want  string
	}{
		{config.SoakSpec{CutShare: 2}, "CutShare", "CutShare 2 is out of range: use 0 to 1"},
		{config.SoakSpec{Faults: []string{"nope"}}, "Faults[0]", `Faults[0] nope: unknown fault "nope"`},
		{config.SoakSpec{Faults: []string{"cut-reply@0.2"}, CutShare: 0.1, CutShareSet: true}, "Faults[0]", "both set the share of replies cut after commit"},
		{config.SoakSpec{Faults: []string{"db-latency:ms=5"}}, "Faults[0]", "give Command instead of URL"},
	} {
		_, err := config.BuildSoak(spec(), c.k)
		var fe *idemcheck.FieldError
		require.True(t, errors.As(err, &fe), "%v", err)
		assert.Equal(t, c.field, fe.Field)
		assert.Contains(t, err.Error(), c.want)
	}
}
