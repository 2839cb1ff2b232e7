package idemcheck

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTemplate(t *testing.T) {
	in := Intent{ID: "ic-1", Key: "k-1", Seq: 7}
	tp, err := ParseTemplate(`{"customerId":"{{intent}}","n":{{ seq }},"k":"{{key}}"}`)
	require.NoError(t, err)
	assert.Equal(t, `{"customerId":"ic-1","n":7,"k":"k-1"}`, tp.Fill(in))
	assert.True(t, tp.Uses("intent"))
	assert.False(t, tp.Computed())
	assert.False(t, MustTemplate("plain").Uses("key"))
	assert.Equal(t, "plain", MustTemplate("plain").Fill(in))

	_, err = ParseTemplate(`{"a":"{{uuid4}}"}`)
	assert.ErrorContains(t, err, "unknown template function {{uuid4}} at byte 8 (known: body, hmac_sha256_base64,")
	_, err = ParseTemplate(`{"a":"{{intent"}`)
	assert.EqualError(t, err, "unclosed {{ at offset 6")
}

// The computed parts: their values come from the send (its clock, the
// body sent) and the intent, and mix with the plain holes.
func TestTemplateComputed(t *testing.T) {
	in := Intent{ID: "ic-1", Key: "k-1", Seq: 7}
	sd := Send{Now: time.Unix(1614265330, 123e6), Body: []byte(`{"a":1}`)}
	for _, c := range []struct{ tmpl, want string }{
		{"{{timestamp}}", "1614265330"},
		{"{{timestamp_ms}}", "1614265330123"},
		{`{{now "RFC3339"}}`, "2021-02-25T15:02:10Z"},
		{`{{now "2006-01-02"}}`, "2021-02-25"},
		{"{{body}}", `{"a":1}`},
		{`{{key}}.{{printf "%s.%s" timestamp body}}`, `k-1.1614265330.{"a":1}`},
		{`{{sha256_hex "abc"}}`, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{`{{body | sha256_hex}}`, "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"},
		// RFC 4231, test case 2.
		{`{{hmac_sha256_hex "Jefe" "what do ya want for nothing?"}}`, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{`{{hmac_sha256_base64 "Jefe" "what do ya want for nothing?"}}`, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM="},
		{`{{intent}}/{{seq}}`, "ic-1/7"},
	} {
		tp, err := ParseTemplate(c.tmpl)
		require.NoError(t, err, c.tmpl)
		assert.Equal(t, c.want, tp.FillAt(in, sd), c.tmpl)
	}
	// GitHub's published example: "Hello, World!" signed with "It's a
	// Secret to Everybody".
	gh := MustTemplate(`sha256={{hmac_sha256_hex "It's a Secret to Everybody" body}}`)
	assert.Equal(t, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", gh.FillAt(in, Send{Body: []byte("Hello, World!")}))
	assert.NotEqual(t, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", gh.FillAt(in, Send{Body: []byte("Hello, World?")}))
	assert.True(t, gh.Uses("body"))
	assert.True(t, gh.Computed())

	u := MustTemplate("{{uuid}}")
	a, b := u.Fill(in), u.Fill(in)
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), a)
	assert.NotEqual(t, a, b, "a fresh UUID at each fill")
}

// Bad templates are refused at parse time, each with the position and one
// line.
func TestTemplateComputedErrors(t *testing.T) {
	for _, c := range []struct{ tmpl, want string }{
		{`{{hmac_sha256_hex "s"}}`, "hmac_sha256_hex at byte 2 takes 2 arguments, got 1"},
		{`x-{{timestamp "s"}}`, "timestamp at byte 4 takes 0 arguments, got 1"},
		{`{{sha256_hex (hmac_sha256_hex "s")}}`, "hmac_sha256_hex at byte 14 takes 2 arguments, got 1"},
		{`{{printf}}`, "printf at byte 2 takes a format and its arguments"},
		{`{{hmac_sha256_hex "s" 12}}`, "the argument of hmac_sha256_hex at byte 22 must be"},
		{`{{.Key}}`, "expected a function name, such as {{timestamp}}, at byte 2"},
		{`{{if key}}x{{end}}`, "only function calls are allowed"},
		{`{{$x := key}}`, "variables are not allowed"},
		{`{{sha256_hex "unterminated}}`, "template syntax: line 1: unterminated quoted string"},
		{`{{bogus "a"}}`, "unknown template function {{bogus}} at byte 2"},
	} {
		_, err := ParseTemplate(c.tmpl)
		require.Error(t, err, c.tmpl)
		assert.Contains(t, err.Error(), c.want, c.tmpl)
		assert.False(t, strings.Contains(err.Error(), "\n"), c.tmpl)
	}
}
