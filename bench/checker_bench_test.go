package bench_test

import (
	"fmt"
	"testing"

	"github.com/idemcheck/idemcheck/assert"
)

// BenchmarkCheck runs the checker over whole histories. Its work is per
// intent (at most quadratic in the attempts of one intent, a constant
// burst of 32 here), so ns/attempt must stay roughly flat from 10k to 1M.
func BenchmarkCheck(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("attempts=%d", n), func(b *testing.B) {
			h := history(b, n)
			want := len(h.Intents) / 10 * 2 // multiple-created and duplicate-effect per racy intent
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got := len(assert.Check(h)); got < want {
					b.Fatalf("%d anomalies, want at least %d", got, want)
				}
			}
			perAttempt(b, len(h.Attempts))
		})
	}
}

// BenchmarkReport builds the full report (checks, per-check results,
// stats), as certify does after the run. It is Check plus tallies, so the
// 1,000,000-attempt size, which BenchmarkCheck covers, is left out to keep
// `make bench` within its time budget.
func BenchmarkReport(b *testing.B) {
	for _, n := range sizes[:2] {
		b.Run(fmt.Sprintf("attempts=%d", n), func(b *testing.B) {
			h := history(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if r := assert.Report(h); r.Stats.Attempts != len(h.Attempts) {
					b.Fatalf("report counts %d attempts of %d", r.Stats.Attempts, len(h.Attempts))
				}
			}
			perAttempt(b, len(h.Attempts))
		})
	}
}
