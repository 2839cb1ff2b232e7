package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	rules "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/history"
)

const soakFixture = "testdata/soak-no-idempotency.jsonl"

// splitSoak splits a recorded soak history into n shard histories, as n
// shard processes would have written them: each intent (with its attempts
// and observation, in their order) in one shard, the header in every one
// with its shard. It returns the shards' paths.
func splitSoak(t *testing.T, path string, n int) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dir := t.TempDir()
	encs := make([]*history.Encoder, n)
	paths := make([]string, n)
	for i := range n {
		paths[i] = filepath.Join(dir, fmt.Sprintf("soak-%d.jsonl", i))
		out, err := os.Create(paths[i])
		require.NoError(t, err)
		t.Cleanup(func() { out.Close() })
		encs[i] = history.NewEncoder(out)
	}
	shardOf := map[string]int{}
	of := func(intent string) *history.Encoder {
		s, ok := shardOf[intent]
		if !ok {
			s = len(shardOf) % n
			shardOf[intent] = s
		}
		return encs[s]
	}
	d := history.NewDecoder(f, path)
	for {
		r, err := d.Record()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch {
		case r.Run != nil:
			for i, e := range encs {
				run := *r.Run
				run.Shard = &idemcheck.Shard{Index: i, Count: n}
				require.NoError(t, e.Run(run))
			}
		case r.Intent != nil:
			require.NoError(t, of(r.Intent.ID).Encode(r))
		case r.Attempt != nil:
			require.NoError(t, of(r.Attempt.Intent).Encode(r))
		case r.Observation != nil:
			require.NoError(t, of(r.Observation.Intent).Encode(r))
		default:
			t.Fatalf("a soak history with a record of another kind: %+v", r)
		}
	}
	for _, e := range encs {
		require.NoError(t, e.Flush())
	}
	return paths
}

// checkSoakJSON runs idemcheck check on the histories and returns its exit
// code and its soak report.
func checkSoakJSON(t *testing.T, paths ...string) (int, idemcheck.SoakReport, string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "merged.json")
	code, out, errOut := cli(t, append([]string{"check", "--no-color", "--json", jsonPath}, paths...)...)
	require.NotEqual(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var rep idemcheck.SoakReport
	require.NoError(t, json.Unmarshal(b, &rep))
	return code, rep, out
}

// On the same attempts, the shards' histories merged by idemcheck check
// give the verdict and the counts of the one history they were split from,
// and those of the whole history tallied in memory.
func TestCheckMergesSoakShards(t *testing.T) {
	f, err := os.Open(soakFixture)
	require.NoError(t, err)
	hs, err := history.ReadAll(f, soakFixture)
	f.Close()
	require.NoError(t, err)
	require.Len(t, hs, 1)
	whole := rules.Soak(hs[0])
	require.Positive(t, whole.Duplicates, "the fixture holds duplicates")
	require.Positive(t, whole.Cut)

	code1, one, _ := checkSoakJSON(t, soakFixture)
	for _, n := range []int{2, 4, 7} {
		t.Run(fmt.Sprint(n, " shards"), func(t *testing.T) {
			code, merged, out := checkSoakJSON(t, splitSoak(t, soakFixture, n)...)
			assert.Equal(t, idemcheck.ExitAnomalies, code)
			assert.Equal(t, code1, code)
			assert.Equal(t, one.Verdict, merged.Verdict)
			assert.Equal(t, idemcheck.Fail, merged.Verdict)
			for name, pair := range map[string][3]int64{
				"intents":    {whole.Intents, one.Soak.Intents, merged.Soak.Intents},
				"attempts":   {whole.Attempts, one.Soak.Attempts, merged.Soak.Attempts},
				"cut":        {whole.Cut, one.Soak.Cut, merged.Soak.Cut},
				"unresolved": {whole.Unresolved, one.Soak.Unresolved, merged.Soak.Unresolved},
				"counted":    {whole.Counted, one.Soak.Counted, merged.Soak.Counted},
				"duplicates": {whole.Duplicates, one.Soak.Duplicates, merged.Soak.Duplicates},
				"lost":       {whole.Lost, one.Soak.Lost, merged.Soak.Lost},
			} {
				assert.Equal(t, pair[0], pair[1], "%s: in memory and streamed from one history", name)
				assert.Equal(t, pair[0], pair[2], "%s: in memory and merged from %d shards", name, n)
			}
			assert.Equal(t, whole.SucceededShare, merged.Soak.SucceededShare)
			assert.Equal(t, whole.Faults, merged.Soak.Faults)
			// The load is measured again from the first attempts, the
			// same ones whatever the split.
			assert.Equal(t, one.Soak.Success, merged.Soak.Success)
			assert.InDelta(t, one.Soak.Rate, merged.Soak.Rate, 1e-6)
			assert.Equal(t, one.Soak.Max, merged.Soak.Max)
			require.NotNil(t, merged.Merged)
			assert.Equal(t, idemcheck.Merged{Histories: n, Shards: n}, *merged.Merged)
			assert.Contains(t, out, fmt.Sprintf("%d histories merged, of %d shards", n, n))
			assert.Contains(t, out, fmt.Sprintf("%d duplicated", whole.Duplicates))
		})
	}
}

// A shard's history missing leaves no verdict but inconclusive (or fail,
// on the duplicates the others show); a shard named twice, or shards of
// different soaks, are a usage error naming the files.
func TestCheckSoakShardsMissingOrTwice(t *testing.T) {
	paths := splitSoak(t, soakFixture, 4)
	code, rep, out := checkSoakJSON(t, paths[0], paths[1], paths[3])
	assert.Equal(t, idemcheck.ExitAnomalies, code, "the shards present show duplicates")
	assert.Equal(t, []int{2}, rep.Merged.Missing)
	assert.Contains(t, out, "missing shard 2: its intents are not counted")

	dup := filepath.Join(t.TempDir(), "again.jsonl")
	b, err := os.ReadFile(paths[1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dup, b, 0o644))
	code, _, errOut := cli(t, "check", paths[0], paths[1], dup)
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "are both shard 1/4: name each shard's history once")

	code, _, errOut = cli(t, "check", paths[0], paths[0])
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "is named twice")

	other := splitSoak(t, soakFixture, 3)
	code, _, errOut = cli(t, "check", paths[0], other[1])
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "is of 4 shards")
}

// A missing shard with no anomaly in the others is inconclusive, never a
// pass: the missing shard's intents may hold the duplicates.
func TestCheckSoakMissingShardIsInconclusive(t *testing.T) {
	var buf bytes.Buffer
	enc := history.NewEncoder(&buf)
	run := idemcheck.Run{Target: idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Policy: idemcheck.IETF(), Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSoak}}, EffectQuery: "SELECT 1",
		Shard: &idemcheck.Shard{Index: 0, Count: 2}}
	require.NoError(t, enc.Run(run))
	require.NoError(t, enc.Attempt(idemcheck.Attempt{ID: 1, Intent: "i1", Step: 1, Outcome: idemcheck.Replied, Status: 201}))
	require.NoError(t, enc.Observation(idemcheck.Observation{Intent: "i1", Effects: 1}))
	require.NoError(t, enc.Flush())
	p := filepath.Join(t.TempDir(), "soak-0.jsonl")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	code, out, errOut := cli(t, "check", "--no-color", p)
	assert.Equal(t, idemcheck.ExitInconclusive, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict INCONCLUSIVE")
}
