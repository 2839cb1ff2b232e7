package bench_test

import (
	"testing"

	"github.com/idemcheck/idemcheck"
)

// BenchmarkTemplateFill fills the templates of one request per intent, as
// the runner does before every intent's attempts.
func BenchmarkTemplateFill(b *testing.B) {
	in := idemcheck.Intent{ID: "ic-5eed0001-12345", Key: "0b5c7e2a-4f1d-4c3e-a8b9-0123456789ab", Seq: 12345}
	cases := []struct{ name, tmpl string }{
		{"body", `{"customerId":"{{intent}}","reference":"{{key}}","seq":{{seq}},"totalCents":4000,"currency":"EUR"}`},
		{"header", "{{key}}"},
		{"literal", `{"totalCents":4000,"currency":"EUR"}`},
	}
	for _, tc := range cases {
		t := idemcheck.MustTemplate(tc.tmpl)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var out string
			for b.Loop() {
				out = t.Fill(in)
			}
			if out == "" {
				b.Fatal("empty fill")
			}
		})
	}
}
