// Package openapi turns an OpenAPI description into the endpoints
// idemcheck certifies: one per unsafe operation, with a request body built
// from the schema, the key header the operation declares, policy hints from
// its declared responses, and, where the API has a list operation that
// filters by a field the body sets, an effect counted through the API
// itself. Operations that cannot be certified are listed with the reason.
//
// It reads OpenAPI 3.0 and 3.1, and Swagger 2.0 through its conversion to
// 3.0. The generator walks schemas with a visited set and a step budget, so
// $ref cycles, deep allOf chains and recursive schemas end.
//
// It imports internal/netguard (a spec fetched by URL stays on loopback)
// and nothing else of idemcheck: the command turns what it finds into a
// suite.
package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/userfile"
)

// MaxSpecBytes bounds a description read from a file or URL: the largest
// public ones are a few megabytes.
const MaxSpecBytes = 64 << 20

// Error is a description that cannot be read, with the source it names.
type Error struct {
	Source string
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("--openapi %s: %s", e.Source, e.Msg) }

// ErrNotLoopback marks a URL refused by the loopback rule.
var ErrNotLoopback = netguard.ErrNotLoopback

// Load reads a description from a file, or from an http(s) URL, which
// without allowRemote must be on this machine (the netguard rule: the name
// is not looked up, and the connection goes to the address checked).
func Load(ctx context.Context, src string, allowRemote bool) (*openapi3.T, error) {
	data, err := read(ctx, src, allowRemote)
	if err != nil {
		return nil, err
	}
	return Parse(src, data)
}

func read(ctx context.Context, src string, allowRemote bool) ([]byte, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		f, err := os.Open(src)
		if err != nil {
			return nil, &Error{Source: src, Msg: fmt.Sprintf("cannot read it: %v", userfile.Cause(err))}
		}
		defer f.Close()
		return readAll(src, f)
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return nil, &Error{Source: src, Msg: "not an absolute http:// or https:// URL"}
	}
	if u.User != nil {
		return nil, &Error{Source: u.Redacted(), Msg: "carries credentials: idemcheck does not send them to fetch a description"}
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr, err := netguard.Pin(ctx, net.JoinHostPort(u.Hostname(), port), allowRemote, 3*time.Second)
	if err != nil {
		if errors.Is(err, netguard.ErrNotLoopback) {
			return nil, &Error{Source: src, Msg: fmt.Sprintf("host %s: %v; use 127.0.0.1 or localhost, or pass --allow-remote", u.Hostname(), err)}
		}
		return nil, &Error{Source: src, Msg: fmt.Sprintf("cannot reach it: %v", err)}
	}
	d := netguard.Dialer(allowRemote, 3*time.Second)
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
		},
		// A redirect could lead off the address checked: refused.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Error{Source: src, Msg: err.Error()}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, &Error{Source: src, Msg: fmt.Sprintf("GET failed: %v", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Source: src, Msg: fmt.Sprintf("GET answered %s, not 200", resp.Status)}
	}
	return readAll(src, resp.Body)
}

func readAll(src string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, &Error{Source: src, Msg: fmt.Sprintf("cannot read it: %v", err)}
	}
	if len(b) > MaxSpecBytes {
		return nil, &Error{Source: src, Msg: fmt.Sprintf("larger than %d MB", MaxSpecBytes>>20)}
	}
	return b, nil
}

// Parse reads a description's text, YAML or JSON: OpenAPI 3.0 or 3.1 as it
// is, Swagger 2.0 converted to 3.0. References to other files or URLs are
// refused, so parsing reads nothing but data.
func Parse(src string, data []byte) (doc *openapi3.T, err error) {
	// The parser is a library: a description that makes it panic is a bad
	// description, not a crash of idemcheck.
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, &Error{Source: src, Msg: fmt.Sprintf("the OpenAPI parser failed on it: %v", r)}
		}
	}()
	var head struct {
		OpenAPI any `yaml:"openapi"`
		Swagger any `yaml:"swagger"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, &Error{Source: src, Msg: "neither YAML nor JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	switch {
	case head.Swagger != nil:
		if v := fmt.Sprint(head.Swagger); v != "2.0" {
			return nil, &Error{Source: src, Msg: fmt.Sprintf("swagger: %q is not a version idemcheck reads (2.0, or OpenAPI 3.0 and 3.1)", v)}
		}
		return parseV2(src, data)
	case head.OpenAPI == nil:
		return nil, &Error{Source: src, Msg: "has no openapi (or swagger) version field: is it an OpenAPI description?"}
	}
	v := fmt.Sprint(head.OpenAPI)
	if !strings.HasPrefix(v, "3.0") && !strings.HasPrefix(v, "3.1") {
		return nil, &Error{Source: src, Msg: fmt.Sprintf("openapi: %q is not a version idemcheck reads (3.0, 3.1, or Swagger 2.0)", v)}
	}
	l := openapi3.NewLoader()
	l.IsExternalRefsAllowed = false
	doc, err = l.LoadFromData(data)
	if err != nil {
		return nil, &Error{Source: src, Msg: "not a readable OpenAPI description: " + oneLine(err.Error())}
	}
	if doc.Paths == nil {
		doc.Paths = openapi3.NewPaths()
	}
	return doc, nil
}

func parseV2(src string, data []byte) (*openapi3.T, error) {
	var tree any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, &Error{Source: src, Msg: "not valid YAML: " + err.Error()}
	}
	js, err := userfile.JSON(tree)
	if err != nil {
		return nil, &Error{Source: src, Msg: "cannot be read as JSON: " + err.Error()}
	}
	var d2 openapi2.T
	if err := json.Unmarshal(js, &d2); err != nil {
		return nil, &Error{Source: src, Msg: "not a readable Swagger 2.0 description: " + oneLine(err.Error())}
	}
	doc, err := openapi2conv.ToV3(&d2)
	if err != nil {
		return nil, &Error{Source: src, Msg: "its Swagger 2.0 cannot be converted to OpenAPI 3.0: " + oneLine(err.Error())}
	}
	l := openapi3.NewLoader()
	l.IsExternalRefsAllowed = false
	if err := l.ResolveRefsIn(doc, nil); err != nil {
		return nil, &Error{Source: src, Msg: "its references cannot be resolved: " + oneLine(err.Error())}
	}
	if doc.Paths == nil {
		doc.Paths = openapi3.NewPaths()
	}
	return doc, nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
