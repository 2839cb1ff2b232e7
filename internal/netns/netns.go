// Package netns runs a test inside a network namespace of its own, with
// only a loopback device, so that a test of the loopback guard sends
// nothing anywhere even when the guard fails: a connection to any other
// address fails there at once (ENETUNREACH). The namespace also gets its
// own /etc/resolv.conf, naming a resolver on 127.0.0.1 that the test runs
// (see DNS), so what a name resolves to is the test's to decide.
//
// The test re-executes its own test binary under unshare(1) (root only),
// asking for itself alone:
//
//	func TestSomething(t *testing.T) {
//		if !netns.Enter(t) {
//			return // the outer run: the namespace ran the test
//		}
//		// inside the namespace
//	}
//
// Without unshare or root the test is skipped with the reason, except when
// CI=true: there a skip would hide a guard that was never tested, so it
// fails instead.
package netns

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// insideEnv marks the re-executed test binary running in the namespace.
const insideEnv = "IDEMCHECK_IN_NETNS"

// Inside reports whether this process runs in the test namespace.
func Inside() bool { return os.Getenv(insideEnv) == "1" }

// Enter reports true when the test runs inside the namespace and should go
// on. Outside, it runs the test again inside one, reports its output, fails
// when that run failed or did not run the test, and returns false.
func Enter(t *testing.T) bool {
	t.Helper()
	if Inside() {
		return true
	}
	if reason := unavailable(); reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespace tests cannot run (%s), and CI=true forbids skipping them: run as root with unshare(1) available", reason)
		}
		t.Skipf("network namespace unavailable: %s (CI=true makes this a failure)", reason)
	}
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `ip link set lo up && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"`
	args := []string{"-n", "-m", "--", "sh", "-c", script, "sh", resolv,
		os.Args[0], "-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("inside the network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test failed inside the network namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test did not pass inside the network namespace (skipped or not run)")
	}
	return false
}

func unavailable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	for _, tool := range []string{"unshare", "ip", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found"
		}
	}
	if err := exec.Command("unshare", "-n", "-m", "--", "true").Run(); err != nil {
		return "unshare -n -m: " + err.Error()
	}
	return ""
}
