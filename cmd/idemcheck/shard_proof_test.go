package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// ordersWith serves the example API with cfg on loopback and returns its
// URL and the DSN of its database.
func ordersWith(t *testing.T, cfg orders.Config) (string, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	p, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, orders.Migrate(context.Background(), p))
	api := orders.New(p, cfg)
	t.Cleanup(api.Close)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, dsn
}

// The sharded soak, locally: four processes of idemcheck, each told its
// shard as a Kubernetes Indexed Job tells its pods (JOB_COMPLETION_INDEX
// 0..3, and the count in IDEMCHECK_SHARDS), soak one target together,
// each writing its own history; idemcheck check merges the four into one
// verdict. Against the reference, every intent is counted once and
// nothing is duplicated. Against the short-ttl variant of the bug zoo,
// whose keys are forgotten before the retry of a cut reply comes, every
// cut reply's retry makes a second order, and the merged report counts
// the duplicates of all four shards.
func TestShardedSoakFourProcesses(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	const shards, intents = 4, 400
	for _, c := range []struct {
		name string
		cfg  orders.Config
		code int
	}{
		{"reference", orders.Config{Variant: orders.Reference}, idemcheck.ExitHeld},
		{"short-ttl", orders.Config{Variant: orders.ShortTTL, Retention: time.Nanosecond}, idemcheck.ExitAnomalies},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, dsn := ordersWith(t, c.cfg)
			dir := t.TempDir()
			type shard struct {
				cmd            *exec.Cmd
				stdout, stderr bytes.Buffer
				report         string
			}
			procs := make([]*shard, shards)
			for i := range procs {
				s := &shard{report: filepath.Join(dir, fmt.Sprintf("report-%d.json", i))}
				s.cmd = exec.Command(self, append([]string{subcommand}, soakArgs(url, dsn,
					"--rate", "400", "--intents", fmt.Sprint(intents), "--duration", "1m",
					"--history", filepath.Join(dir, fmt.Sprintf("soak-%d.jsonl", i)), "--json", s.report)...)...)
				s.cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), fmt.Sprintf("IDEMCHECK_SHARDS=%d", shards))
				s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
				require.NoError(t, s.cmd.Start())
				t.Cleanup(func() { _ = s.cmd.Process.Kill() })
				procs[i] = s
			}
			var sum idemcheck.SoakResult
			for i, s := range procs {
				err := s.cmd.Wait()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, c.code, code, "shard %d\nstdout:\n%s\nstderr:\n%s", i, &s.stdout, &s.stderr)
				assert.Contains(t, s.stderr.String(), fmt.Sprintf("soak: shard %d/%d: 100 of 400 intents/s", i, shards))
				rep := readSoakReport(t, s.report)
				require.Equal(t, &idemcheck.Shard{Index: i, Count: shards}, rep.Shard)
				assert.EqualValues(t, intents/shards, rep.Soak.Intents, "shard %d sends its part of --intents", i)
				sum.Intents += rep.Soak.Intents
				sum.Attempts += rep.Soak.Attempts
				sum.Cut += rep.Soak.Cut
				sum.Counted += rep.Soak.Counted
				sum.Duplicates += rep.Soak.Duplicates
				sum.Lost += rep.Soak.Lost
			}

			// The shards' intents are disjoint and together numbered 1..N.
			seqs := map[int]string{}
			for i := range shards {
				p := filepath.Join(dir, fmt.Sprintf("soak-%d.jsonl", i))
				f, err := os.Open(p)
				require.NoError(t, err)
				hs, err := history.ReadAll(f, p)
				f.Close()
				require.NoError(t, err)
				require.Len(t, hs, 1)
				require.Equal(t, &idemcheck.Shard{Index: i, Count: shards}, hs[0].Run.Shard)
				for _, in := range hs[0].Intents {
					prev, dup := seqs[in.Seq]
					require.False(t, dup, "intent %d sent by %s and shard %d", in.Seq, prev, i)
					seqs[in.Seq] = fmt.Sprint("shard ", i)
				}
			}
			for n := 1; n <= intents; n++ {
				assert.Contains(t, seqs, n, "intent %d sent by no shard", n)
			}

			merged := filepath.Join(dir, "merged.json")
			code, out, errOut := cli(t, "check", "--no-color", "--json", merged, filepath.Join(dir, "soak-*.jsonl"))
			require.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			t.Log(out)
			rep := readSoakReport(t, merged)
			r := rep.Soak
			assert.Equal(t, &idemcheck.Merged{Histories: shards, Shards: shards}, rep.Merged)
			assert.EqualValues(t, intents, r.Intents)
			assert.EqualValues(t, intents, r.Counted, "every intent's effects counted")
			assert.Equal(t, r.Intents+r.Cut, r.Attempts, "one retry per cut first attempt")
			for name, pair := range map[string][2]int64{
				"intents": {sum.Intents, r.Intents}, "attempts": {sum.Attempts, r.Attempts}, "cut": {sum.Cut, r.Cut},
				"counted": {sum.Counted, r.Counted}, "duplicates": {sum.Duplicates, r.Duplicates}, "lost": {sum.Lost, r.Lost},
			} {
				assert.Equal(t, pair[0], pair[1], "%s: the shards' reports add up to %d, the merged history says %d", name, pair[0], pair[1])
			}
			assert.Positive(t, r.Cut)
			assert.Zero(t, r.Lost)
			if c.code == idemcheck.ExitHeld {
				assert.Zero(t, r.Duplicates)
				assert.Contains(t, out, "verdict PASS")
				return
			}
			assert.Equal(t, r.Cut, r.Duplicates, "every cut reply's retry made a second order")
			assert.Contains(t, out, fmt.Sprintf("%d duplicated", r.Duplicates))
			assert.Contains(t, out, "verdict FAIL")
		})
	}
}
