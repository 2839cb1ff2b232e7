package bench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck/bench"
)

func TestStat(t *testing.T) {
	assert.Equal(t, "n/a", bench.Stat{}.Format("%.1f"))
	assert.Equal(t, "2.0", bench.Stat{2}.Format("%.1f"))
	assert.Equal(t, "2.0 [1.0–3.0]", bench.Stat{3, 1, 2}.Format("%.1f"))
	assert.Equal(t, "2.5 [1.0–4.0]", bench.Stat{4, 1, 2, 3}.Format("%.1f"), "an even count's median is the mean of the middle two")
	assert.Equal(t, 3.0, bench.Stat{1, 5}.Median())
	assert.Zero(t, bench.Stat{}.Median())
}
