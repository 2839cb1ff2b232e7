package bench_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	jsonl "github.com/idemcheck/idemcheck/history"
)

// BenchmarkHistoryWriteJSONL encodes whole histories, as --history does at
// the end of a run.
func BenchmarkHistoryWriteJSONL(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("attempts=%d", n), func(b *testing.B) {
			h := history(b, n)
			var size countingWriter
			if err := jsonl.Write(&size, h); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size.n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := jsonl.Write(io.Discard, h); err != nil {
					b.Fatal(err)
				}
			}
			perAttempt(b, len(h.Attempts))
		})
	}
}

// BenchmarkHistoryRead decodes a history, as `idemcheck check` does. The
// 1,000,000-attempt size is left out: its file (over 700 MB) would take
// most of `make bench`'s time budget to decode three times, and decoding
// is line by line, so it grows as the 10k to 100k step shows.
func BenchmarkHistoryRead(b *testing.B) {
	for _, n := range sizes[:2] {
		b.Run(fmt.Sprintf("attempts=%d", n), func(b *testing.B) {
			h := history(b, n)
			var buf bytes.Buffer
			if err := jsonl.Write(&buf, h); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(buf.Len()))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				hs, err := jsonl.ReadAll(bytes.NewReader(buf.Bytes()), "bench.jsonl")
				if err != nil || len(hs) != 1 || len(hs[0].Attempts) != len(h.Attempts) {
					b.Fatalf("read back %d histories: %v", len(hs), err)
				}
			}
			perAttempt(b, len(h.Attempts))
		})
	}
}
