package idemcheck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Redacted replaces a secret in everything idemcheck writes.
const Redacted = "[redacted]"

// MinSecret is the shortest value hidden wherever it appears: shorter ones
// would blank out ordinary text.
const MinSecret = 4

// MinSecretPrefix is the shortest leading part of a secret hidden where a
// cut runs through the secret (a body kept to --max-body bytes, a long
// line of the target's output shortened). A prefix is hidden when it is at
// least this long and at least half of the secret (in the form it was
// written in): shorter ones tell too little to identify the secret, and
// hiding them would blank out ordinary words at every cut.
const MinSecretPrefix = 6

// defaultSecretHeaders are the header names whose values are credentials
// on every run; secretHeaderWords are the words that make any other name
// one. Names compare without regard to case.
var (
	defaultSecretHeaders = []string{"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
	secretHeaderWords    = []string{"token", "secret", "password", "passwd", "signature", "api-key", "apikey", "api_key"}
)

// Redactor hides the credentials of a run in every string that leaves
// idemcheck: the terminal, the history, the reports, the error messages,
// the target's output it quotes. It lives in the root package, which needs
// only the standard library, so that every layer that writes (runner,
// certify, the command, the renderers' callers) holds the same one; a run
// makes one, the command at its start, and every layer teaches it what it
// learns (a header's value, a query value, a field of a body).
//
// It knows each secret in every form it can be written in: as given, JSON
// escaped, URL escaped (query and path), base64 (standard and URL
// alphabets, padded or not) and HTML escaped. Where a string ends, or is
// shortened with "…" or "...", a leading part of a secret that the cut
// left is hidden too (MinSecretPrefix), and where a string starts, a
// trailing part (a tail of a log).
//
// Header values are hidden by name: Authorization, Proxy-Authorization,
// Cookie, Set-Cookie, X-Api-Key, any name holding token, secret, password,
// passwd, signature, api-key, apikey or api_key, and the names added with
// AddHeader; never Idempotency-Key nor a name given to ExemptHeader (the
// policy's key header). A hidden header's value becomes a known secret.
//
// A Redactor is safe for concurrent use. Its zero value is not: use
// NewRedactor. A nil *Redactor hides nothing.
type Redactor struct {
	mu     sync.RWMutex
	values []string // the secrets as given, each at least MinSecret long
	forms  []string // every form of every secret, longest first
	prefix map[string]bool
	suffix map[string]bool
	minCut int // the shortest key of prefix and suffix
	maxCut int // the longest
	// byHead holds the forms by the hash of their first 4 bytes, longest
	// first, and heads and tails the hashes of every form's first and
	// last 4 bytes: a secret, or a cut's part of one, is looked for only
	// where a string's 4 bytes hash like a form's, so a body with nothing
	// to hide costs one pass of table look-ups.
	byHead       map[uint32][]string
	heads, tails bitset
	names        []string // lower-case header names added
	exempt       []string // lower-case header names never hidden
	fields       []string // JSON pointers into bodies whose values are secrets
	queries      []string // query parameter names whose values are secrets
}

// NewRedactor returns a Redactor that knows no secret yet and hides the
// default credential headers.
func NewRedactor() *Redactor {
	return &Redactor{exempt: []string{"idempotency-key"}, prefix: map[string]bool{}, suffix: map[string]bool{}}
}

// AddSecret makes each value a known secret, hidden wherever it appears.
// A credential with a scheme ("Bearer TOKEN", "Basic …") teaches its token
// too, and a Basic credential its decoded user:password and password.
// Values shorter than MinSecret are ignored.
func (r *Redactor) AddSecret(values ...string) {
	if r == nil {
		return
	}
	var add []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		add = append(add, v)
		scheme, tok, ok := strings.Cut(v, " ")
		if !ok {
			continue
		}
		tok = strings.TrimSpace(tok)
		add = append(add, tok)
		if strings.EqualFold(scheme, "Basic") {
			if dec, err := base64.StdEncoding.DecodeString(tok); err == nil {
				add = append(add, string(dec))
				if _, pass, ok := strings.Cut(string(dec), ":"); ok {
					add = append(add, pass)
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, a := range add {
		if len(a) < MinSecret || slices.Contains(r.values, a) || ordinary(a) {
			continue
		}
		r.values = append(r.values, a)
		changed = true
	}
	if changed {
		r.build()
	}
}

// AddHeader makes each name a credential header: its values are hidden
// by name and become known secrets.
func (r *Redactor) AddHeader(names ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !slices.Contains(r.names, n) {
			r.names = append(r.names, n)
		}
	}
}

// ExemptHeader keeps each name's values in clear, whatever its words: the
// policy's key header, which every history needs to show.
func (r *Redactor) ExemptHeader(names ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !slices.Contains(r.exempt, n) {
			r.exempt = append(r.exempt, n)
		}
	}
}

// AddField makes the values at each JSON pointer (RFC 6901) of a request
// or reply body secrets, once LearnBody has seen them.
func (r *Redactor) AddField(pointers ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pointers {
		if !slices.Contains(r.fields, p) {
			r.fields = append(r.fields, p)
		}
	}
}

// AddQuery makes the values of each query parameter name secrets, once
// LearnQuery has seen them.
func (r *Redactor) AddQuery(names ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(r.queries, n) {
			r.queries = append(r.queries, n)
		}
	}
}

// SecretHeader reports whether a header's values are hidden by its name.
func (r *Redactor) SecretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if slices.Contains(r.exempt, n) {
		return false
	}
	if slices.Contains(defaultSecretHeaders, n) || slices.Contains(r.names, n) {
		return true
	}
	for _, w := range secretHeaderWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// LearnHeader learns the value of a header sent or received as a secret
// when its name says it is one: the whole value, and each value of its
// name=value parts (a Cookie's cookies, a signature's v1=…), of a
// Set-Cookie only the session's.
func (r *Redactor) LearnHeader(name, value string) {
	if !r.SecretHeader(name) {
		return
	}
	r.AddSecret(value)
	parts := strings.FieldsFunc(value, func(c rune) bool { return c == ';' || c == ',' })
	if strings.EqualFold(name, "set-cookie") && len(parts) > 0 {
		// The attributes after the session (Path, Expires) are no secret.
		parts = parts[:1]
	}
	for _, kv := range parts {
		if _, v, ok := strings.Cut(kv, "="); ok {
			if v = strings.Trim(strings.TrimSpace(v), `"`); len(v) >= MinSecretPart {
				r.AddSecret(v)
			}
		}
	}
}

// MinSecretPart is the shortest value of a credential header's name=value
// part (a cookie, a signature's v1=) learned as a secret on its own: the
// short ones are settings (theme=dark, consent=yes, t=1733300000 is 10).
const MinSecretPart = 8

// ordinary reports whether v is a word no secret can be told from: JSON's
// literals, which a secret's redaction would break in every JSON output.
func ordinary(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null":
		return true
	}
	return false
}

