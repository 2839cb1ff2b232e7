package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// Every file a user names is read up to a limit: an endless one
// (/dev/zero) or a huge one ends at once with one line naming the flag or
// the file, and exit 2, before anything is sent.
func TestInputFilesHaveSizeLimits(t *testing.T) {
	var sent int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent++ }))
	t.Cleanup(srv.Close)
	big := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(big, []byte(`{"run":{}}`+"\n"+strings.Repeat("x", 65<<20)), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"certify", "--url", srv.URL, "--policy", "/dev/zero"}, "--policy /dev/zero: larger than 1 MiB"},
		{[]string{"soak", "--url", srv.URL, "--policy", "/dev/zero"}, "--policy /dev/zero: larger than 1 MiB"},
		{[]string{"run", "-f", "/dev/zero"}, "/dev/zero: cannot read the suite: larger than 16 MiB"},
		{[]string{"certify", "--url", "https" + strings.TrimPrefix(srv.URL, "http"), "--cacert", "/dev/zero"}, "--cacert /dev/zero cannot be read: larger than 1 MiB"},
		{[]string{"certify", "--url", "https" + strings.TrimPrefix(srv.URL, "http"), "--cert", "/dev/zero", "--key", "/dev/zero"}, "--cert /dev/zero cannot be read: larger than 1 MiB"},
		{[]string{"check", big}, big + ":2: a line longer than 64 MiB"},
	} {
		code, out, errOut := cli(t, c.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%q\nstdout:\n%s\nstderr:\n%s", c.args, out, errOut)
		assert.Contains(t, errOut, c.want, "%q", c.args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	}
	assert.Zero(t, sent, "nothing sent")
}

// fullDevice is a file every write to fails with ENOSPC, as /dev/full. As
// root, a device of its own in a test folder: were an output renamed over
// it, /dev/full itself would be left alone.
func fullDevice(t *testing.T) string {
	if os.Geteuid() != 0 {
		return "/dev/full"
	}
	p := filepath.Join(t.TempDir(), "full")
	require.NoError(t, syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|7))
	return p
}

// An output that cannot be written is exit 2 naming its path, never a
// silent success; a device is written in place, never replaced; two
// outputs to one file are a usage error before anything is sent.
func TestOutputWriteErrorsAreUsageErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"1"}`))
	}))
	t.Cleanup(srv.Close)
	full := fullDevice(t)
	base := []string{"--url", srv.URL, "--path", "/orders", "--body", `{"a":"{{intent}}"}`, "--no-color"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"certify", "--checks", "sequential-replay", "--json", full}, base...), "--json: write " + full + ": no space left on device"},
		{append([]string{"certify", "--checks", "sequential-replay", "--history", full}, base...), "--history: write " + full + ": no space left on device"},
		{append([]string{"soak", "--rate", "20", "--duration", "500ms", "--json", full}, base...), "--json: write " + full + ": no space left on device"},
		{append([]string{"soak", "--rate", "20", "--duration", "500ms", "--history", full}, base...), "--history"},
	} {
		code, out, errOut := cli(t, c.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%q\nstdout:\n%s\nstderr:\n%s", c.args, out, errOut)
		assert.Contains(t, errOut, c.want, "%q", c.args)
		assert.Contains(t, errOut, full, "%q", c.args)
		fi, err := os.Stat(full)
		require.NoError(t, err)
		assert.Equal(t, os.ModeCharDevice, fi.Mode()&os.ModeCharDevice, "the device is still a device")
	}

	var sent int
	quiet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent++ }))
	t.Cleanup(quiet.Close)
	dir := t.TempDir()
	f := filepath.Join(dir, "r")
	for _, args := range [][]string{
		{"certify", "--url", quiet.URL, "--json", f, "--html", f},
		{"certify", "--url", quiet.URL, "--json", f, "--history", filepath.Join(dir, ".", "r")},
		{"soak", "--url", quiet.URL, "--json", f, "--vegeta-results", f},
		{"check", "--json", f, "--junit", f, "x.jsonl"},
	} {
		code, out, errOut := cli(t, args...)
		assert.Equal(t, idemcheck.ExitUsage, code, "%q\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		assert.Contains(t, errOut, "both name", "%q", args)
	}
	assert.Zero(t, sent, "nothing sent")
}

// check reads its flags wherever they stand among the history files.
func TestCheckReadsFlagsInAnyPosition(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	code, out, errOut := cli(t, "check", "testdata/soak-no-idempotency.jsonl", "--json", jsonPath, "--no-color")
	assert.NotEqual(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	_, err := os.Stat(jsonPath)
	assert.NoError(t, err, "the report is written")
	// After --, a name that looks like a flag is a file.
	code, _, errOut = cli(t, "check", "--", "--json")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "--json")
}
