package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// The shard comes from --shard, or from the environment of a Kubernetes
// Indexed Job with the count from --shards or IDEMCHECK_SHARDS.
func TestSoakShardSources(t *testing.T) {
	for _, c := range []struct {
		name      string
		spec      string
		shards    int
		shardsSet bool
		env       map[string]string
		want      idemcheck.Shard
	}{
		{"none", "", 0, false, nil, idemcheck.Shard{}},
		{"flag", "2/4", 0, false, nil, idemcheck.Shard{Index: 2, Count: 4}},
		{"flag beats the environment", "1/2", 0, false, map[string]string{"JOB_COMPLETION_INDEX": "3", "IDEMCHECK_SHARDS": "4"}, idemcheck.Shard{Index: 1, Count: 2}},
		{"index with --shards", "", 4, true, map[string]string{"JOB_COMPLETION_INDEX": "3"}, idemcheck.Shard{Index: 3, Count: 4}},
		{"index with IDEMCHECK_SHARDS", "", 0, false, map[string]string{"JOB_COMPLETION_INDEX": "0", "IDEMCHECK_SHARDS": "4"}, idemcheck.Shard{Index: 0, Count: 4}},
		{"--shards beats IDEMCHECK_SHARDS", "", 8, true, map[string]string{"JOB_COMPLETION_INDEX": "5", "IDEMCHECK_SHARDS": "4"}, idemcheck.Shard{Index: 5, Count: 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := soakShard(c.spec, c.shards, c.shardsSet, envOf(c.env))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// A bad shard is one line naming what to fix, exit 2, before anything is
// started or sent.
func TestSoakShardBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--shard", "4/4"}, nil, "--shard 4/4: the index must be 0 to 3"},
		{[]string{"--shard", "-1/4"}, nil, "--shard -1/4: the index must be 0 to 3"},
		{[]string{"--shard", "0/0"}, nil, "--shard 0/0: the count must be 1 or more"},
		{[]string{"--shard", "two/4"}, nil, `--shard "two/4" is not INDEX/COUNT`},
		{[]string{"--shard", "2"}, nil, `--shard "2" is not INDEX/COUNT`},
		{[]string{"--shard", "1/4", "--shards", "4"}, nil, "--shard 1/4 and --shards 4 both give the shard count"},
		{[]string{"--shards", "0"}, map[string]string{"JOB_COMPLETION_INDEX": "0"}, "--shards 0 is out of range"},
		{[]string{"--shards", "4"}, nil, "--shards 4 needs the shard's index"},
		{nil, map[string]string{"JOB_COMPLETION_INDEX": "2"}, "JOB_COMPLETION_INDEX=2 is set but not the shard count"},
		{nil, map[string]string{"JOB_COMPLETION_INDEX": "x", "IDEMCHECK_SHARDS": "4"}, `JOB_COMPLETION_INDEX="x" is not a shard index`},
		{nil, map[string]string{"JOB_COMPLETION_INDEX": "4", "IDEMCHECK_SHARDS": "4"}, "JOB_COMPLETION_INDEX=4 is out of range for IDEMCHECK_SHARDS 4"},
		{nil, map[string]string{"JOB_COMPLETION_INDEX": "0", "IDEMCHECK_SHARDS": "four"}, `IDEMCHECK_SHARDS="four" is not a number`},
		{[]string{"--shard", "3/4", "--rate", "3"}, nil, "--rate 3 over 4 shards leaves shard 3 nothing to send: use --rate 4 or more"},
		{[]string{"--shard", "3/4", "--intents", "2"}, nil, "--intents 2 over 4 shards leaves shard 3 none"},
	} {
		t.Run(c.want, func(t *testing.T) {
			for _, k := range []string{"JOB_COMPLETION_INDEX", "IDEMCHECK_SHARDS"} {
				t.Setenv(k, c.env[k])
			}
			args := append([]string{"soak", "--url", "http://127.0.0.1:1", "--path", "/orders"}, c.args...)
			code, out, errOut := cli(t, args...)
			assert.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			assert.Zero(t, strings.Count(strings.TrimSpace(errOut), "\n"), "one line: %q", errOut)
		})
	}
}
