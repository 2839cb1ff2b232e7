package estimate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// contractExample is the example of contract.md's cost arithmetic.
var contractExample = Inputs{
	RequestsPerDay:    20000,
	TimeoutRate:       0.002,
	SucceededShare:    0.5,
	ValuePerDuplicate: 40,
	KeyBytes:          1000,
	Window:            24 * time.Hour,
	Layers:            5,
	Tries:             3,
}

// The contract's figures, one by one: 20,000/day x 0.2% x 50% = 20/day,
// 600/month, $24,000/month at $40, 1,200 unanswered a month of whom 600
// were charged anyway, 20 MB of keys (20,000 keys: requests per day x a
// one-day window, at 1 KB each), 3^5 = 243.
func TestComputeReproducesTheContractExample(t *testing.T) {
	require.NoError(t, Validate(contractExample))
	r := Compute(contractExample)
	const eps = 1e-9
	assert.InDelta(t, 40, r.TimeoutsPerDay, eps)
	assert.InDelta(t, 20, r.DuplicatesPerDay, eps)
	assert.InDelta(t, 600, r.DuplicatesPerMonth, eps)
	assert.InDelta(t, 24000, r.CostPerMonth, eps)
	assert.InDelta(t, 1200, r.UnansweredPerMonth, eps)
	assert.InDelta(t, 600, r.ChargedAnywayPerMonth, eps)
	assert.InDelta(t, 20000, r.StoredKeys, eps)
	assert.InDelta(t, 20e6, r.KeyStoreBytes, eps)
	assert.Equal(t, int64(243), r.Amplification)
	assert.Equal(t, contractExample, r.Inputs)
}

func TestWriteTextShowsTheContractFigures(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteText(&b, Compute(contractExample)))
	want := `20,000 mutating requests a day, 0.2% time out, 50% of those had succeeded

  duplicates           20 a day, 600 a month (30 days): timeouts that had succeeded, retried and done again
  cost                 24,000 a month (600 duplicates at 40 each)
  without retries      1,200 customers a month get no answer, 600 of them charged anyway
  key store            20 MB: 20,000 keys (20,000 requests a day, kept 24h) at 1,000 bytes each
  retry amplification  3^5 = 243 tries reach the bottom layer for one request at the top (5 layers, 3 tries each)
`
	assert.Equal(t, want, b.String())
}

func TestWriteTextLeavesOutWhatWasNotAsked(t *testing.T) {
	in := contractExample
	in.ValuePerDuplicate, in.Layers, in.Tries = 0, 0, 0
	var b strings.Builder
	require.NoError(t, WriteText(&b, Compute(in)))
	assert.NotContains(t, b.String(), "cost")
	assert.NotContains(t, b.String(), "amplification")
	assert.Contains(t, b.String(), "600 a month")
}

func TestKeyStoreScalesWithTheWindow(t *testing.T) {
	in := contractExample
	in.Window = 7 * 24 * time.Hour
	r := Compute(in)
	assert.InDelta(t, 140000, r.StoredKeys, 1e-6)
	assert.InDelta(t, 140e6, r.KeyStoreBytes, 1e-3)

	in.Window = 30 * time.Minute
	assert.InDelta(t, 20000.0/48, Compute(in).StoredKeys, 1e-9)
}

func TestNoTimeoutsNoDuplicates(t *testing.T) {
	in := contractExample
	in.TimeoutRate = 0
	r := Compute(in)
	assert.Zero(t, r.DuplicatesPerMonth)
	assert.Zero(t, r.UnansweredPerMonth)
	assert.Zero(t, r.CostPerMonth)
}

