package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// SelfSignedTLS returns a server TLS configuration holding a certificate
// for 127.0.0.1, ::1 and localhost, made now, signed by its own key and
// valid for a day, offering h2 and http/1.1 by ALPN. No client can verify
// it: clients skip verification (InsecureTLS, idemcheck's --insecure).
func SelfSignedTLS() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "idemcheck bench race target"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"h2", "http/1.1"},
	}, nil
}

// InsecureTLS is the client TLS configuration for a race target's
// self-signed certificate: verification skipped, as idemcheck's --insecure
// does.
func InsecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }

// ServeTLS serves h on ln over TLS with cfg (SelfSignedTLS), HTTP/2 or
// HTTP/1.1 as each connection's ALPN decides, until ln is closed. A
// handshake its client ended (idemcheck's check that the target speaks
// TLS hangs up once it knows) is not logged; other errors go to stderr.
func ServeTLS(ln net.Listener, h http.Handler, cfg *tls.Config) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg,
		ErrorLog: log.New(quietHandshakes{os.Stderr}, "", log.LstdFlags)}
	return srv.ServeTLS(ln, "", "")
}

// quietHandshakes drops the lines of net/http's log that say a client
// ended a TLS handshake.
type quietHandshakes struct{ w io.Writer }

func (q quietHandshakes) Write(p []byte) (int, error) {
	if s := string(p); strings.Contains(s, "TLS handshake error") && strings.HasSuffix(strings.TrimSpace(s), ": EOF") {
		return len(p), nil
	}
	return q.w.Write(p)
}
