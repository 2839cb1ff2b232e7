package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

// corrected-retry with the rejected body given by flag, and key-syntax, from
// the command line: each variant's bug fails the run; the reference holds.
func TestCertifyNewChecksFromFlags(t *testing.T) {
	invalid := []string{"--invalid-body", `{"customerId":"{{intent}}","totalCents":"lots"}`, "--rounds", "1"}
	cases := []struct {
		v     orders.Variant
		check string
		code  int
		want  string
	}{
		{orders.SavesValidationErrors, idemcheck.CheckCorrectedRetry, idemcheck.ExitAnomalies, "rejected-request-saved"},
		{orders.TruncatesKeys, idemcheck.CheckKeySyntax, idemcheck.ExitAnomalies, "over-deduplication"},
		{orders.Reference, idemcheck.CheckCorrectedRetry + "," + idemcheck.CheckKeySyntax, idemcheck.ExitHeld, "PASS     key-syntax"},
	}
	for _, c := range cases {
		t.Run(string(c.v), func(t *testing.T) {
			url, dsn := ordersAPI(t, c.v)
			code, out, errOut := cli(t, certifyArgs(url, dsn, append([]string{"--checks", c.check}, invalid...)...)...)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, c.want)
		})
	}
}

func TestInvalidBodyFlagIsATemplate(t *testing.T) {
	code, _, errOut := cli(t, "certify", "--url", "http://127.0.0.1:1", "--body", `{"a":1}`, "--invalid-body", `{"a":"{{nope}}"}`)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--invalid-body")
}
