package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

var estimateExample = []string{"estimate", "--requests-per-day", "20,000", "--timeout-rate", "0.2%",
	"--succeeded-share", "50%", "--value", "40", "--layers", "5", "--tries", "3"}

func TestEstimatePrintsTheContractExample(t *testing.T) {
	code, out, errOut := cli(t, estimateExample...)
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	assert.Empty(t, errOut)
	for _, want := range []string{
		"20,000 mutating requests a day, 0.2% time out, 50% of those had succeeded",
		"20 a day, 600 a month (30 days)",
		"24,000 a month (600 duplicates at 40 each)",
		"1,200 customers a month get no answer, 600 of them charged anyway",
		"20 MB: 20,000 keys (20,000 requests a day, kept 24h) at 1,000 bytes each",
		"3^5 = 243",
	} {
		assert.Contains(t, out, want)
	}
}

// --late-duplicate-rate adds the late duplicates a soak measured as one
// more source of duplicates.
func TestEstimateTakesLateDuplicates(t *testing.T) {
	code, out, errOut := cli(t, append(estimateExample, "--late-duplicate-rate", "0.1%")...)
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	assert.Contains(t, out, "50% of those had succeeded, 0.1% done again after the reply")
	assert.Contains(t, out, "40 a day, 1,200 a month (30 days): 20 a day timeouts that had succeeded, retried and done again, 20 a day done again after the reply")
}

func TestEstimateJSONMatchesTheText(t *testing.T) {
	// Shares as fractions give the same figures as percentages.
	code, out, errOut := cli(t, "estimate", "--requests-per-day", "20000", "--timeout-rate", "0.002",
		"--succeeded-share", "0.5", "--value", "40", "--window", "1d", "--json")
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.InDelta(t, 20, got["duplicates_per_day"], 1e-9)
	assert.InDelta(t, 600, got["duplicates_per_month"], 1e-9)
	assert.InDelta(t, 24000, got["cost_per_month"], 1e-9)
	assert.InDelta(t, 1200, got["unanswered_per_month"], 1e-9)
	assert.InDelta(t, 600, got["charged_anyway_per_month"], 1e-9)
	assert.InDelta(t, 20000, got["stored_keys"], 1e-9)
	assert.InDelta(t, 20e6, got["key_store_bytes"], 1e-6)
	assert.NotContains(t, got, "amplification", "no --layers, no amplification")
}

func TestEstimateBadInput(t *testing.T) {
	base := func(drop string, extra ...string) []string {
		args := []string{"estimate"}
		for i := 1; i < len(estimateExample); i += 2 {
			if estimateExample[i] != drop {
				args = append(args, estimateExample[i], estimateExample[i+1])
			}
		}
		return append(args, extra...)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no requests", base("--requests-per-day"), "--requests-per-day is required"},
		{"zero requests", base("", "--requests-per-day", "0"), `--requests-per-day "0" is out of range: use a number from 1 to`},
		{"requests not a number", base("", "--requests-per-day", "lots"), `--requests-per-day "lots" is out of range`},
		{"no timeout rate", base("--timeout-rate"), "--timeout-rate is required: a share from 0 to 1 or a percentage"},
		{"timeout rate above one", base("", "--timeout-rate", "2"), `--timeout-rate "2" is out of range: use 0 to 1, or 0% to 100%`},
		{"timeout rate above 100%", base("", "--timeout-rate", "150%"), `--timeout-rate "150%" is out of range`},
		{"negative share", base("", "--succeeded-share", "-0.5"), `--succeeded-share "-0.5" is out of range`},
		{"no succeeded share", base("--succeeded-share"), "--succeeded-share is required"},
		{"NaN share", base("", "--succeeded-share", "NaN"), `--succeeded-share "NaN" is out of range`},
		{"late duplicate rate above one", base("", "--late-duplicate-rate", "2"), `--late-duplicate-rate "2" is out of range: use 0 to 1, or 0% to 100%`},
		{"negative value", base("", "--value", "-40"), `--value "-40" is out of range: use a number of 0 or more`},
		{"zero key bytes", base("", "--key-bytes", "0"), "--key-bytes 0 is out of range: use 1 to"},
		{"bad window", base("", "--window", "a day"), `--window "a day" is out of range: use a Go duration above 0`},
		{"zero window", base("", "--window", "0s"), `--window "0s" is out of range`},
		{"window over a year", base("", "--window", "400d"), `--window "400d" is out of range`},
		{"layers without tries", base("--tries"), "--layers goes with --tries or --calls-per-intent"},
		{"calls per intent below one", base("", "--calls-per-intent", "0.5"), "--calls-per-intent 0.5 is out of range: use 1 to 10"},
		{"too many layers", base("", "--layers", "11"), "--layers 11 is out of range: use 1 to 10"},
		{"zero tries", base("", "--tries", "0"), "--tries 0 is out of range: use 1 to 10"},
		{"layers not a number", base("", "--layers", "five"), `invalid value "five" for flag -layers`},
		{"stray argument", base("", "extra"), `estimate: unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := cli(t, c.args...)
			assert.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
			assert.Empty(t, out, "nothing printed on bad input")
		})
	}
}

// The amplification a certification measured stands in for --tries.
func TestEstimateTakesTheMeasuredAmplification(t *testing.T) {
	code, out, errOut := cli(t, "estimate", "--requests-per-day", "20000", "--timeout-rate", "0.2%", "--succeeded-share", "50%",
		"--layers", "5", "--calls-per-intent", "1.5")
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	assert.Contains(t, out, "measured             1.5^5 = 7.6 calls reach the bottom layer for one client intent")
	code, out, errOut = cli(t, "estimate", "--requests-per-day", "20000", "--timeout-rate", "0.2%", "--succeeded-share", "50%", "--calls-per-intent", "2")
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	assert.Contains(t, out, "measured             2 provider calls per client intent")
}

func TestEstimateHelpExitsZero(t *testing.T) {
	code, out, _ := cli(t, "estimate", "-h")
	assert.Equal(t, idemcheck.ExitHeld, code)
	assert.Contains(t, out, "-requests-per-day N")
}
