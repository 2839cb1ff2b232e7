package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// RefusedError stops a run whose pre-flight request the target refused:
// it answered the request as configured, with a fresh key, with a 4xx
// (Status). Nothing a retry does can then be tested, and every check
// would report the configuration's fault as the API's.
type RefusedError struct {
	Status int
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the target answers %d to the request itself", e.Status)
}

// ClientTLS is the TLS configuration for a connection to base: a clone of
// cfg (nil: the system's roots) with the server name set from base when
// cfg names none.
func ClientTLS(cfg *tls.Config, base *url.URL) *tls.Config {
	out := &tls.Config{}
	if cfg != nil {
		out = cfg.Clone()
	}
	if out.ServerName == "" {
		out.ServerName = base.Hostname()
	}
	return out
}

// preflight sends the request as configured, once, for a fresh intent
// that no check uses, before any check. It is what a client's first call
// is, so its answer tells whether there is anything to retry at all:
//
//   - a 4xx (other than a status that says "try again later": 408, 425,
//     429, or one the policy names for a request in progress) means the
//     target refuses the request itself; the run stops with a
//     *RefusedError before the checks send their hundreds of attempts;
//   - a TLS failure (an untrusted certificate, a client certificate the
//     server wants) stops it with a usage error naming the flags to fix;
//   - no answer at all within the attempt's time limit stops it with a
//     *SilentError: every attempt after it would wait as long.
//
// Any other answer, or a transport failure, lets the run go on: the checks
// record and judge what the target does. The pre-flight is not recorded
// in the history; its intent counts nothing the checks count. On a target
// whose database link the harness holds, the effect writes it caused tell
// the session how many writes the handler makes (do), before any check
// chooses the write a fault acts on (nthByRound).
func (s *session) preflight(ctx context.Context) error {
	in := idemcheck.Intent{ID: fmt.Sprintf("ic-%s-0", s.run), Key: uuid.NewString()}
	req, _ := s.request(in, "")
	if err := s.pace.wait(ctx, 1); err != nil {
		return err
	}
	res := s.doCounting(ctx, s.direct, req, in)
	// Its calls to provider doubles are not the checks' either.
	s.dropCalls()
	if err := ctx.Err(); err != nil {
		return err
	}
	if res.Err != nil {
		if p := TLSProblem(res.Err); p != nil {
			return p
		}
		if res.ErrKind == wire.KindTimeout && res.FirstByte.IsZero() {
			// Not a byte in the whole time an attempt has: every attempt
			// of every check would wait as long for nothing.
			return &SilentError{Timeout: s.client.Timeout}
		}
		return nil
	}
	st := res.Status
	if st < 400 || st > 499 || st == 408 || st == 425 || st == 429 || s.Policy.InProgress(st) {
		return nil
	}
	return &RefusedError{Status: st}
}

// SilentError is a pre-flight the target did not answer, not even with a
// byte, within an attempt's time limit: a target that accepts connections
// and never answers. The run stops then, as one that answered nothing
// would end in no answers only after every check's attempts had waited as
// long.
type SilentError struct {
	// Timeout is the attempt's time limit the pre-flight waited.
	Timeout time.Duration
}

func (e *SilentError) Error() string { return e.Unwrap().Error() }

// Unwrap is the error as a *idemcheck.FieldError about Timeout (exit
// code ExitUnavailable), so that the setting a slow target needs is named
// in the caller's words: the Go field, the command's flag.
func (e *SilentError) Unwrap() error {
	t := e.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	return idemcheck.Fieldf(idemcheck.ExitUnavailable, "Timeout", "the target gave no answer to the pre-flight request in %v: is it serving this path, or stuck? (a slow one needs a longer %s)",
		t, idemcheck.Field("Timeout"))
}

// TLSProblem turns a TLS failure (of the pre-flight, or of a handshake
// before it) into a usage error naming the settings that fix it (an
// *idemcheck.FieldError: fields of the TLS configuration), and returns nil
// for any other failure.
func TLSProblem(err error) error {
	var (
		ve  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &he):
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Endpoint.Base", "the target's TLS certificate does not name the %s host: %v (use the host it names, or %s to skip verification)",
			idemcheck.Field("Endpoint.Base"), he, idemcheck.Field("TLS.InsecureSkipVerify"))
	case errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &cie):
		return idemcheck.Fieldf(idemcheck.ExitUsage, "TLS.RootCAs", "the target's TLS certificate is not trusted: %v: %s with the CA that signed it (PEM), or %s to skip verification",
			unwrapTLS(err), idemcheck.Setting("TLS.RootCAs"), idemcheck.Field("TLS.InsecureSkipVerify"))
	}
	msg := err.Error()
	if strings.Contains(msg, "remote error: tls:") && strings.Contains(msg, "certificate") {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "TLS.Certificates", "the target refused the TLS connection (%s): it wants a client certificate it trusts: %s",
			msg[strings.Index(msg, "remote error: tls:"):], idemcheck.Setting("TLS.Certificates"))
	}
	return nil
}

func unwrapTLS(err error) string {
	s := err.Error()
	if i := strings.Index(s, "tls: "); i >= 0 {
		return s[i:]
	}
	return s
}
