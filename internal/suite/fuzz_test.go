package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"endpoints:\n  - url: http://127.0.0.1\n    path: /a\n",
	"policy: {preset: stripe, in_progress_statuses: [409, 423]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n",
	"target: {cmd: ./bin/orders, instances: 2}\nendpoints:\n  - path: /orders\n    body: {customerId: '{{intent}}'}\n    effect: {sql: 'SELECT 1', args: ['{{intent}}']}\n",
	"endpoints: [\n",
	"policy: stripe\nendpoints: [{url: 'http://${HOST}', path: /a, headers: {X-T: '${TOKEN}'}}]\n",
}

// FuzzParse: a suite file never panics the parser, and every error is one
// line naming the file.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "..", "examples", "suites", "orders.yaml")); err == nil {
		f.Add(string(b))
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	lookup := env(map[string]string{"HOST": "127.0.0.1", "TOKEN": "t", "DATABASE_URL": "postgres://127.0.0.1/x"})
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse("s.yaml", []byte(s), lookup)
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "s.yaml") {
			t.Fatalf("error not one line naming the file: %q", err)
		}
	})
}

// FuzzParsePolicy: a policy file never panics the parser; a policy it
// accepts is valid.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"preset: stripe\n", "preset: ietf\nmismatch_status: 417\nin_progress_statuses: [409, 423]\n", "key_header: 'a b'\n", "lease: 2s\nignore_fields: [/servedAt]\n", "[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy("p.yaml", []byte(s), env(nil))
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted a policy that is not valid: %v", err)
		}
	})
}
