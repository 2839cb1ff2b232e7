package config_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Why a check was skipped names the settings that would make it apply in
// each front end's words: the command's flags, a suite's keys. Where a
// front end has no word, Go's shows ("set Powers"): none may be left.
func TestSkipReasonsAreSaidInEachFrontEndsWords(t *testing.T) {
	p := idemcheck.Webhook()
	p.MismatchStatus, p.MissingKeyStatus, p.KeyPointer = 0, 0, ""
	e := scenarios.Endpoint{Body: idemcheck.MustTemplate(`text`)}
	goWords := regexp.MustCompile(`set (Powers|Endpoint\.|Policy\.|InvalidBody|Tenants|Sign)`)
	for name, words := range map[string]map[idemcheck.Field]idemcheck.Word{"flags": config.FlagWords, "suite": suite.Words} {
		_, plan, err := scenarios.Plan(scenarios.Names(), scenarios.Defaults, p, e, nil, words)
		require.NoError(t, err)
		skipped := 0
		for _, pc := range plan {
			if pc.Skip != "" {
				skipped++
				assert.NotRegexp(t, goWords, pc.Skip, "%s: %s", name, pc.Name)
			}
		}
		assert.Greater(t, skipped, 8, name)
		_, plan, err = scenarios.Plan(scenarios.Names(), scenarios.Defaults, p, e, nil, nil)
		require.NoError(t, err)
		var all string
		for _, pc := range plan {
			all += pc.Skip
		}
		assert.Contains(t, all, "set InvalidBody", "Go's words without a front end's")
	}
	assert.Equal(t, "--lease, or lease: in the policy", config.FlagWords[config.PolicyField("lease")].Set)
}
