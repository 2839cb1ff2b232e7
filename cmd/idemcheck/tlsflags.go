package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/userfile"
)

// tlsFlags are the TLS options of a run against an https:// target. They
// make one client configuration that every connection to the target uses:
// the attempts, bursts (HTTP/1.1 and h2), the effect read-back.
type tlsFlags struct {
	caCert, cert, key string
	insecure          bool
	// config is what load built; nil when no TLS flag was given (the
	// system's roots, no client certificate).
	config *tls.Config
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.caCert, "cacert", "", "PEM `FILE` of CA certificates to trust for an https:// target, beside the system's (a self-signed or internal CA)")
	fs.StringVar(&t.cert, "cert", "", "PEM `FILE` of the client certificate for mutual TLS (with --key)")
	fs.StringVar(&t.key, "key", "", "PEM `FILE` of the client certificate's private key (with --cert)")
	fs.BoolVar(&t.insecure, "insecure", false, "do not verify the https:// target's certificate (the report says so); prefer --cacert")
}

// given names the first TLS flag given, or returns "".
func (t *tlsFlags) given() string {
	switch {
	case t.caCert != "":
		return "--cacert"
	case t.cert != "":
		return "--cert"
	case t.key != "":
		return "--key"
	case t.insecure:
		return "--insecure"
	}
	return ""
}

// forURL refuses a TLS flag with a target that is not https://, before
// anything is started or sent.
func (t *tlsFlags) forURL(rawURL string) error {
	if g := t.given(); g != "" && !isHTTPS(rawURL) {
		return idemcheck.Usagef("%s goes with an https:// --url (a target idemcheck starts with --cmd or --image is reached over http://)", g)
	}
	return nil
}

func isHTTPS(rawURL string) bool { return strings.HasPrefix(strings.ToLower(rawURL), "https://") }

// load reads the files the flags name, before anything is sent.
func (t *tlsFlags) load() error {
	if t.caCert == "" && t.cert == "" && t.key == "" && !t.insecure {
		return nil
	}
	switch {
	case t.cert != "" && t.key == "":
		return idemcheck.Usagef("--cert %s needs --key FILE: the client certificate's private key", t.cert)
	case t.key != "" && t.cert == "":
		return idemcheck.Usagef("--key %s needs --cert FILE: the client certificate it belongs to", t.key)
	}
	cfg := &tls.Config{InsecureSkipVerify: t.insecure}
	if t.caCert != "" {
		pem, err := userfile.Read(t.caCert, userfile.MaxPEM)
		if err != nil {
			return idemcheck.Usagef("--cacert %s cannot be read: %v", t.caCert, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return idemcheck.Usagef("--cacert %s holds no PEM certificate: give a file of -----BEGIN CERTIFICATE----- blocks", t.caCert)
		}
		cfg.RootCAs = pool
	}
	if t.cert != "" {
		var pems [2][]byte
		for i, f := range []struct{ flag, path string }{{"--cert", t.cert}, {"--key", t.key}} {
			b, err := userfile.Read(f.path, userfile.MaxPEM)
			if err != nil {
				return idemcheck.Usagef("%s %s cannot be read: %v", f.flag, f.path, err)
			}
			pems[i] = b
		}
		pair, err := tls.X509KeyPair(pems[0], pems[1])
		if err != nil {
			return idemcheck.Usagef("--cert %s / --key %s: not a PEM certificate and its matching private key: %v", t.cert, t.key, unwrapTLSLoad(err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	t.config = cfg
	return nil
}

func unwrapTLSLoad(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
