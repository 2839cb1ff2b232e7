package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var in = idemcheck.Intent{ID: "ic-1", Key: "k-1", Seq: 3}

func TestExampleSuite(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "suites", "orders.yaml")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s, err := Parse(path, b, env(map[string]string{"ORDERS_URL": "http://127.0.0.1:8080", "DATABASE_URL": "postgres://u@127.0.0.1/db"}))
	require.NoError(t, err)
	require.Len(t, s.Endpoints, 2)
	e := s.Endpoints[0]
	assert.Equal(t, "create order", e.Name)
	assert.Equal(t, "http://127.0.0.1:8080", e.Endpoint.Base.String())
	assert.Equal(t, `{"customerId":"ic-1","totalCents":4000}`, e.Endpoint.Body.Fill(in))
	assert.Equal(t, "Idempotent-Replayed", e.Policy.ReplayHeader)
	assert.Equal(t, 422, e.Policy.MismatchStatus)
	assert.Equal(t, "postgres://u@127.0.0.1/db", e.DB)
	assert.Equal(t, "SELECT count(*) FROM orders WHERE customer_id = $1", e.EffectSQL, "SQL placeholders survive ${} expansion")
	require.NotNil(t, e.Endpoint.Other)
	assert.Equal(t, "/payments", e.Endpoint.Other.Path.Fill(in))
	assert.Equal(t, "POST", e.Endpoint.Other.Method)
	assert.Len(t, e.Checks, len(idemcheck.AllChecks))
	assert.Equal(t, []string{"concurrent-burst", "sequential-replay", "lost-reply", "payload-mismatch"}, s.Endpoints[1].Checks)
	assert.Equal(t, 10*time.Second, s.Options.Timeout)
}

func TestPoliciesAndOverrides(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`
target: {url: "http://127.0.0.1:1"}
policy: {preset: stripe}
endpoints:
  - path: /a
  - path: /b
    headers: {X-Tenant: "t-{{seq}}", Authorization: "Bearer ${TOKEN}"}
    policy: {preset: gofiber, in_progress_status: 409, ignore_fields: [/servedAt]}
`), env(map[string]string{"TOKEN": "sekret"}))
	require.NoError(t, err)
	assert.Equal(t, idemcheck.Stripe(), s.Endpoints[0].Policy)
	assert.Equal(t, "POST /a", s.Endpoints[0].Name)
	p := s.Endpoints[1].Policy
	assert.Equal(t, "X-Idempotency-Key", p.KeyHeader)
	assert.Equal(t, 409, p.InProgressStatus)
	assert.Equal(t, []string{"/servedAt"}, p.IgnoreFields)
	require.Len(t, s.Endpoints[1].Endpoint.Header, 2)
	assert.Equal(t, "Bearer sekret", s.Endpoints[1].Endpoint.Header[1].Value.Fill(in))
	assert.Equal(t, "t-3", s.Endpoints[1].Endpoint.Header[0].Value.Fill(in))
}

