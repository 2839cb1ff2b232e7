package scenarios

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// secretHeaders are redacted in every history and report.
var secretHeaders = []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"}

// Redacted replaces a secret in every history and report.
const Redacted = "[redacted]"

// minSecret is the shortest value hidden wherever it appears: shorter ones
// would blank out ordinary text.
const minSecret = 4

// secrets hides the credentials a run is given in everything it records.
// The values of secret headers (Authorization, Cookie and the ones named
// to redact, tenants' included) are replaced where they are sent, and
// learned, so that the same value is hidden wherever else it shows up: in
// a body or path, in a reply that echoes it, in an error. Literal values
// (the expansions of ${NAME} in a suite) are hidden the same way.
type secrets struct {
	names map[string]bool // canonical header names
	// fields are JSON pointers into request and reply bodies, and queries
	// are query parameter names, whose values are credentials too.
	fields, queries []string

	mu     sync.Mutex
	values []string // longest first, so a value never hides part of a longer one
}

func newSecrets(names, values, fields, queries []string) *secrets {
	s := &secrets{names: map[string]bool{}, fields: fields, queries: queries}
	for _, n := range append(slices.Clone(secretHeaders), names...) {
		s.names[http.CanonicalHeaderKey(n)] = true
	}
	for _, v := range values {
		s.learn(v)
	}
	return s
}

// learn adds a value to hide and, for a credential with a scheme ("Bearer
// TOKEN", "Basic ..."), its token alone.
func (s *secrets) learn(v string) {
	v = strings.TrimSpace(v)
	add := []string{v}
	if _, tok, ok := strings.Cut(v, " "); ok {
		add = append(add, strings.TrimSpace(tok))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range add {
		if len(a) >= minSecret && !slices.Contains(s.values, a) {
			s.values = append(s.values, a)
		}
	}
	slices.SortFunc(s.values, func(a, b string) int { return len(b) - len(a) })
}

// header returns a copy of h with secret headers' values replaced and
// learned, and known secrets hidden in the other values.
func (s *secrets) header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for name, vs := range out {
		if s.names[http.CanonicalHeaderKey(name)] {
			for _, v := range vs {
				s.learn(v)
			}
			out[name] = []string{Redacted}
		}
	}
	for name, vs := range out {
		for i, v := range vs {
			vs[i] = s.text(v)
		}
		out[name] = vs
	}
	return out
}

// text hides every known secret in v.
func (s *secrets) text(v string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sec := range s.values {
		if strings.Contains(v, sec) {
			v = strings.ReplaceAll(v, sec, Redacted)
		}
	}
	return v
}

// learnBody learns the values at the secret JSON pointers of a body, so
// that text hides them wherever they appear; the body's bytes are left as
// they are (a body that is not JSON has no fields).
func (s *secrets) learnBody(body []byte) {
	if len(s.fields) == 0 {
		return
	}
	v, ok := decodeJSON(body)
	if !ok {
		return
	}
	for _, p := range s.fields {
		if x, ok := pointerValue(v, p); ok {
			s.learn(x)
		}
	}
}

// learnQuery learns the values of the secret query parameters of a path,
// as sent and decoded.
func (s *secrets) learnQuery(path string) {
	if len(s.queries) == 0 {
		return
	}
	_, raw, ok := strings.Cut(path, "?")
	if !ok {
		return
	}
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			dk = k
		}
		if !slices.Contains(s.queries, dk) {
			continue
		}
		s.learn(v)
		if dv, err := url.QueryUnescape(v); err == nil {
			s.learn(dv)
		}
	}
}

// pointerValue returns the scalar at an RFC 6901 pointer in v, as text.
func pointerValue(v any, pointer string) (string, bool) {
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return "", false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			v = c[i]
		default:
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return "", false
}
