package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// A provider fault that never fired is not a pass. The orders example
// charges the provider whose URL it finds in PROVIDER_URL; handed the
// double under another name, it never calls it, the provider half of
// failed-attempt never happens, and the check is inconclusive with the
// variable named, though its database-link rounds held. Handed the double
// where it looks, the same certification passes.
func TestProviderFaultThatNeverFiredIsInconclusive(t *testing.T) {
	for _, tc := range []struct {
		env  string
		code int
	}{{"PAYMENTS_URL", idemcheck.ExitInconclusive}, {"PROVIDER_URL", idemcheck.ExitHeld}} {
		t.Run(tc.env, func(t *testing.T) {
			code, out, errOut := cli(t, certifyCmdArgs(t, "", "--provider-env", tc.env, "--checks", "failed-attempt")...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			if tc.code == idemcheck.ExitInconclusive {
				assert.Contains(t, out, "its faults on the provider link landed in none of their 3 rounds")
				assert.Contains(t, out, "the target called no provider double while the attempt ran, though its URL was in PAYMENTS_URL")
			}
		})
	}
}