func TestValidateNamesTheInputAndItsRange(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Inputs)
		want string
	}{
		{"no traffic", func(in *Inputs) { in.RequestsPerDay = 0 }, "requests per day 0 is out of range: use 1 to"},
		{"rate above one", func(in *Inputs) { in.TimeoutRate = 2 }, "timeout rate 2 is out of range: use 0 to 1"},
		{"negative share", func(in *Inputs) { in.SucceededShare = -0.1 }, "succeeded share -0.1 is out of range"},
		{"negative value", func(in *Inputs) { in.ValuePerDuplicate = -1 }, "value per duplicate -1"},
		{"zero key bytes", func(in *Inputs) { in.KeyBytes = 0 }, "key bytes 0 is out of range"},
		{"no window", func(in *Inputs) { in.Window = 0 }, "window 0s is out of range"},
		{"window over a year", func(in *Inputs) { in.Window = MaxWindow + time.Hour }, "window"},
		{"too many layers", func(in *Inputs) { in.Layers = MaxLayers + 1 }, "layers 11 is out of range: use 1 to 10"},
		{"tries without layers", func(in *Inputs) { in.Layers = 0 }, "give both or neither"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := contractExample
			c.edit(&in)
			err := Validate(in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestAmplificationAtTheLimitsIsExact(t *testing.T) {
	in := contractExample
	in.Layers, in.Tries = MaxLayers, MaxTries
	assert.Equal(t, int64(10_000_000_000), Compute(in).Amplification)
	in.Layers, in.Tries = 1, 1
	assert.Equal(t, int64(1), Compute(in).Amplification, "one try is no amplification")
}

func TestFormatting(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.004: "0.004", 1.25: "1.3", 20: "20", 99.96: "100", 1234567: "1,234,567", -1500: "-1,500"} {
		assert.Equal(t, want, number(v), "number(%v)", v)
	}
	for v, want := range map[float64]string{0.002: "0.2%", 0.5: "50%", 1: "100%", 0.125: "12.5%"} {
		assert.Equal(t, want, percent(v), "percent(%v)", v)
	}
	for v, want := range map[float64]string{999: "999 B", 20e6: "20 MB", 20.48e6: "20.5 MB", 1.234e9: "1.23 GB"} {
		assert.Equal(t, want, size(v), "size(%v)", v)
	}
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 7 * 24 * time.Hour: "7 days", 90 * time.Minute: "1h30m0s"} {
		assert.Equal(t, want, window(d), "window(%v)", d)
	}
}

// A late duplicate (work the service did again after the reply by itself,
// a queue's job run again after its effect committed) is one more source
// of duplicates, whatever the client does: 20,000/day x 0.1% = 20 more a
// day, 40 in all, 1,200 a month, 48,000 at 40 each. What removing retries
// would leave is unchanged: it concerns the client's timeouts only.
func TestLateDuplicatesAreOneMoreSource(t *testing.T) {
	in := contractExample
	in.LateDuplicateRate = 0.001
	require.NoError(t, Validate(in))
	r := Compute(in)
	const eps = 1e-9
	assert.InDelta(t, 20, r.LateDuplicatesPerDay, eps)
	assert.InDelta(t, 40, r.DuplicatesPerDay, eps)
	assert.InDelta(t, 1200, r.DuplicatesPerMonth, eps)
	assert.InDelta(t, 48000, r.CostPerMonth, eps)
	assert.InDelta(t, 1200, r.UnansweredPerMonth, eps)
	assert.InDelta(t, 600, r.ChargedAnywayPerMonth, eps)

	var b strings.Builder
	require.NoError(t, WriteText(&b, r))
	assert.Contains(t, b.String(), "20,000 mutating requests a day, 0.2% time out, 50% of those had succeeded, 0.1% done again after the reply\n")
	assert.Contains(t, b.String(), "  duplicates           40 a day, 1,200 a month (30 days): 20 a day timeouts that had succeeded, retried and done again, "+
		"20 a day done again after the reply by the service itself (late duplicates)\n")
	assert.Contains(t, b.String(), "48,000 a month (1,200 duplicates at 40 each)")

	in.LateDuplicateRate = 1.5
	assert.ErrorContains(t, Validate(in), "late duplicate rate 1.5 is out of range: use 0 to 1")
}

// A soak's estimate takes the late duplicates it measured (its recount's
// rate) beside the share of replies it cut, and says which figure is an
// assumption and which was measured; a soak that cut no reply but found
// late duplicates still has an estimate, and one with neither has none.
func TestSoakTakesTheMeasuredLateDuplicates(t *testing.T) {
	r := idemcheck.SoakResult{Intents: 1000, Cut: 10, Rate: 100, TimeoutRate: 0.01, SucceededShare: 1,
		Recounted: 1000, LateDuplicates: 5, LateDuplicateRate: 0.005}
	est, assumes := Soak(r, 40)
	require.NotNil(t, est)
	assert.InDelta(t, 8.64e6, est.Inputs.RequestsPerDay, 1e-6)
	assert.InDelta(t, 0.005, est.Inputs.LateDuplicateRate, 1e-12)
	assert.InDelta(t, 43200, est.LateDuplicatesPerDay, 1e-6)
	assert.InDelta(t, 86400+43200, est.DuplicatesPerDay, 1e-6)
	assert.Equal(t, "1.00% of real requests time out after the server committed (the share this soak cut, not a measurement of the API); "+
		"0.50% of requests are done again after the reply (measured: 5 late duplicates in 1000 intents counted again)", assumes)

	r.Cut, r.TimeoutRate, r.SucceededShare = 0, 0, 0
	est, assumes = Soak(r, 0)
	require.NotNil(t, est, "late duplicates alone are worth reckoning with")
	assert.InDelta(t, 43200, est.DuplicatesPerDay, 1e-6)
	assert.Equal(t, "0.50% of requests are done again after the reply (measured: 5 late duplicates in 1000 intents counted again)", assumes)

	r.LateDuplicates, r.LateDuplicateRate = 0, 0
	est, assumes = Soak(r, 0)
	assert.Nil(t, est)
	assert.Empty(t, assumes)
}
