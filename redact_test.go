package idemcheck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// secretForTest has characters every escaping changes: JSON's &, a space
// and a slash for the URL escapes, + and / in its base64.
const secretForTest = "tok&SECRET/a b+c?>~9f3"

// Every form of a known secret is hidden: as given, JSON-escaped (Go's and
// others'), URL-escaped (query and path), base64 in both alphabets, padded
// or not, HTML-escaped, quoted.
func TestRedactorHidesEveryForm(t *testing.T) {
	r := NewRedactor()
	r.AddSecret(secretForTest)
	goJSON, _ := json.Marshal(secretForTest)
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secretForTest)
	forms := map[string]string{
		"raw":            secretForTest,
		"json (Go)":      string(goJSON),
		"json":           plain.String(),
		"query":          url.QueryEscape(secretForTest),
		"path":           url.PathEscape(secretForTest),
		"base64":         base64.StdEncoding.EncodeToString([]byte(secretForTest)),
		"base64 raw":     base64.RawStdEncoding.EncodeToString([]byte(secretForTest)),
		"base64 url":     base64.URLEncoding.EncodeToString([]byte(secretForTest)),
		"base64 url raw": base64.RawURLEncoding.EncodeToString([]byte(secretForTest)),
		"html":           "tok&amp;SECRET/a b+c?&gt;~9f3",
	}
	for name, form := range forms {
		got := r.String("before " + form + " after")
		if strings.Contains(got, strings.Trim(strings.TrimSpace(form), `"`)) || !strings.Contains(got, Redacted) {
			t.Errorf("%s form %q left in %q", name, form, got)
		}
	}
}

// A cut through a secret (the end of a kept body, a "…" of a shortened
// line, the start of a log's tail) hides what is left of it once that is
// MinSecretPrefix long and half the secret; a shorter part stays.
func TestRedactorHidesASecretCutThrough(t *testing.T) {
	const sec = "tok-SECRET-0123456789"
	r := NewRedactor()
	r.AddSecret("Bearer " + sec)
	for _, c := range []struct{ in, gone string }{
		{`{"echo":"Bearer tok-SECRE`, "tok-SECRE"},
		{"Authorization: Bearer tok-SECRET-01… more", "tok-SECRET-01"},
		{"line one\ntok-SECRET-01...\nline three", "tok-SECRET-01"},
		{"T-0123456789 was the end of the log", "T-0123456789"},
	} {
		if got := r.String(c.in); strings.Contains(got, c.gone) {
			t.Errorf("%q: left %q in %q", c.in, c.gone, got)
		}
	}
	// Too short to identify: ordinary text at a cut stays.
	if got := r.String("see tok-S"); got != "see tok-S" {
		t.Errorf("a 5-byte prefix was hidden: %q", got)
	}
}

// Header values are hidden by name (the default list, names with a
// credential's word, names added), never the key header; a hidden value
// and each of a Cookie's values become secrets everywhere else.
func TestRedactorHidesHeadersByName(t *testing.T) {
	r := NewRedactor()
	r.AddHeader("X-Tenant")
	r.ExemptHeader("X-Idempotency-Token")
	h := http.Header{
		"Authorization":       {"Bearer abcdef-1"},
		"Proxy-Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("user:pa55word-2"))},
		"Cookie":              {"theme=dark; consent=true; session=sess-value-3"},
		"Set-Cookie":          {"sid=setcookie-4; Path=/; HttpOnly"},
		"X-Api-Key":           {"apikey-value-5"},
		"X-Csrf-Token":        {"csrf-value-6"},
		"X-Hub-Signature-256": {"sha256=sig-value-7"},
		"X-Tenant":            {"tenant-value-8"},
		"Idempotency-Key":     {"key-stays-9"},
		"X-Idempotency-Token": {"key-stays-10"},
		"X-Echo":              {"echoed sess-value-3 and pa55word-2"},
	}
	out := r.Header(h)
	for name, vs := range out {
		switch name {
		case "Idempotency-Key", "X-Idempotency-Token":
			if vs[0] != h[name][0] {
				t.Errorf("%s was hidden: %q", name, vs)
			}
		case "X-Echo":
			if vs[0] != "echoed [redacted] and [redacted]" {
				t.Errorf("echo: %q", vs[0])
			}
		default:
			if vs[0] != Redacted {
				t.Errorf("%s kept %q", name, vs)
			}
		}
	}
	for _, v := range []string{"abcdef-1", "pa55word-2", "sess-value-3", "setcookie-4", "apikey-value-5", "csrf-value-6", "sig-value-7", "tenant-value-8"} {
		if got := r.String("x " + v + " y"); strings.Contains(got, v) {
			t.Errorf("%s not learned from its header: %q", v, got)
		}
	}
	// A cookie's setting is no secret, and JSON's literals never are.
	r.AddSecret("null")
	if got := r.String(`{"theme":"dark","ok":true,"v":null}`); got != `{"theme":"dark","ok":true,"v":null}` {
		t.Errorf("ordinary words hidden: %q", got)
	}
	if h.Get("Authorization") != "Bearer abcdef-1" {
		t.Error("Header changed its argument")
	}
}

// Query values and body fields named as secrets are learned from what is
// sent.
func TestRedactorLearnsQueryAndFields(t *testing.T) {
	r := NewRedactor()
	r.AddQuery("api_key")
	r.AddField("/card/number")
	r.LearnQuery("/orders?x=1&api_key=k%2Fey-value&y=2")
	r.LearnBody([]byte(`{"card":{"number":"4242424242424242"}}`))
	for _, v := range []string{"k/ey-value", "k%2Fey-value", "4242424242424242"} {
		if got := r.String("[" + v + "]"); strings.Contains(got, v) {
			t.Errorf("%s not hidden: %q", v, got)
		}
	}
}

// The writer hides secrets line by line, also a secret split over two
// writes, and its Flush writes the last line.
func TestRedactWriter(t *testing.T) {
	r := NewRedactor()
	r.AddSecret("hunter2-secret")
	var b bytes.Buffer
	w := r.Writer(&b)
	_, _ = w.Write([]byte("one hunter2-"))
	_, _ = w.Write([]byte("secret two\nthree hunter2-secret"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "one [redacted] two\nthree [redacted]" {
		t.Errorf("got %q", got)
	}
	// A progress line redrawn after \r is shown at once, redacted.
	b.Reset()
	_, _ = w.Write([]byte("\r\033[Kstep 1 hunter2-secret"))
	if got := b.String(); got != "\r\033[Kstep 1 [redacted]" {
		t.Errorf("progress: got %q", got)
	}
}

// A nil Redactor hides nothing and does not panic.
func TestNilRedactor(t *testing.T) {
	var r *Redactor
	r.AddSecret("abcdef")
	if r.String("abcdef") != "abcdef" || r.SecretHeader("Authorization") {
		t.Error("a nil Redactor hid something")
	}
}

// BenchmarkRedactorBody is the cost of redacting one 64 KiB reply body
// with ten secrets known (each in its eleven forms): one replacer pass and
// the checks at cuts.
func BenchmarkRedactorBody(b *testing.B) {
	r := NewRedactor()
	for i := range 10 {
		r.AddSecret("Bearer secret-token-" + strings.Repeat("x", i) + "-0123456789abcdef")
	}
	body := strings.Repeat(`{"id":"ord_123","status":"created","amount":4000,"note":"nothing to hide here"}`+"\n", 800)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for range b.N {
		_ = r.String(body)
	}
}
