// Package netguard keeps idemcheck's traffic on this machine unless the
// user allows otherwise (--allow-remote). It has two layers:
//
//   - Check decides, before anything is sent, whether a host may be
//     used, and Resolve turns it into the addresses it checked, so that
//     every later connection goes to one of them and never asks a resolver
//     again (no DNS rebinding between the check and the connection);
//   - Control refuses, at connect time, any address that is not loopback.
//     Every dialer idemcheck owns while loopback-only (the harness's HTTP
//     client, the reachability probe, the soak's transport, the database
//     pool) carries it, so even a path that forgot to resolve through
//     Resolve cannot reach another machine.
//
// The fault proxy (toxiproxy) dials with its own dialer; it is handed the
// IP:port Resolve checked, never a name.
//
// The rule for names, without --allow-remote: loopback IP literals are
// accepted, and so are "localhost" and "*.localhost" (RFC 6761 reserves
// them for loopback) and names that the hosts file maps to loopback
// addresses only. Any other name is refused without being looked up: a DNS
// query is itself traffic off this machine (it goes to whatever resolver
// the system uses, and tells it which staging host is being tested), and
// its answer could change between the check and the connection. The hosts
// file is read directly, so what it says is known without a query; a name
// it maps to any address off loopback is refused too. With --allow-remote
// nothing is checked and names resolve as usual.
//
// It imports nothing of idemcheck but the root package (for the setting a
// refusal names, AllowRemote), so any layer that may use the root may use
// it.
package netguard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemcheck/idemcheck"
)

// ErrNotLoopback is wrapped by every refusal of this package.
var ErrNotLoopback = errors.New("not loopback")

// refusal is a refusal's error: its own message, and ErrNotLoopback for
// errors.Is.
type refusal string

func (r refusal) Error() string        { return string(r) }
func (r refusal) Is(target error) bool { return target == ErrNotLoopback }

func refusef(format string, args ...any) error { return refusal(fmt.Sprintf(format, args...)) }

// HostsFile is the hosts file Check reads (a variable for tests).
var HostsFile = "/etc/hosts"

// Check reports whether host (a name or an IP literal, without port or
// brackets) may be used without --allow-remote: nil, or an error wrapping
// ErrNotLoopback that says why and how to fix it. It sends nothing.
func Check(host string) error {
	_, err := Loopback(host)
	return err
}

// Loopback returns the loopback addresses host stands for, by the rule in
// the package documentation, or an error wrapping ErrNotLoopback. It sends
// nothing: no DNS query is made.
func Loopback(host string) ([]netip.Addr, error) {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if h == "" {
		return nil, refusef("empty host")
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		ip = ip.Unmap()
		if !ip.IsLoopback() {
			return nil, refusef("%s is not loopback", ip)
		}
		return []netip.Addr{ip.WithZone("")}, nil
	}
	lower := strings.ToLower(h)
	addrs, err := hostsLookup(lower)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !a.IsLoopback() {
			return nil, refusef("%s maps %s to %s, which is not loopback", HostsFile, h, a)
		}
	}
	if len(addrs) > 0 {
		return addrs, nil
	}
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	return nil, refusef("%s is neither localhost nor mapped to loopback by %s, and names are not looked up in DNS (a query leaves this machine)", h, HostsFile)
}

// hostsLookup returns the addresses the hosts file gives name, in order.
// A missing hosts file maps nothing.
func hostsLookup(name string) ([]netip.Addr, error) {
	b, err := os.ReadFile(HostsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refusef("read %s: %v", HostsFile, err)
	}
	var addrs []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		ip, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		for _, n := range f[1:] {
			if strings.EqualFold(strings.TrimSuffix(n, "."), name) {
				addrs = append(addrs, ip.Unmap().WithZone(""))
				break
			}
		}
	}
	return addrs, nil
}

// Control is a net.Dialer Control function that refuses every address off
// loopback: it runs after name resolution, on the address about to be
// connected, so nothing a resolver answers can move a connection off this
// machine. Unix sockets are local and allowed.
func Control(network, address string, _ syscall.RawConn) error {
	if strings.HasPrefix(network, "unix") {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refusef("refused to connect to %q: not an IP address and port", address)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		// The way out is named as the setting it is (AllowRemote), so
		// that the message reaching a history or a Go program names no
		// flag, and the command says it as its flag.
		return idemcheck.Fieldf(idemcheck.ExitUsage, "AllowRemote", "refused to connect to %s: %w (%s to send traffic off this machine)",
			address, refusef("%s is not loopback", ap.Addr()), idemcheck.Setting("AllowRemote"))
	}
	return nil
}

// Dialer returns a dialer with timeout that, unless allowRemote, connects
// to loopback addresses only (Control).
func Dialer(allowRemote bool, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if !allowRemote {
		d.Control = Control
	}
	return d
}

// Candidates returns the addresses (IP:port) idemcheck may connect to for
// host and port: without allowRemote, the loopback addresses of Loopback;
// with it, hostport unchanged (resolved as usual when dialed).
func Candidates(host string, port string, allowRemote bool) ([]string, error) {
	if allowRemote {
		return []string{net.JoinHostPort(host, port)}, nil
	}
	ips, err := Loopback(host)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = net.JoinHostPort(ip.String(), port)
	}
	return out, nil
}

// Pin connects once to each of hostport's candidate addresses in turn
// (Candidates) and returns the first that accepts, so that everything
// after goes to an address that was both checked and reachable. The error
// of a refused host wraps ErrNotLoopback; otherwise it is the last dial's.
func Pin(ctx context.Context, hostport string, allowRemote bool, timeout time.Duration) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("invalid port %q", port)
	}
	cands, err := Candidates(host, port, allowRemote)
	if err != nil {
		return "", err
	}
	d := Dialer(allowRemote, timeout)
	for _, addr := range cands {
		var conn net.Conn
		if conn, err = d.DialContext(ctx, "tcp", addr); err == nil {
			conn.Close()
			return addr, nil
		}
	}
	return "", err
}

// LookupFunc is a resolver for libraries that resolve names themselves
// (pgx's LookupFunc): it answers from Loopback, never from DNS, so without
// --allow-remote they cannot send a query either.
func LookupFunc(_ context.Context, host string) ([]string, error) {
	ips, err := Loopback(host)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out, nil
}
