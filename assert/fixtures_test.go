package assert

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

// Histories recorded from real runs against the example orders API (see
// testdata/README.md) are checked again here: the checker must reach the
// same verdict on them forever, whatever else changes.
func TestRecordedHistories(t *testing.T) {
	cases := []struct {
		file    string
		verdict idemcheck.Status
		kinds   map[idemcheck.Kind]int
	}{
		// Two bursts of 16 against the check-then-insert variant: both raced.
		{"check-then-insert.jsonl", idemcheck.Fail, map[idemcheck.Kind]int{idemcheck.DuplicateEffect: 2, idemcheck.MultipleCreated: 2}},
		// Every check against the reference started by idemcheck: nothing
		// to report, and every fault's landing, kill and restart recorded.
		{"reference.jsonl", idemcheck.Pass, map[idemcheck.Kind]int{}},
		// failed-attempt against a variant that sends its payment provider
		// a fresh key per attempt: one intent charged twice.
		{"provider-fresh-key.jsonl", idemcheck.Fail, map[idemcheck.Kind]int{idemcheck.ProviderDuplicateCharge: 1}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			require.NoError(t, err)
			defer f.Close()
			hs, err := history.ReadAll(f, c.file)
			require.NoError(t, err)
			require.Len(t, hs, 1)
			r := Report(hs[0])
			assert.Equal(t, c.verdict, r.Verdict)
			got := map[idemcheck.Kind]int{}
			for _, a := range r.Anomalies {
				got[a.Kind]++
				assert.NotEmpty(t, a.Evidence, "%s has evidence", a.Kind)
			}
			assert.Equal(t, c.kinds, got)
		})
	}
}
