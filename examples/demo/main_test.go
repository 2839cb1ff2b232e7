package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/serve"
)

func TestMain(m *testing.M) {
	// The demo serves its examples by starting its own binary with the
	// hidden example-server command; under go test that binary is this one.
	// example-api --background starts its binary again with example-api.
	if len(os.Args) > 1 && (os.Args[1] == serve.ExampleCommand || os.Args[1] == "example-api") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// cli runs the program in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The main job: the demo certifies the examples and every verdict is the
// one it expects.
func TestDemo(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	dir := t.TempDir()
	code, out, errOut := cli(t, "--no-color", "--html-dir", dir)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, len(demoTargets), strings.Count(out, "(as expected)"), out)
	assert.Contains(t, out, "stuck-key in crash-lease")
	assert.Contains(t, out, "duplicate-effect in concurrent-burst")
	// An HTML report for each example, its path printed; the
	// check-then-insert page draws the duplicate burst as a timeline.
	for _, dt := range demoTargets {
		page := filepath.Join(dir, dt.app+"-"+dt.variant+".html")
		assert.Contains(t, out, "HTML report: "+page)
		b, err := os.ReadFile(page)
		if assert.NoError(t, err) && dt.variant == "check-then-insert" {
			assert.Contains(t, string(b), `<svg class="timeline"`)
			assert.Contains(t, string(b), "duplicate-effect")
		}
	}
}

// Usage mistakes exit 2 with one line that says what to do; help exits 0.
func TestUsage(t *testing.T) {
	code, out, _ := cli(t, "help")
	assert.Equal(t, idemcheck.ExitHeld, code)
	assert.Contains(t, out, "example-api")
	for _, h := range []string{"-h", "--help"} {
		code, out, _ = cli(t, h)
		assert.Equal(t, idemcheck.ExitHeld, code)
		assert.Contains(t, out, "-no-color")
		assert.Contains(t, out, "idemcheck-demo example-api", "--help names the other command too")
	}
	code, out, _ = cli(t, "example-api", "--help")
	assert.Equal(t, idemcheck.ExitHeld, code)
	assert.Contains(t, out, "Flags of idemcheck-demo example-api:")
	assert.Contains(t, out, "-background")
	assert.NotContains(t, out, "@latest", "no release is published to go run from")
	code, _, errOut := cli(t, "frobnicate")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	code, _, errOut = cli(t, "example-api", "--port", "70000")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--port 70000 is out of range")
	code, _, errOut = cli(t, serve.ExampleCommand, "orders")
	assert.Equal(t, idemcheck.ExitUsage, code, errOut)
	assert.Contains(t, errOut, "PORT and DATABASE_URL are required")
}
