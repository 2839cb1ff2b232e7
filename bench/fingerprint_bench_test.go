package bench_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// BenchmarkFingerprint hashes one request as every attempt is recorded:
// method, path and the canonical JSON of its body.
func BenchmarkFingerprint(b *testing.B) {
	body := []byte(`{"customerId":"ic-5eed0001-12345","reference":"0b5c7e2a-4f1d-4c3e-a8b9-0123456789ab","seq":12345,"totalCents":4000,"currency":"EUR"}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = scenarios.Fingerprint("POST", "/orders", body)
	}
}
