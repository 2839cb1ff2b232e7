package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoBenchSection(t *testing.T) {
	out := `goos: linux
pkg: github.com/idemcheck/idemcheck/bench
BenchmarkCheck/attempts=1000000-2       	       1	16979089529 ns/op	     16979 ns/attempt	21604776624 B/op	10957892 allocs/op
BenchmarkCheck/attempts=1000000-2       	       1	12035550563 ns/op	     12036 ns/attempt	21604776408 B/op	10957890 allocs/op
BenchmarkCheck/attempts=1000000-2       	       1	12000000000 ns/op	     12000 ns/attempt	21604776408 B/op	10957890 allocs/op
BenchmarkTemplateFill/literal-2         	339819380	         3.510 ns/op	       0 B/op	       0 allocs/op
BenchmarkHistoryWriteJSONL/attempts=10000-2	      31	  37749365 ns/op	 213.84 MB/s	      3781 ns/attempt	 4681191 B/op	  130713 allocs/op
PASS
`
	md := goBenchSection(out, "test")
	assert.Contains(t, md, "| Check/attempts=1000000 | 12.0 [12.0–17.0] s | 12036 [12000–16979] | – | 21.6 [21.6–21.6] GB | 10957890 [10957890–10957892] |")
	assert.Contains(t, md, "| TemplateFill/literal | 3.5 ns | – | – | 0.0 B | 0.0 |")
	assert.Contains(t, md, "| HistoryWriteJSONL/attempts=10000 | 37.7 ms | 3781 | 214 | 4.7 MB | 130713 |")
	assert.Contains(t, md, "goos: linux, pkg: github.com/idemcheck/idemcheck/bench")
}
