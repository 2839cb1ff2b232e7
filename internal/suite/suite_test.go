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
	"github.com/idemcheck/idemcheck/scenarios"
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
	assert.Len(t, e.Checks, len(scenarios.Names()))
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
		{"unknown top field", "endpoint: []\n", `s.yaml:1: endpoint: unknown field (known: checks, endpoints, options, policy, skip_checks, target, version)`},
		{"bad version", "version: 2\nendpoints: [{path: /a, url: 'http://127.0.0.1'}]\n", "s.yaml:1: version: 2 is out of range: use 1 to 1"},
		{"unknown check", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    checks: [concurrent-burst, burst]\n",
			`s.yaml:4: endpoints[0].checks[1]: unknown check "burst" (known:`},
		{"unknown check at the top", "checks: [concurrent-burst, burst]\nendpoints:\n  - url: http://127.0.0.1\n    path: /a\n",
			`s.yaml:1: checks[1]: unknown check "burst" (known:`},
		{"checks not a list", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    checks: burst\n",
			`s.yaml:4: endpoints[0].checks: expected a list of checks, got "burst"`},
		{"tenants not a list", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    tenants: {a: b}\n",
			`s.yaml:4: endpoints[0].tenants: expected a list of two credentials such as ["Authorization: Bearer ${TOKEN_A}", "Authorization: Bearer ${TOKEN_B}"], got a mapping`},
		{"effect args not a list", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {sql: 'SELECT 1', args: x}\n",
			`s.yaml:4: endpoints[0].effect.args: expected a list such as ["{{intent}}"], got "x"`},
		{"effect arg not a string", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {sql: 'SELECT 1', args: [[x]]}\n",
			`s.yaml:4: endpoints[0].effect.args[0]: expected a string, got a list`},
		{"wrong type", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    policy: {mismatch_status: many}\n",
			`s.yaml:4: endpoints[0].policy.mismatch_status: expected a whole number from 0 to 599, got "many"`},
		{"missing path", "endpoints:\n  - url: http://127.0.0.1\n", "s.yaml:2: endpoints[0].path: missing"},
		{"missing url", "endpoints:\n  - path: /a\n", "s.yaml:2: endpoints[0].url is required, such as http://127.0.0.1:8080 (or cmd or image"},
		{"bad url", "target: {url: 'localhost:80'}\nendpoints:\n  - path: /a\n", `s.yaml:1: target.url: "localhost:80" is not an absolute`},
		{"secret url", "endpoints:\n  - url: 'http://${TOKEN}'\n    path: /a\n", `s.yaml:2: endpoints[0].url: "http://${TOKEN}" carries credentials`},
		{"unknown policy", "policy: paypal\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: policy: "paypal" is neither a preset (gofiber, ietf, stripe, webhook) nor a readable policy file`},
		{"unknown env", "endpoints:\n  - url: ${NOPE}\n    path: /a\n", "s.yaml:2: endpoints[0].url: environment variable NOPE is not set"},
		{"unknown template", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    body: '{\"a\":\"{{uuid4}}\"}'\n",
			"s.yaml:4: endpoints[0].body: unknown template function {{uuid4}} at byte 8"},
		{"bad json body", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    body: '{\"a\":'\n", "s.yaml:4: endpoints[0].body is not valid JSON once its templates are filled"},
		{"unknown preset", "policy: {preset: paypal}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: policy.preset: unknown policy preset "paypal" (known: gofiber, ietf, stripe, webhook)`},
		{"effect without db", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {sql: SELECT 1}\n", "s.yaml:4: endpoints[0].effect.sql needs a database: set db here or under target"},
		{"effect without sql", "target: {db: x}\nendpoints:\n  - url: http://127.0.0.1\n    path: /a\n    effect: {args: [x]}\n", "s.yaml:5: endpoints[0].effect.sql: missing"},
		{"burst out of range", "options: {burst: 1}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", "s.yaml:1: options.burst: 1 is out of range: use 2 to 1024"},
		{"bad duration", "options: {timeout: soon}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: options.timeout: expected a positive duration such as 10s or 5m, got "soon"`},
		{"bad pointer", "policy: {ignore_fields: [servedAt]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n", `s.yaml:1: policy.ignore_fields: JSON pointer "servedAt" must start with /`},
		{"duplicate name", "endpoints:\n  - {url: 'http://127.0.0.1', path: /a, name: x}\n  - {url: 'http://127.0.0.1', path: /b, name: x}\n", `s.yaml:3: endpoints[1].name: "x" is used by an earlier endpoint`},
		{"reserved env", "target:\n  image: orders:local\n  env:\n    PORT: '9'\nendpoints: [{path: /a}]\n", "s.yaml:4: target.env.PORT: PORT: idemcheck sets PORT, ADDR and DATABASE_URL itself"},
		{"reserved provider", "target:\n  cmd: ./orders\n  providers: [DATABASE_URL]\nendpoints: [{path: /a}]\n", "s.yaml:3: target.providers: DATABASE_URL: idemcheck sets PORT, ADDR and DATABASE_URL itself"},
		{"providers without a started target", "target:\n  url: http://127.0.0.1\n  providers: [PROVIDER_URL]\nendpoints: [{path: /a}]\n", "s.yaml:3: target.providers goes with cmd or image"},
		{"db engine without cmd", "target: {url: 'http://127.0.0.1', db_engine: mysql}\nendpoints: [{path: /a}]\n", "s.yaml:1: target.db_engine goes with cmd or image: it is the database idemcheck starts for the target"},
		{"unknown db engine", "target: {cmd: ./orders, db_engine: oracle}\nendpoints: [{path: /a}]\n", `s.yaml:1: target.db_engine: "oracle" is not an engine idemcheck starts: use postgres or mysql (a MariaDB server)`},
		{"endpoints not a list", "endpoints: {path: /a}\n", "s.yaml:1: endpoints: expected a non-empty list of endpoints, got a mapping"},
		{"replay header with a space", "policy:\n  preset: stripe\n  replay_header: 'bad header'\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n",
			`s.yaml:3: policy.replay_header: replay_header "bad header" is not an HTTP header name`},
		{"key header with a colon", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    policy:\n      key_header: 'Idempotency-Key:'\n",
			`s.yaml:5: endpoints[0].policy.key_header: key_header "Idempotency-Key:" is not an HTTP header name`},
		{"request header with a space", "endpoints:\n  - url: http://127.0.0.1\n    path: /a\n    headers: {'X Tenant': t}\n",
			`s.yaml:4: endpoints[0].headers: "X Tenant" is not an HTTP header name`},
		{"target header not a token", "target:\n  url: http://127.0.0.1\n  headers: {'X(Tenant)': t}\nendpoints: [{path: /a}]\n",
			`s.yaml:3: target.headers: "X(Tenant)" is not an HTTP header name`},
		{"both in-progress fields", "policy: {in_progress_status: 409, in_progress_statuses: [409, 423]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n",
			"s.yaml:1: policy.in_progress_statuses: give in_progress_status or in_progress_statuses, not both"},
		{"in-progress status that is a success", "policy: {in_progress_statuses: [409, 201]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n",
			"s.yaml:1: policy.in_progress_statuses: in_progress_statuses: 201 is also a success status"},
		{"in-progress status out of range", "policy: {in_progress_statuses: [409, 42]}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n",
			"s.yaml:1: policy.in_progress_statuses[1]: 42 is out of range: use 100 to 599"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(c.yaml), env(map[string]string{"TOKEN": "user:hunter2@127.0.0.1"}))
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "hunter2", "an expanded secret is never echoed")
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

func TestInProgressStatuses(t *testing.T) {
	p, err := ParsePolicy("p.yaml", []byte("preset: ietf\nin_progress_statuses: [409, 423]\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 409, p.InProgressStatus, "the first is the one messages name")
	assert.Equal(t, []int{409, 423}, p.InProgressStatuses)
	assert.True(t, p.InProgress(423))
	assert.False(t, p.InProgress(422))

	// The single field still reads, and replaces a list the preset had.
	p, err = ParsePolicy("p.yaml", []byte("preset: ietf\nin_progress_status: 423\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 423, p.InProgressStatus)
	assert.Empty(t, p.InProgressStatuses)
	assert.False(t, p.InProgress(409))

	// No in-progress status at all: duplicates wait for the replay.
	for _, doc := range []string{"in_progress_statuses: []\n", "in_progress_status: 0\n"} {
		p, err = ParsePolicy("p.yaml", []byte(doc), env(nil))
		require.NoError(t, err, doc)
		assert.Empty(t, p.InProgressList(), doc)
		assert.False(t, p.InProgress(409), doc)
	}
}

func TestBadHeaderNamesInAPolicyFile(t *testing.T) {
	_, err := ParsePolicy("p.yaml", []byte("preset: stripe\nkey_header: Idempotency-Key\nreplay_header: bad header\n"), env(nil))
	assert.EqualError(t, err, `p.yaml:3: replay_header: replay_header "bad header" is not an HTTP header name (a token: letters, digits and !#$%&'*+-.^_`+"`"+`|~, no spaces or colons)`)
	_, err = ParsePolicy("p.yaml", []byte("key_header: ''\n"), env(nil))
	assert.ErrorContains(t, err, "p.yaml:1: key_header: key_header is empty")
}

func TestParseHeader(t *testing.T) {
	h, err := ParseHeader("X-Api-Key: k {{key}}")
	require.NoError(t, err)
	assert.Equal(t, "X-Api-Key", h.Name)
	for _, bad := range []string{"NoColon", ": v", "X Api: v", "X\tApi: v", "X(Api): v", "Ключ: v"} {
		_, err := ParseHeader(bad)
		assert.Error(t, err, bad)
	}
}

func TestPolicyFile(t *testing.T) {
	p, err := ParsePolicy("p.yaml", []byte("preset: stripe\nmismatch_status: 422\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 422, p.MismatchStatus)
	assert.Equal(t, []int{200}, p.CreatedStatuses)
	_, err = ParsePolicy("p.yaml", []byte("preset: stripe\nfoo: 1\n"), env(nil))
	assert.ErrorContains(t, err, "p.yaml:2: foo: unknown field")
}

// A suite's policy takes a preset name or a policy file, as --policy does.
func TestPolicyByNameOrFile(t *testing.T) {
	s, err := Parse("s.yaml", []byte("policy: stripe\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, idemcheck.Stripe(), s.Endpoints[0].Policy)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("preset: stripe\nmismatch_status: 417\n"), 0o644))
	s, err = Parse(filepath.Join(dir, "s.yaml"), []byte("endpoints: [{url: 'http://127.0.0.1', path: /a, policy: p.yaml}]\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 417, s.Endpoints[0].Policy.MismatchStatus)
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

// A URL read from ${NAME} is the target's address, which reports must
// show: only the secrets a URL may carry (userinfo, query tokens, both
// refused in a suite anyway) would stay hidden.
func TestURLFromTheEnvironmentKeepsOnlyItsSecretsHidden(t *testing.T) {
	raw := "http://127.0.0.1:8080/api"
	s, err := Parse("s.yaml", []byte(`
target: {url: "${TARGET_URL}"}
endpoints:
  - {name: orders, path: /orders, body: '{"id":"{{intent}}"}', headers: {Authorization: "Bearer ${TOKEN}"}}
`), env(map[string]string{"TARGET_URL": raw, "TOKEN": "bearer-PLANTED3"}))
	require.NoError(t, err)
	assert.Contains(t, s.Secrets, "bearer-PLANTED3", "a header's value is still a secret")
	assert.NotContains(t, s.Secrets, raw, "the address itself is shown")
	assert.Equal(t, []string{"tok-PLANTED2", "tok-PLANTED2"}, urlSecrets("http://127.0.0.1/?token=tok-PLANTED2&v=1"), "a query token (which config.Build refuses anyway) stays hidden; v=1 is no token")
	assert.Equal(t, []string{"ops:pw", "pw", "pw"}, urlSecrets("http://ops:pw@127.0.0.1/"))
	// A DSN keeps its user, host and database in view; its password not.
	assert.Empty(t, dsnSecrets("postgres://postgres@127.0.0.1:5432/app?sslmode=disable"))
	assert.Equal(t, []string{"s3cret-pw", "s3cret-pw"}, dsnSecrets("mysql://app:s3cret-pw@127.0.0.1:3306/app"))
	assert.Equal(t, []string{"host=127.0.0.1 password=s3cret-pw"}, dsnSecrets("host=127.0.0.1 password=s3cret-pw"), "a key=value DSN stays hidden whole")
}

// Files a suite names, and the suite itself, are read up to a limit: an
// endless one ends at once with an error naming it and its line.
func TestFilesHaveSizeLimits(t *testing.T) {
	_, err := Parse("s.yaml", []byte("version: 1\npolicy: /dev/zero\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n"), env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.yaml:2")
	assert.Contains(t, err.Error(), "larger than 1 MiB")
	_, err = Load("/dev/zero")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/zero: cannot read the suite: larger than 16 MiB")
}

// A policy names its accepted statuses, and a suite the settle bound.
func TestAcceptedStatusesAndSettle(t *testing.T) {
	p, err := ParsePolicy("p.yaml", []byte("preset: stripe\naccepted_statuses: [202]\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, []int{202}, p.AcceptedStatuses)
	assert.True(t, p.Created(202), "an accepted reply is a success")
	assert.True(t, p.Accepted(202))
	assert.False(t, p.Accepted(200))

	_, err = ParsePolicy("p.yaml", []byte("preset: ietf\naccepted_statuses: [409]\n"), env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml:2")
	assert.Contains(t, err.Error(), "accepted status 409 is not a 2xx")

	s, err := Parse("s.yaml", []byte("options: {settle: 30s}\nendpoints: [{url: 'http://127.0.0.1', path: /a}]\n"), env(nil))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, s.Options.Scenarios.Settle)
}
