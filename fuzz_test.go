package idemcheck

import (
	"strings"
	"testing"
)

// FuzzParseTemplate: parsing never panics; a template that parses fills
// without panicking, and a text without "{{" is its own filling.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "/orders", `{"customerId":"{{intent}}","totalCents":4000}`, "{{ key }}-{{seq}}", "{{uuid}}", `{{hmac_sha256_hex "s" (printf "%s.%s" timestamp body)}}`, "{{body | sha256_hex}}", "a{{", "{{}}", "}}{{key"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTemplate(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		got := tm.Fill(Intent{ID: "ic-1", Key: "k", Seq: 7})
		if !strings.Contains(s, "{{") && got != s {
			t.Fatalf("a text without holes changed: %q -> %q", s, got)
		}
	})
}
