package netguard_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/netns"
)

func withHosts(t *testing.T, content string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	old := netguard.HostsFile
	netguard.HostsFile = p
	t.Cleanup(func() { netguard.HostsFile = old })
}

func TestLoopbackRule(t *testing.T) {
	withHosts(t, `# comment
127.0.0.1 localhost
127.0.1.1 api.test api-alias.test # trailing comment
::1 v6.test
10.0.0.5 db.internal
127.0.0.1 mixed.test
10.1.1.1 mixed.test
`)
	ok := map[string]string{
		"127.0.0.1": "127.0.0.1", "127.9.9.9": "127.9.9.9", "::1": "::1", "[::1]": "::1",
		"::ffff:127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "LOCALHOST.": "127.0.0.1",
		"api.test": "127.0.1.1", "API-Alias.test": "127.0.1.1", "v6.test": "::1",
		"orders.localhost": "127.0.0.1",
	}
	for host, first := range ok {
		ips, err := netguard.Loopback(host)
		if assert.NoError(t, err, host) {
			assert.Equal(t, first, ips[0].String(), host)
			for _, ip := range ips {
				assert.True(t, ip.IsLoopback(), "%s: %s", host, ip)
			}
		}
	}
	for _, host := range []string{"10.255.255.1", "::ffff:10.255.255.1", "192.0.2.1", "2001:db8::1", "0.0.0.0",
		"db.internal", "mixed.test", "staging.example.com", "localhost.example.com", ""} {
		_, err := netguard.Loopback(host)
		assert.ErrorIs(t, err, netguard.ErrNotLoopback, host)
	}
}

// localhost resolves to loopback even when the hosts file does not say so:
// RFC 6761 reserves it. It is never sent to DNS.
func TestLocalhostWithoutHostsFile(t *testing.T) {
	withHosts(t, "")
	ips, err := netguard.Loopback("localhost")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, ips)
}

func TestControl(t *testing.T) {
	for _, a := range []string{"127.0.0.1:80", "[::1]:5432", "127.1.2.3:1", "[::ffff:127.0.0.1]:8080"} {
		assert.NoError(t, netguard.Control("tcp", a, nil), a)
	}
	for _, a := range []string{"10.255.255.1:80", "[2001:db8::1]:443", "[::ffff:10.0.0.1]:80", "0.0.0.0:80", "name:80"} {
		assert.ErrorIs(t, netguard.Control("tcp4", a, nil), netguard.ErrNotLoopback, a)
	}
	assert.NoError(t, netguard.Control("unix", "/tmp/.s.PGSQL.5432", nil))
}

// A refusal at connect time reaches histories and Go programs as it is, so
// it names the way out as the setting (AllowRemote), never as a flag; a
// program with words of its own (the command's flag) says it in those.
func TestControlRefusalNamesTheSetting(t *testing.T) {
	err := netguard.Control("tcp", "10.255.255.1:80", nil)
	require.ErrorIs(t, err, netguard.ErrNotLoopback)
	assert.Equal(t, "refused to connect to 10.255.255.1:80: 10.255.255.1 is not loopback (set AllowRemote to send traffic off this machine)", err.Error())
	assert.NotContains(t, err.Error(), "--", "a library error names no flag")
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.Field("AllowRemote"), fe.Field)
	words := map[idemcheck.Field]idemcheck.Word{"AllowRemote": {Name: "--allow-remote", Set: "pass --allow-remote"}}
	assert.Contains(t, fe.Text(words), "(pass --allow-remote to send traffic off this machine)")
}

// The Control function sees the address being connected, whatever the
// resolver said earlier: a dialer whose name answers loopback and then a
// private address connects twice and then refuses, without a packet.
func TestDialerRefusesAddressChangedAfterCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// A resolver whose answers change: the address list is the test's.
	answers := []string{"127.0.0.1", "127.0.0.1", "10.255.255.1"}
	calls := 0
	d := netguard.Dialer(false, time.Second)
	ctx := context.Background()
	for i := range answers {
		calls++
		addr := net.JoinHostPort(answers[i], strconv.Itoa(port))
		conn, err := d.DialContext(ctx, "tcp", addr)
		if i < 2 {
			require.NoError(t, err)
			conn.Close()
			continue
		}
		require.ErrorIs(t, err, netguard.ErrNotLoopback)
		assert.Contains(t, err.Error(), "10.255.255.1")
	}
	assert.Equal(t, 3, calls)
	assert.Eventually(t, func() bool { return accepted.Load() == 2 }, time.Second, 5*time.Millisecond)
}

// Inside a network namespace with a resolver that answers 127.0.0.1 twice
// and then 10.255.255.1: a plain dialer follows the rebinding (the setup
// is real), the guarded dialer refuses the third address at connect time,
// and Pin and LookupFunc refuse the name without a single DNS query.
func TestNetnsRebinding(t *testing.T) {
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The setup: an unguarded dialer is rebound (and, in this namespace,
	// the third connection cannot leave: ENETUNREACH).
	var plain net.Dialer
	for i := range 3 {
		conn, err := plain.DialContext(ctx, "tcp4", net.JoinHostPort("plain.rebind.test", port))
		if i < 2 {
			require.NoError(t, err, "attempt %d", i+1)
			conn.Close()
		} else {
			require.Error(t, err)
			assert.NotErrorIs(t, err, netguard.ErrNotLoopback)
			assert.Contains(t, err.Error(), "10.255.255.1", "the resolver rebound the name")
		}
	}
	// tcp4 dials ask for A records only: one query per dial.
	require.Equal(t, 3, dns.Queries(), "every dial asked the resolver again")

	// The guarded dialer: same name pattern, refused at connect time.
	before := dns.Queries()
	g := netguard.Dialer(false, time.Second)
	for i := range 3 {
		conn, err := g.DialContext(ctx, "tcp4", net.JoinHostPort("guarded.rebind.test", port))
		if i < 2 {
			require.NoError(t, err, "attempt %d", i+1)
			conn.Close()
		} else {
			require.ErrorIs(t, err, netguard.ErrNotLoopback)
		}
	}
	assert.Greater(t, dns.Queries(), before)
	assert.Eventually(t, func() bool { return accepted.Load() == 4 }, time.Second, 5*time.Millisecond)

	// Pin and LookupFunc: the name is refused and never looked up.
	before = dns.Queries()
	_, err = netguard.Pin(ctx, net.JoinHostPort("pinned.rebind.test", port), false, time.Second)
	require.ErrorIs(t, err, netguard.ErrNotLoopback)
	_, err = netguard.LookupFunc(ctx, "pgx.rebind.test")
	require.ErrorIs(t, err, netguard.ErrNotLoopback)
	addr, err := netguard.Pin(ctx, net.JoinHostPort("localhost", port), false, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:"+port, addr)
	assert.Equal(t, before, dns.Queries(), "no DNS query for a refused name, nor for localhost")
	assert.Eventually(t, func() bool { return accepted.Load() == 5 }, time.Second, 5*time.Millisecond)
}
