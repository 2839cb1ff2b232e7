package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// providerImageArgs certifies the orders image with a provider double
// handed to it in PROVIDER_URL, which the container reaches on the host's
// network, through the checks named (failed-attempt holds the three faults
// on the provider link). failed-attempt keeps its default two rounds on the
// database link: the orders API's second write is the COMMIT after the
// charge, the cut a fresh provider key needs to charge twice. The image's
// variant is chosen with ORDERS_VARIANT.
func providerImageArgs(t *testing.T, variant, checks string, extra ...string) []string {
	t.Helper()
	return imageArgs(append([]string{
		"--env", "ORDERS_VARIANT=" + variant, "--env", "ORDERS_LEASE=1s", "--lease", "1s",
		"--db", pgtest.DSN(t), "--provider-env", "PROVIDER_URL",
		"--checks", checks, "--rounds", "1",
	}, extra...)...)
}

// The reference image charges the double under a key derived from the
// client's: its calls are in the history, each tied to its intent by the
// customer id it forwards, every provider fault landed on one of them, no
// intent was charged twice, and the certification passes.
func TestCertifyContainerProviderReference(t *testing.T) {
	docker := requireDocker(t, ordersImage)
	before := ownContainers(t, docker)
	histPath := filepath.Join(t.TempDir(), "history.jsonl")
	code, out, errOut := cli(t, providerImageArgs(t, "reference", "failed-attempt,lost-reply", "--history", histPath)...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict PASS")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")

	f, err := os.Open(histPath)
	require.NoError(t, err)
	defer f.Close()
	hs, err := history.ReadAll(f, histPath)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	calls := map[string]int{}
	charged := map[string]int{}
	landed := map[string]bool{}
	for _, ev := range hs[0].Events {
		switch ev.Kind {
		case idemcheck.ProviderCalled:
			require.NotNil(t, ev.Call)
			assert.Equal(t, "PROVIDER_URL", ev.Call.Provider)
			assert.Equal(t, idemcheck.MappedByID, ev.Call.Mapped, "the orders API forwards the intent's customer id")
			assert.NotEmpty(t, ev.Intent, "call %d is tied to an intent", ev.Call.Seq)
			assert.NotEmpty(t, ev.Call.Key, "call %d carries a key", ev.Call.Seq)
			calls[ev.Check]++
			if ev.Call.Created {
				charged[ev.Intent]++
			}
		case idemcheck.FaultLanded:
			if ev.Landing == idemcheck.LandedProviderCall {
				assert.Equal(t, idemcheck.CheckFailedAttempt, ev.Check)
				landed[ev.Fault] = true
			}
		}
	}
	for _, check := range []string{idemcheck.CheckFailedAttempt, idemcheck.CheckLostReply} {
		assert.Positive(t, calls[check], "the container called the double in %s", check)
	}
	require.NotEmpty(t, charged, "the container charged at the double")
	for in, n := range charged {
		assert.Equal(t, 1, n, "charges of %s", in)
	}
	assert.Len(t, landed, 3, "cut after charge, slow, 5xx: %v", landed)
}

// A variant that sends the provider a fresh key on each attempt charges
// twice for one intent once its first attempt failed: failed-attempt
// reports provider-duplicate-charge, and the run exits 1.
func TestCertifyContainerProviderFreshKeyExitsOne(t *testing.T) {
	docker := requireDocker(t, ordersImage)
	before := ownContainers(t, docker)
	code, out, errOut := cli(t, providerImageArgs(t, "fresh-provider-key", "failed-attempt")...)
	require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict FAIL")
	assert.Contains(t, out, string(idemcheck.ProviderDuplicateCharge))
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")
}
