package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netns"
)

// The loopback guard, end to end, inside a network namespace whose
// resolver answers every name with 127.0.0.1 twice and then 10.255.255.1
// (so a guard that failed would send nothing anywhere): a name that is not
// localhost is refused before anything is sent and never looked up; a
// database off loopback is refused naming --db; a suite with one loopback
// and one remote endpoint sends nothing to the first. Each refusal is a
// usage error (exit 2), and the target receives no request at all.
func TestNetnsLoopbackGuard(t *testing.T) {
	if !netns.Enter(t) {
		return
	}
	dns := &netns.DNS{Answer: func(name string, n int) netip.Addr {
		if n <= 2 {
			return netip.MustParseAddr("127.0.0.1")
		}
		return netip.MustParseAddr("10.255.255.1")
	}}
	netns.ServeDNS(t, dns)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	t.Setenv("DATABASE_URL", "")

	// The resolver works in here: an unguarded lookup gets an answer, so a
	// guard that looked names up would be seen below.
	addrs, err := net.LookupHost("probe.rebind.test")
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1"}, addrs)
	dns0 := dns.Queries()

	suite := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(suite, []byte(`
version: 1
options: {burst: 2, burst_rounds: 1, rounds: 1}
endpoints:
  - name: local
    url: http://127.0.0.1:`+port+`
    path: /orders
    checks: [sequential-replay]
  - name: remote
    url: http://10.255.255.1:`+port+`
    path: /orders
    checks: [sequential-replay]
`), 0o644))
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"rebinding name", []string{"certify", "--url", "http://api.rebind.test:" + port, "--checks", "sequential-replay"},
			[]string{"--url", "api.rebind.test", "--allow-remote", "localhost"}},
		{"private address", []string{"certify", "--url", "http://10.255.255.1:" + port, "--checks", "sequential-replay"},
			[]string{"--url", "10.255.255.1", "--allow-remote"}},
		{"db address", []string{"certify", "--url", "http://127.0.0.1:" + port, "--checks", "sequential-replay",
			"--db", "postgres://app:hunter2@10.255.255.1/db", "--effect-sql", "SELECT count(*) FROM t WHERE id = $1", "--effect-arg", "{{intent}}"},
			[]string{"--db", "10.255.255.1", "--allow-remote"}},
		{"db name", []string{"certify", "--url", "http://127.0.0.1:" + port, "--checks", "sequential-replay",
			"--db", "host=db.rebind.test user=app password=hunter2 dbname=db", "--effect-sql", "SELECT count(*) FROM t WHERE id = $1", "--effect-arg", "{{intent}}"},
			[]string{"--db", "db.rebind.test", "--allow-remote"}},
		{"db fallback host", []string{"certify", "--url", "http://127.0.0.1:" + port, "--checks", "sequential-replay",
			"--db", "postgres://app:hunter2@127.0.0.1,10.255.255.1/db", "--effect-sql", "SELECT count(*) FROM t WHERE id = $1", "--effect-arg", "{{intent}}"},
			[]string{"--db", "10.255.255.1"}},
		{"cmd target with remote db", []string{"certify", "--cmd", "true", "--checks", "sequential-replay",
			"--db", "postgres://app:hunter2@10.255.255.1/db"},
			[]string{"--db", "10.255.255.1"}},
		{"suite", []string{"run", "-f", suite}, []string{"endpoints[1].url", "10.255.255.1", "--allow-remote"}},
		{"soak name", []string{"soak", "--url", "http://api.rebind.test:" + port, "--duration", "1s"},
			[]string{"--url", "api.rebind.test"}},
		{"soak db", []string{"soak", "--url", "http://127.0.0.1:" + port, "--duration", "1s",
			"--db", "postgres://app:hunter2@10.255.255.1/db", "--effect-sql", "SELECT count(*) FROM t WHERE id = $1", "--effect-arg", "{{intent}}"},
			[]string{"--db", "10.255.255.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := cli(t, append(c.args, "--no-color")...)
			t.Logf("exit %d: %s", code, errOut)
			assert.Equal(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, w := range c.want {
				assert.Contains(t, errOut, w)
			}
			assert.NotContains(t, out+errOut, "hunter2", "no password in the error")
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		})
	}
	assert.Equal(t, int32(0), requests.Load(), "no request reached the loopback target")
	assert.Equal(t, dns0, dns.Queries(), "no DNS query was sent")

	// localhost is let through, and still not looked up.
	code, out, errOut := cli(t, "certify", "--url", "http://localhost:"+port, "--checks", "sequential-replay", "--rounds", "1", "--no-color")
	assert.NotEqual(t, idemcheck.ExitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Positive(t, requests.Load(), "the certification reached the target")
	assert.Equal(t, dns0, dns.Queries(), "localhost is not looked up")
}