// Header returns a copy of h with the values of credential headers
// replaced by Redacted (and learned), and every known secret hidden in the
// other values.
func (r *Redactor) Header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	if r == nil {
		return out
	}
	for name, vs := range out {
		if r.SecretHeader(name) {
			for _, v := range vs {
				r.LearnHeader(name, v)
			}
			out[name] = []string{Redacted}
		}
	}
	for name, vs := range out {
		for i, v := range vs {
			vs[i] = r.String(v)
		}
		out[name] = vs
	}
	return out
}

// LearnQuery learns the values of the secret query parameters (AddQuery)
// of a path or URL, as written and decoded.
func (r *Redactor) LearnQuery(path string) {
	if r == nil {
		return
	}
	r.mu.RLock()
	queries := r.queries
	r.mu.RUnlock()
	if len(queries) == 0 {
		return
	}
	_, raw, ok := strings.Cut(path, "?")
	if !ok {
		return
	}
	raw, _, _ = strings.Cut(raw, "#")
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			dk = k
		}
		if !slices.Contains(queries, dk) {
			continue
		}
		r.AddSecret(v)
		if dv, err := url.QueryUnescape(v); err == nil {
			r.AddSecret(dv)
		}
	}
}

// LearnURL learns a URL's password and the values of its secret query
// parameters (AddQuery).
func (r *Redactor) LearnURL(raw string) {
	if r == nil {
		return
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pass, ok := u.User.Password(); ok {
			r.AddSecret(pass)
		}
	}
	r.LearnQuery(raw)
}

