package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
)

// ownImage is idemcheck's own image: idemcheck/idemcheck:local, built by
// make images from docker/idemcheck/Dockerfile, or the one IDEMCHECK_IMAGE
// names, such as a release snapshot's
// (ghcr.io/idemcheck/idemcheck:vX.Y.Z-snapshot-amd64, from the same
// Dockerfile with goreleaser's binary).
func ownImage() string {
	if img := os.Getenv("IDEMCHECK_IMAGE"); img != "" {
		return img
	}
	return "idemcheck/idemcheck:local"
}

// idemcheck's own image certifies a target on the host's network: the
// reference orders API, served by this test on loopback with its database,
// and writes its report into a mounted folder.
func TestImageCertifiesAHostTarget(t *testing.T) {
	idemcheckImage := ownImage()
	requireDocker(t, idemcheckImage)
	url, dsn := ordersAPI(t, orders.Reference)
	out := t.TempDir()
	require.NoError(t, os.Chmod(out, 0o777), "the image runs as nobody")

	version, err := exec.Command("docker", "run", "--rm", idemcheckImage, "version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	assert.Regexp(t, `^idemcheck \S+`, string(version))

	cmd := exec.Command("docker", "run", "--rm", "--network", "host", "-v", out+":/out", idemcheckImage,
		"certify", "--url", url, "--path", "/orders", "--body", `{"customerId":"{{intent}}","totalCents":4000}`,
		"--db", dsn, "--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = $1", "--effect-arg", "{{intent}}",
		"--checks", "concurrent-burst,sequential-replay,lost-reply", "--json", "/out/report.json",
		// In the working folder, the image's /tmp: it must be nobody's to write.
		"--history", "history.jsonl")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Contains(t, string(b), "verdict PASS")

	var rep idemcheck.Report
	j, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &rep))
	assert.Equal(t, idemcheck.Pass, rep.Verdict)
	assert.Equal(t, "idemcheck", rep.Tool.Name)
}
