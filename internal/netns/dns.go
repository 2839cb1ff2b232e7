package netns

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// DNS is a tiny DNS server on 127.0.0.1:53 (UDP), the resolver that the
// namespace's resolv.conf names. It answers A queries from Answer and
// AAAA queries with no address, and counts every query it receives.
type DNS struct {
	// Answer gives the IPv4 address of the n-th A query (from 1) for
	// name; an invalid address answers NXDOMAIN.
	Answer func(name string, n int) netip.Addr

	mu      sync.Mutex
	queries map[string]int // name -> A queries
	total   int
}

// ServeDNS starts d on 127.0.0.1:53 until the test ends. It must run
// inside the namespace (Enter), where nothing else holds port 53.
func ServeDNS(t *testing.T, d *DNS) {
	t.Helper()
	if !Inside() {
		t.Fatal("netns.ServeDNS outside the test namespace")
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		t.Fatalf("dns: %v", err)
	}
	d.queries = map[string]int{}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := d.reply(buf[:n]); reply != nil {
				pc.WriteTo(reply, from)
			}
		}
	}()
}

// Queries returns how many queries of any kind the server received.
func (d *DNS) Queries() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// reply answers one query, or returns nil for something that is not one.
func (d *DNS) reply(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	// The question: labels, then type and class.
	var labels []string
	i := 12
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i:i+l]))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i : i+2])
	question := q[12 : i+4]
	name := strings.ToLower(strings.Join(labels, "."))

	d.mu.Lock()
	d.total++
	var addr netip.Addr
	if qtype == 1 {
		d.queries[name]++
		addr = d.Answer(name, d.queries[name])
	}
	d.mu.Unlock()

	out := make([]byte, 12, 12+len(question)+16)
	copy(out[0:2], q[0:2])                       // id
	binary.BigEndian.PutUint16(out[2:4], 0x8180) // response, recursion desired and available
	binary.BigEndian.PutUint16(out[4:6], 1)      // one question
	if qtype == 1 && !addr.Is4() {
		out[3] |= 3 // NXDOMAIN
	}
	out = append(out, question...)
	if qtype == 1 && addr.Is4() {
		binary.BigEndian.PutUint16(out[6:8], 1) // one answer
		a4 := addr.As4()
		out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4) // name pointer, A, IN, TTL 0, length 4
		out = append(out, a4[:]...)
	}
	return out
}
