package wire

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// classify maps a transport error to its kind. Refused is tested first
// because it is the only kind that proves the server was never reached.
// Parse failures are not seen here: the reader decides "eof" versus
// "malformed" from what arrived (see attempt.readFailed).
func classify(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return KindReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindEOF
	default:
		return KindOther
	}
}