// Every error names the file, the line, the field and what was expected.
func TestErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"not yaml", "endpoints: [\n", "s.yaml:1: not valid YAML: did not find expected node content"},
		{"empty", "", "s.yaml: the suite is empty"},
		{"no endpoints", "version: 1\n", "s.yaml:1: endpoints: missing"},
		{"unknown top field", "endpoint: []\n", `s.yaml:1: endpoint: unknown field (known: checks, endpoints, options, policy, target, version)`},
		{"bad version", "version: 2\nendpoints: [{path: /a, url: 'http://127.0.0.1'}]\n", "s.yaml:1: version: 2 is out of range: use 1 to 1"},
		{"unknown check", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    checks: [concurrent-burst, burst]\n",
			`s.yaml:4: endpoints[0].checks[1]: unknown check "burst" (known:`},
		{"wrong type", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    policy: {mismatch_status: many}\n",
			`s.yaml:4: endpoints[0].policy.mismatch_status: expected a whole number from 0 to 599, got "many"`},
		{"missing path", "endpoints:\n  - url: http://127.0.0.1\n", "s.yaml:2: endpoints[0].path: missing"},
		{"missing url", "endpoints:\n  - path: /a\n", "s.yaml:2: endpoints[0].url: missing: give url here or under target"},
		{"bad url", "target: {url: 'localhost:80'}\nendpoints:\n  - path: /a\n", `s.yaml:1: endpoints[0].url: "localhost:80" is not an absolute`},
		{"unknown env", "endpoints:\n  - url: ${NOPE}\n    path: /a\n", "s.yaml:2: endpoints[0].url: environment variable NOPE is not set"},
		{"unknown template", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    body: '{\"a\":\"{{uuid}}\"}'\n",
			"s.yaml:4: endpoints[0].body: unknown template name {{uuid}}"},
		{"bad json body", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    body: '{\"a\":'\n", "s.yaml:4: endpoints[0].body: looks like JSON but is not valid JSON"},
		{"unknown preset", "policy: {preset: paypal}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: policy.preset: unknown policy preset "paypal" (known: gofiber, ietf, stripe, webhook)`},
		{"effect without db", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {sql: SELECT 1}\n", "s.yaml:4: endpoints[0].effect: needs a database"},
		{"effect without sql", "target: {db: x}\nendpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {args: [x]}\n", "s.yaml:5: endpoints[0].effect.sql: missing"},
		{"burst out of range", "options: {burst: 1}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", "s.yaml:1: options.burst: 1 is out of range: use 2 to 1024"},
		{"bad duration", "options: {timeout: soon}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: options.timeout: expected a positive duration such as 10s or 5m, got "soon"`},
		{"bad pointer", "policy: {ignore_fields: [servedAt]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: policy.ignore_fields: JSON pointer "servedAt" must start with /`},
		{"duplicate name", "endpoints:\n  - {url: 'http://127.0.0.1', path: /a, name: x}\n  - {url: 'http://127.0.0.1', path: /b, name: x}\n", `s.yaml:3: endpoints[1].name: "x" is used by an earlier endpoint`},
		{"reserved env", "target:\n  image: orders:local\n  env:\n    PORT: '9'\nendpoints: [{path: /a}]\n", "s.yaml:4: target.env.PORT: PORT: idemcheck sets PORT, ADDR and DATABASE_URL itself"},
		{"endpoints not a list", "endpoints: {path: /a}\n", "s.yaml:1: endpoints: expected a non-empty list of endpoints, got a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(c.yaml), env(nil))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), c.want), "got  %q\nwant %q…", err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestDollarEscapes(t *testing.T) {
	s, err := Parse("s.yaml", []byte("endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    headers: {X-Price: '$${NOT_ENV} costs $5'}\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, "${NOT_ENV} costs $5", s.Endpoints[0].Endpoint.Header[0].Value.Fill(in))
}

func TestPolicyFile(t *testing.T) {
	p, err := ParsePolicy("p.yaml", []byte("preset: stripe\nmismatch_status: 422\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 422, p.MismatchStatus)
	assert.Equal(t, []int{200}, p.CreatedStatuses)
	_, err = ParsePolicy("p.yaml", []byte("preset: stripe\nfoo: 1\n"), env(nil))
	assert.ErrorContains(t, err, "p.yaml:2: foo: unknown field")
}

// target.log names the file a started target's output goes to, and goes
// only with a target idemcheck starts.
func TestTargetLog(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`
target: {cmd: "./bin/orders", log: "out/target.log"}
endpoints:
  - path: /orders
`), env(nil))
	require.NoError(t, err)
	assert.Equal(t, "out/target.log", s.Log)

	_, err = Parse("s.yaml", []byte(`
target: {url: "http://127.0.0.1:1", log: "target.log"}
endpoints:
  - path: /orders
`), env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "log goes with cmd or image")
}
