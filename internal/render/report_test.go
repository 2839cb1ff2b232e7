package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// hostileBody is a reply body with what a target may send back: controls
// XML 1.0 forbids, a terminal escape, a byte that is not UTF-8, a CDATA
// terminator, markup, pipes, backticks and a code fence.
const hostileBody = "{\"orderId\":\"o-2\",\"note\":\"a\x00b\x1b[31mred\xff ]]> <x>&amp; | `tick` ```fence\"}"

// fixtures are three certifications built by hand: one that held, one
// that failed with two anomalies and a skipped check, and nothing from the
// clock, so renderings are stable.
func fixtures() []idemcheck.Report {
	pass := idemcheck.Report{
		Version: 1, Verdict: idemcheck.Pass,
		Target: idemcheck.Target{Name: "orders (reference)", URL: "http://127.0.0.1:8080", Method: "POST", Path: "/orders",
			Database: "postgres://app:xxxxx@127.0.0.1:5432/app"},
		Policy: idemcheck.IETF(),
		Checks: []idemcheck.CheckResult{
			{Name: idemcheck.CheckConcurrentBurst, Status: idemcheck.Pass, Rule: "one intent, one effect", Anomalies: []int{}, Intents: 5, Attempts: 160},
			{Name: idemcheck.CheckSequentialReplay, Status: idemcheck.Pass, Rule: "a replay returns the original reply", Anomalies: []int{}, Intents: 3, Attempts: 6},
		},
		Anomalies: []idemcheck.Anomaly{},
		Stats:     idemcheck.Stats{Intents: 8, Attempts: 166, DurationMS: 512, BurstSpreadMedianUS: 380},
	}
	fail := idemcheck.Report{
		Version: 1, Verdict: idemcheck.Fail,
		Target: idemcheck.Target{URL: "http://127.0.0.1:8081/", Method: "POST", Path: "/orders"},
		Policy: idemcheck.IETF(),
		Checks: []idemcheck.CheckResult{
			{Name: idemcheck.CheckConcurrentBurst, Status: idemcheck.Fail, Rule: "one intent, one effect", Anomalies: []int{0, 1}, Intents: 1, Attempts: 32},
			{Name: idemcheck.CheckSequentialReplay, Status: idemcheck.Pass, Rule: "a replay returns the original reply", Anomalies: []int{}, Intents: 3, Attempts: 6},
			{Name: idemcheck.CheckLostReply, Status: idemcheck.Skip, Reason: "the target cannot cut | replies: no <proxy>", Anomalies: []int{}},
		},
		Anomalies: []idemcheck.Anomaly{
			{
				Kind: idemcheck.DuplicateEffect, Check: idemcheck.CheckConcurrentBurst, Intent: "ic-8281213f-1", Key: "cc3e414c-414c-463f-a066-df441ea4d635",
				Explanation: "2 attempts sent key cc3e414c-… for one intent, and the effect query counts 2 effects " +
					"(SELECT count(*) FROM orders WHERE customer_id = $1 with ic-8281213f-1). One intent must leave exactly one effect.",
				Attempts: []int{3, 17},
				Evidence: []idemcheck.Evidence{
					{Attempt: 3, Step: 1, Status: 201, Body: "{\"orderId\":\"o-1\",\n  \"customerId\":\"ic-8281213f-1\"}"},
					{Attempt: 17, Step: 1, Status: 201, Body: hostileBody},
				},
				Observed: map[string]any{"effects": 2},
			},
			{
				Kind: idemcheck.MultipleCreated, Check: idemcheck.CheckConcurrentBurst, Intent: "ic-8281213f-1", Key: "cc3e414c-414c-463f-a066-df441ea4d635",
				Explanation: "3 attempts with key cc3e414c-… were in flight together and 2 distinct resources came back " +
					"as successes (/orderId: o-1, o-2): each of those attempts executed. Concurrent duplicates must get 409 or a replay of the one resource.",
				Attempts: []int{3, 17, 21, 22},
				Evidence: []idemcheck.Evidence{
					{Attempt: 3, Step: 1, Status: 201, Body: `{"orderId":"o-1"}`},
					{Attempt: 17, Step: 1, Status: 201, Body: `{"orderId":"o-2"}`, Replayed: "false"},
					{Attempt: 21, Step: 1, Error: "read: connection reset by peer"},
				},
			},
		},
		Stats: idemcheck.Stats{Intents: 4, Attempts: 38, DurationMS: 250},
	}
	return []idemcheck.Report{pass, fail}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/render -update to create it")
	assert.Equal(t, string(want), string(got), "%s differs; if the change is intended, run go test ./internal/render -update", path)
}

func TestCleanShowsForbiddenCharactersAsEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"plain ünïcode":    "plain ünïcode",
		"tab\tnl\ncr\r":    "tab\tnl\ncr\r",
		"nul\x00esc\x1b":   `nul\x00esc\x1b`,
		"bad\xffutf8":      `bad\xffutf8`,
		"del\x7f c1\u0085": `del\x7f c1\x85`,
		"nonchar\uffff":    `nonchar\uffff`,
	} {
		assert.Equal(t, want, clean(in), "clean(%q)", in)
	}
}

func TestOneLineCutsOnARuneBoundary(t *testing.T) {
	assert.Equal(t, "a b c", oneLine("a\n  b\t\tc", 100))
	assert.Equal(t, "é… (2 bytes more)", oneLine("éé", 3), "a cut never splits a rune")
}

func TestInconsistentReportsWriteNothing(t *testing.T) {
	bad := fixtures()
	bad[1].Checks[0].Anomalies = []int{0, 7}
	unknown := fixtures()
	unknown[0].Checks[0].Status = "maybe"
	for name, rs := range map[string][]idemcheck.Report{"index": bad, "status": unknown} {
		for format, write := range map[string]func(*bytes.Buffer, []idemcheck.Report) error{
			"junit":    func(b *bytes.Buffer, rs []idemcheck.Report) error { return WriteJUnit(b, rs) },
			"markdown": func(b *bytes.Buffer, rs []idemcheck.Report) error { return WriteMarkdown(b, rs) },
		} {
			var b bytes.Buffer
			err := write(&b, rs)
			require.Error(t, err, "%s %s", name, format)
			assert.Empty(t, b.String(), "%s %s", name, format)
		}
	}
	var b bytes.Buffer
	assert.ErrorContains(t, WriteJUnit(&b, bad), "anomaly index 7 is outside the report's 2 anomalies")
	assert.ErrorContains(t, WriteJUnit(&b, unknown), `unknown status "maybe"`)
}
