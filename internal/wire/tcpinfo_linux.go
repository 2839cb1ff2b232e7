package wire

import (
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpState is what the kernel says of a connection's sent bytes: whether
// every one was acknowledged by the peer, and its smoothed round trip.
// ok is false where the kernel could not be asked (not a TCP connection).
func tcpState(c net.Conn) (acked bool, rtt time.Duration, ok bool) {
	if tc, isTLS := c.(*tls.Conn); isTLS {
		c = tc.NetConn()
	}
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return false, 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return false, 0, false
	}
	return info.Unacked == 0 && info.Notsent_bytes == 0, time.Duration(info.Rtt) * time.Microsecond, true
}
