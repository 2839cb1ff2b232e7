//go:build !linux

package wire

import (
	"net"
	"time"
)

// tcpState: the kernel's acknowledgement count is read on Linux only;
// elsewhere the prefix wait rests on the measured round trip alone.
func tcpState(net.Conn) (acked bool, rtt time.Duration, ok bool) { return false, 0, false }
