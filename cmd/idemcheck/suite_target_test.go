package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// suiteFile writes a suite whose target idemcheck starts, with every fault
// check in reach, and returns its path.
func suiteFile(t *testing.T, target string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
version: 1
target:
`+target+`
policy: {preset: ietf, replay_header: Idempotent-Replayed, lease: 1s}
options: {burst: 8, burst_rounds: 2, rounds: 1, fault_rounds: 1}
endpoints:
  - name: orders
    path: /orders
    body: {customerId: "{{intent}}", totalCents: 4000}
    checks: [concurrent-burst, failed-attempt, crash-lease, lease-fencing]
    effect: {sql: "SELECT count(*) FROM orders WHERE customer_id = $1", args: ["{{intent}}"]}
`), 0o644))
	return p
}

// A suite can name the command that starts the target: idemcheck then owns
// its process and database link, and the fault checks run.
func TestRunSuiteStartsACommand(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("DATABASE_URL", "")
	t.Setenv("SELF", self)
	p := suiteFile(t, "  cmd: ${SELF} "+exampleServerCommand+" orders -lease 1s -variant no-lease")
	code, out, errOut := cli(t, "run", "-f", p, "--no-color")
	require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "stuck-key in crash-lease")
	assert.Contains(t, out, "PASS     failed-attempt")
}

// A suite can name an image: the same, on a container.
func TestRunSuiteStartsAnImage(t *testing.T) {
	requireDocker(t, ordersImage)
	t.Setenv("DATABASE_URL", "")
	p := suiteFile(t, "  image: "+ordersImage+"\n  env: {ORDERS_LEASE: 1s}")
	code, out, errOut := cli(t, "run", "-f", p, "--no-color", "--timeout", "20s")
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, 4, strings.Count(out, "PASS     "), out)
}