// LearnBody learns the values at the secret JSON pointers (AddField) of a
// body; a body that is not JSON has no fields.
func (r *Redactor) LearnBody(body []byte) {
	if r == nil {
		return
	}
	r.mu.RLock()
	fields := r.fields
	r.mu.RUnlock()
	if len(fields) == 0 {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return
	}
	for _, p := range fields {
		if x, ok := pointerText(v, p); ok {
			r.AddSecret(x)
		}
	}
}

// String returns s with every known secret hidden, in each of its forms,
// and the part of a secret a cut left at the end of s, before a "…" or
// "...", or at its start.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.forms) == 0 {
		return s
	}
	return r.cuts(r.replace(s))
}

// Strings hides every known secret in each of vs, in place, and returns
// vs.
func (r *Redactor) Strings(vs []string) []string {
	for i, v := range vs {
		vs[i] = r.String(v)
	}
	return vs
}

// Error returns err with its message redacted, or err itself when the
// message holds no secret. The redacted error unwraps to err, so that
// errors.Is and errors.As (and an exit code) still see through it.
func (r *Redactor) Error(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError is an error whose message had a secret: it says the
// redacted message and unwraps to the original, for its exit code.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Unredacted returns the error as it was, for a caller that rewrites its
// message and redacts the result itself (the command, whose outputs pass
// through its Redactor).
func (e *redactedError) Unredacted() error { return e.err }

// build remakes the replacer and the prefix tables from r.values. The
// caller holds r.mu for writing.
func (r *Redactor) build() {
	var forms []string
	for _, v := range r.values {
		for _, f := range secretForms(v) {
			if len(f) >= MinSecret && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	// Longest first: at each position the longest secret is hidden, so a
	// secret never leaves the rest of a longer one.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r.forms = forms
	r.byHead, r.heads, r.tails = map[uint32][]string{}, bitset{}, bitset{}
	for _, f := range forms {
		h := window(f, 0)
		r.byHead[h] = append(r.byHead[h], f)
		r.heads.set(h)
		r.tails.set(window(f, len(f)-4))
	}
	r.prefix, r.suffix, r.minCut, r.maxCut = map[string]bool{}, map[string]bool{}, 0, 0
	for _, f := range forms {
		least := max(MinSecretPrefix, (len(f)+1)/2)
		for k := least; k < len(f); k++ {
			r.prefix[f[:k]] = true
			r.suffix[f[len(f)-k:]] = true
			if r.minCut == 0 || k < r.minCut {
				r.minCut = k
			}
			r.maxCut = max(r.maxCut, k)
		}
	}
}

// cuts hides the leading part of a secret before each cut (the end of s,
// a "…", a "...") and the trailing part of one at the start of s.
func (r *Redactor) cuts(s string) string {
	if r.minCut == 0 || len(s) < r.minCut {
		return s
	}
	// The start: a tail kept from a longer log.
	for k := min(r.maxCut, len(s)); k >= r.minCut; k-- {
		if r.tails.has(window(s, k-4)) && r.suffix[s[:k]] {
			s = Redacted + s[k:]
			break
		}
	}
	s = r.cutBefore(s, len(s))
	for _, mark := range []string{"…", "..."} {
		for from := 0; ; {
			i := strings.Index(s[from:], mark)
			if i < 0 {
				break
			}
			at := from + i
			before := len(s)
			s = r.cutBefore(s, at)
			at -= before - len(s)
			from = at + len(mark)
		}
	}
	return s
}

// cutBefore hides the longest leading part of a secret that ends at
// s[at] and returns s; the marker may be longer or shorter than the part
// (cuts moves its next position by the difference).
func (r *Redactor) cutBefore(s string, at int) string {
	for k := min(r.maxCut, at); k >= r.minCut; k-- {
		if r.heads.has(window(s, at-k)) && r.prefix[s[at-k:at]] {
			return s[:at-k] + Redacted + s[at:]
		}
	}
	return s
}

// secretForms is every way v can be written in what idemcheck writes.
func secretForms(v string) []string {
	forms := []string{v}
	// JSON, as Go writes it (<, >, & as \u003c…) and as most others do.
	if b, err := json.Marshal(v); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSuffix(b.String(), "\n")
		forms = append(forms, j[1:len(j)-1], strings.ReplaceAll(j[1:len(j)-1], "/", `\/`))
	}
	forms = append(forms,
		url.QueryEscape(v), url.PathEscape(v),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
		base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
		html.EscapeString(v),
	)
	// Quoted by Go's %q, as an error message may quote it.
	q := strconv.Quote(v)
	forms = append(forms, q[1:len(q)-1])
	return forms
}

// pointerText returns the scalar at an RFC 6901 pointer in v, as text.
func pointerText(v any, pointer string) (string, bool) {
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

// Writer returns a writer that passes what is written to w with every
// secret hidden, a line at a time (a line ends at \n; a line redrawn on a
// terminal, written whole after its \r, is passed at once); Flush writes a
// last line without an end. Unwrap gives w, so that a check for a terminal sees
// through it.
func (r *Redactor) Writer(w io.Writer) *RedactWriter {
	return &RedactWriter{r: r, w: w}
}

// RedactWriter is a Redactor's writer (Redactor.Writer).
type RedactWriter struct {
	r   *Redactor
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

// Write passes every complete line of p, redacted, and keeps the rest
// until its line ends or Flush.
func (rw *RedactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.buf = append(rw.buf, p...)
	end := bytes.LastIndexAny(rw.buf, "\r\n")
	if end < 0 {
		return len(p), nil
	}
	if rw.buf[end] == '\r' {
		// A line redrawn on a terminal (a progress line) is written whole
		// after its \r: it is shown now, not at the next redraw.
		end = len(rw.buf) - 1
	}
	out := rw.redactLines(rw.buf[:end+1])
	rest := append([]byte(nil), rw.buf[end+1:]...)
	rw.buf = rest
	if _, err := rw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactLines redacts each line of b on its own, so that each line's end
// is a cut a secret's leading part is looked for at.
func (rw *RedactWriter) redactLines(b []byte) []byte {
	var out bytes.Buffer
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			out.WriteString(rw.r.String(string(b)))
			break
		}
		out.WriteString(rw.r.String(string(b[:i])))
		out.WriteByte(b[i])
		b = b[i+1:]
	}
	return out.Bytes()
}

// Flush writes what is kept of a line without an end.
func (rw *RedactWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.buf) == 0 {
		return nil
	}
	out := rw.r.String(string(rw.buf))
	rw.buf = nil
	_, err := io.WriteString(rw.w, out)
	return err
}

// Unwrap returns the writer written to.
func (rw *RedactWriter) Unwrap() io.Writer { return rw.w }

// bitset is a set of 4-byte windows' hashes.
type bitset [1 << 10]uint64

func (b *bitset) set(h uint32)      { b[h>>6] |= 1 << (h & 63) }
func (b *bitset) has(h uint32) bool { return b[h>>6]&(1<<(h&63)) != 0 }

// window is the hash, 16 bits, of the 4 bytes of s at i.
func window(s string, i int) uint32 {
	w := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
	return (w * 2654435761) >> 16
}

// replace hides every form of every secret in s, in one pass: at each
// position whose 4 bytes hash like a form's start, the longest form there.
func (r *Redactor) replace(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+4 <= len(s); {
		h := window(s, i)
		if !r.heads.has(h) {
			i++
			continue
		}
		hit := ""
		for _, f := range r.byHead[h] {
			if strings.HasPrefix(s[i:], f) {
				hit = f
				break
			}
		}
		if hit == "" {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(Redacted)
		i += len(hit)
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
