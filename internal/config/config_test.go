package config_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/netns"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// spec is a valid description, as the command's flags would give it.
func spec() config.Spec {
	return config.Spec{URL: "http://127.0.0.1:8080", Path: "/orders", Body: `{"customerId":"{{intent}}"}`,
		Policy: idemcheck.IETF(), Options: scenarios.Defaults}
}

// Each rule is checked once, by config.Build, and each front end says the
// same error in its own words: the command a flag, a suite its file, line
// and key, idemchecktest a Target field. Every front end's error carries
// Build's *idemcheck.FieldError, naming the same field: no front end
// checked the rule itself.
func TestEachRuleOnceInEachFrontEndsWords(t *testing.T) {
	const suiteHead = "target: {url: 'http://127.0.0.1:8080'}\nendpoints:\n  - path: /orders\n"
	cases := []struct {
		rule  string
		field idemcheck.Field
		// flags breaks the rule in a description as the flags fill it.
		flags func(*config.Spec)
		// yaml is a suite that breaks it.
		yaml string
		// target is an idemchecktest.Target that breaks it.
		target idemchecktest.Target
		// The error as each front end says it.
		flag, suite, goField string
	}{
		{
			rule: "the URL is absolute http(s)", field: "URL",
			flags:   func(s *config.Spec) { s.URL = "localhost:80" },
			yaml:    "target: {url: 'localhost:80'}\nendpoints:\n  - path: /orders\n",
			target:  idemchecktest.Target{URL: "localhost:80", Path: "/orders"},
			flag:    `--url "localhost:80" is not an absolute http:// or https:// URL, such as http://127.0.0.1:8080`,
			suite:   `s.yaml:1: target.url: "localhost:80" is not an absolute http:// or https:// URL, such as http://127.0.0.1:8080`,
			goField: `idemchecktest: URL "localhost:80" is not an absolute http:// or https:// URL, such as http://127.0.0.1:8080`,
		},
		{
			rule: "the URL carries nothing idemcheck would not send", field: "URL",
			flags:   func(s *config.Spec) { s.URL = "http://127.0.0.1:8080/?token=t" },
			yaml:    "endpoints:\n  - url: 'http://127.0.0.1:8080/?token=t'\n    path: /orders\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080/?token=t", Path: "/orders"},
			flag:    `--url "http://127.0.0.1:8080/?token=t" carries a query string, which idemcheck would not send: put it in the request path (--path)`,
			suite:   `s.yaml:2: endpoints[0].url: "http://127.0.0.1:8080/?token=t" carries a query string, which idemcheck would not send: put it in the request path (path)`,
			goField: `idemchecktest: URL "http://127.0.0.1:8080/?token=t" carries a query string, which idemcheck would not send: put it in the request path (Path)`,
		},
		{
			rule: "a header name is an HTTP token", field: "Headers[0]",
			flags:   func(s *config.Spec) { s.Headers = []config.Header{config.SplitHeader("X Tenant: t")} },
			yaml:    suiteHead + "    headers: {'X Tenant': t}\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", Header: map[string]string{"X Tenant": "t"}},
			flag:    `--header "X Tenant" is not an HTTP header name`,
			suite:   `s.yaml:4: endpoints[0].headers: "X Tenant" is not an HTTP header name`,
			goField: `idemchecktest: Header "X Tenant" is not an HTTP header name`,
		},
		{
			rule: "every check is known", field: "Checks[1]",
			flags:   func(s *config.Spec) { s.Checks = []string{"concurrent-burst", "burst"} },
			yaml:    suiteHead + "    checks: [concurrent-burst, burst]\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", Checks: []string{"concurrent-burst", "burst"}},
			flag:    `--checks: unknown check "burst" (known:`,
			suite:   `s.yaml:4: endpoints[0].checks[1]: unknown check "burst" (known:`,
			goField: `idemchecktest: Checks[1]: unknown check "burst" (known:`,
		},
		{
			rule: "every skipped check is known", field: "SkipChecks[0]",
			flags:   func(s *config.Spec) { s.SkipChecks = []string{"key-sintax"} },
			yaml:    suiteHead + "    skip_checks: [key-sintax]\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", SkipChecks: []string{"key-sintax"}},
			flag:    `--skip-checks: unknown check "key-sintax" (known:`,
			suite:   `s.yaml:4: endpoints[0].skip_checks[0]: unknown check "key-sintax" (known:`,
			goField: `idemchecktest: SkipChecks[0]: unknown check "key-sintax" (known:`,
		},
		{
			rule: "the body is a template", field: "Body",
			flags:   func(s *config.Spec) { s.Body = `{"a":"{{uuid4}}"}` },
			yaml:    suiteHead + "    body: '{\"a\":\"{{uuid4}}\"}'\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", Body: `{"a":"{{uuid4}}"}`},
			flag:    "--body: unknown template function {{uuid4}} at byte 8",
			suite:   "s.yaml:4: endpoints[0].body: unknown template function {{uuid4}} at byte 8",
			goField: "idemchecktest: Body: unknown template function {{uuid4}} at byte 8",
		},
		{
			rule: "the path starts with /", field: "Path",
			flags:   func(s *config.Spec) { s.Path = "orders" },
			yaml:    "target: {url: 'http://127.0.0.1:8080'}\nendpoints:\n  - path: orders\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "orders"},
			flag:    `--path "orders" must start with /, such as /orders`,
			suite:   `s.yaml:3: endpoints[0].path: "orders" must start with /, such as /orders`,
			goField: `idemchecktest: Path "orders" must start with /, such as /orders`,
		},
		{
			rule: "options are in range", field: "Options.BurstSize",
			flags:   func(s *config.Spec) { s.Options.BurstSize = 1 },
			yaml:    "options: {burst: 1}\n" + suiteHead,
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", Options: &scenarios.Options{BurstSize: 1, BurstRounds: 1, Rounds: 1, FaultRounds: 1, Redeliveries: 2}},
			flag:    "--burst 1 is out of range: use 2 to 1024",
			suite:   "s.yaml:1: options.burst: 1 is out of range: use 2 to 1024",
			goField: "idemchecktest: Options.BurstSize 1 is out of range: use 2 to 1024",
		},
		{
			rule: "an effect query needs a database", field: "EffectSQL",
			flags:   func(s *config.Spec) { s.EffectSQL = "SELECT 1" },
			yaml:    suiteHead + "    effect: {sql: SELECT 1}\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Path: "/orders", EffectSQL: "SELECT 1"},
			flag:    "--effect-sql needs a database: pass --db DSN or set DATABASE_URL",
			suite:   "s.yaml:4: endpoints[0].effect.sql needs a database: set db here or under target (such as db: ${DATABASE_URL})",
			goField: "idemchecktest: EffectSQL needs a database: set DB (or DSN for a Command or Image)",
		},
		{
			rule: "an effect argument is something the request sends", field: "EffectArgs[0]",
			flags: func(s *config.Spec) {
				s.Body, s.DSN, s.EffectSQL, s.EffectArgs = `{"customerId":"c-fixed"}`, "postgres://127.0.0.1/app", "SELECT count(*) FROM orders WHERE customer_id = $1", []string{"{{intent}}"}
			},
			yaml: "target: {url: 'http://127.0.0.1:8080', db: 'postgres://127.0.0.1/app'}\nendpoints:\n  - path: /orders\n    body: '{\"customerId\":\"c-fixed\"}'\n" +
				"    effect: {sql: 'SELECT count(*) FROM orders WHERE customer_id = $1', args: ['{{intent}}']}\n",
			target: idemchecktest.Target{Command: "./bin/orders", Path: "/orders", Body: `{"customerId":"c-fixed"}`,
				EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1"},
			flag:    "--effect-arg uses {{intent}}, which the request never sends (not in --body, --path or --header)",
			suite:   "s.yaml:5: endpoints[0].effect.args[0] uses {{intent}}, which the request never sends (not in body, path or headers)",
			goField: "idemchecktest: EffectArgs[0] uses {{intent}}, which the request never sends (not in Body, Path or Header)",
		},
		{
			rule: "one target", field: "Command",
			flags:   func(s *config.Spec) { s.Command = "./bin/orders" },
			yaml:    "target: {url: 'http://127.0.0.1:8080', cmd: ./bin/orders}\nendpoints:\n  - path: /orders\n",
			target:  idemchecktest.Target{URL: "http://127.0.0.1:8080", Command: "./bin/orders", Path: "/orders"},
			flag:    "--url or --cmd, not both",
			suite:   "s.yaml:1: target.cmd: give url or cmd, not both",
			goField: "idemchecktest: give URL or Command, not both",
		},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			field := func(err error) idemcheck.Field {
				t.Helper()
				var fe *idemcheck.FieldError
				require.True(t, errors.As(err, &fe), "%T %v carries Build's FieldError", err, err)
				return fe.Field
			}

			s := spec()
			c.flags(&s)
			_, err := config.Build(s)
			require.Error(t, err)
			assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
			assert.Equal(t, c.field, field(err))
			var fe *idemcheck.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Contains(t, fe.Text(config.FlagWords), c.flag, "flags")

			_, err = suite.Parse("s.yaml", []byte(c.yaml), func(string) (string, bool) { return "", false })
			require.Error(t, err)
			assert.Equal(t, c.field, field(err), "suite")
			assert.True(t, strings.HasPrefix(err.Error(), c.suite), "suite:\ngot  %q\nwant %q…", err.Error(), c.suite)

			_, err = idemchecktest.Check(context.Background(), c.target)
			require.Error(t, err)
			assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
			assert.Equal(t, c.field, field(err), "Go")
			assert.Contains(t, err.Error(), c.goField, "Go")

			for _, msg := range []string{fe.Text(config.FlagWords), err.Error()} {
				assert.NotContains(t, msg, "\n", "one line")
			}
		})
	}
}

// Skipped checks leave the others, in their order; a list that names no
// check is a usage error, never "every check".
func TestSkipChecks(t *testing.T) {
	s := spec()
	s.SkipChecks = []string{idemcheck.CheckKeySyntax}
	b, err := config.Build(s)
	require.NoError(t, err)
	want := slices.DeleteFunc(scenarios.Names(), func(n string) bool { return n == idemcheck.CheckKeySyntax })
	assert.Equal(t, want, b.Config.Checks)

	s = spec()
	s.Checks, s.SkipChecks = []string{idemcheck.CheckLostReply, idemcheck.CheckKeySyntax}, []string{idemcheck.CheckKeySyntax}
	b, err = config.Build(s)
	require.NoError(t, err)
	assert.Equal(t, []string{idemcheck.CheckLostReply}, b.Config.Checks)

	s = spec()
	s.Checks = []string{}
	_, err = config.Build(s)
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.Field("Checks"), fe.Field)

	// A suite's skip_checks, and an endpoint's replacing it.
	su, err := suite.Parse("s.yaml", []byte("skip_checks: [key-syntax]\ntarget: {url: 'http://127.0.0.1:8080'}\nendpoints:\n  - path: /a\n  - path: /b\n    skip_checks: [lost-reply]\n"),
		func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	assert.NotContains(t, su.Endpoints[0].Checks, idemcheck.CheckKeySyntax)
	assert.Contains(t, su.Endpoints[0].Checks, idemcheck.CheckLostReply)
	assert.Contains(t, su.Endpoints[1].Checks, idemcheck.CheckKeySyntax)
	assert.NotContains(t, su.Endpoints[1].Checks, idemcheck.CheckLostReply)
}

// A database given to a target reached by URL is there to count effects:
// without an effect query it is a usage error, unless it came by default
// (DATABASE_URL, a suite's shared target), when it is left unused and the
// report does not say effects were counted in it.
func TestADatabaseNeedsAnEffectQuery(t *testing.T) {
	s := spec()
	s.DSN = "postgres://127.0.0.1/app"
	_, err := config.Build(s)
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
	assert.Equal(t, "--db needs --effect-sql, the query that counts one intent's effects there (such as SELECT count(*) FROM orders WHERE customer_id = $1): "+
		"without one nothing is counted", fe.Text(config.FlagWords))

	s.EffectHTTP, s.EffectCount = "GET /orders?customerId={{intent}}", new(string)
	_, err = config.Build(s)
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Text(config.FlagWords), "--db goes with --effect-sql, and --effect-http counts effects through the API")

	s = spec()
	s.DSN, s.DSNDefault = "postgres://127.0.0.1/app", true
	b, err := config.Build(s)
	require.NoError(t, err)
	assert.Empty(t, b.Config.DSN, "a default database with no query is left unused")
	assert.Empty(t, b.Config.DBName)

	// A started target is handed its database whether or not effects are
	// counted there.
	s = spec()
	s.URL, s.Command, s.Instances, s.DSN = "", "./bin/orders", 1, "postgres://127.0.0.1/app"
	_, err = config.Build(s)
	require.NoError(t, err)

	// The read-back's path is held to the same rule as an effect argument.
	s = spec()
	s.Body, s.EffectHTTP, s.EffectCount = `{"customerId":"c-fixed"}`, "GET /orders?customerId={{intent}}", new(string)
	_, err = config.Build(s)
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Text(config.FlagWords), "--effect-http uses {{intent}}, which the request never sends")

	// {{intent}} in a header, or the path, is sent; {{key}} always is.
	s = spec()
	s.Body, s.Headers = `{"customerId":"c-fixed"}`, []config.Header{config.SplitHeader("X-Request: {{intent}}")}
	s.DSN, s.EffectSQL, s.EffectArgs = "postgres://127.0.0.1/app", "SELECT count(*) FROM orders WHERE customer_id = $1", []string{"{{intent}}", "{{key}}"}
	_, err = config.Build(s)
	require.NoError(t, err)
}

// A valid description becomes the certification the command has always
// built: the defaults filled, the request parsed.
func TestBuildFillsTheDefaults(t *testing.T) {
	b, err := config.Build(spec())
	require.NoError(t, err)
	assert.Nil(t, b.Launch)
	c := b.Config
	assert.Equal(t, &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, c.Endpoint.Base)
	assert.Equal(t, "POST", c.Endpoint.Method)
	assert.Equal(t, "/orders", c.Endpoint.Path.Fill(idemcheck.Intent{}))
	assert.EqualValues(t, runner.DefaultRate, c.Rate)
	assert.Equal(t, config.DefaultTimeout, c.Timeout)
	assert.Equal(t, certify.DefaultMaxDuration, c.MaxDuration)
	assert.EqualValues(t, config.DefaultMaxBody, c.MaxBody)
	assert.Equal(t, wire.ProtocolAuto, c.Protocol)

	// The URL's path is the request path unless Path says otherwise.
	s := spec()
	s.URL, s.Path = "http://127.0.0.1:8080/v1/orders", ""
	b, err = config.Build(s)
	require.NoError(t, err)
	assert.Equal(t, "/v1/orders", b.Config.Endpoint.Path.Fill(idemcheck.Intent{}))
	assert.Equal(t, "127.0.0.1:8080", b.Config.Endpoint.Base.Host)
}

// A target idemcheck starts is returned to start, with its database; the
// URL is the one it is started on.
func TestBuildLaunchesAStartedTarget(t *testing.T) {
	s := spec()
	s.URL, s.Command, s.Instances, s.DSN, s.EffectSQL = "", "./bin/orders", 2, "postgres://app@127.0.0.1/app", "SELECT count(*) FROM orders WHERE id = $1"
	s.EffectArgs, s.TargetLog = []string{"{{intent}}"}, "target.log"
	b, err := config.Build(s)
	require.NoError(t, err)
	require.NotNil(t, b.Launch)
	assert.Equal(t, "./bin/orders", b.Launch.Command)
	assert.Equal(t, 2, b.Launch.Instances)
	assert.Equal(t, "postgres://app@127.0.0.1/app", b.Launch.DSN)
	assert.Equal(t, "target.log", b.Launch.Log)
	assert.Empty(t, b.Config.DSN, "the database is the target's, handed to it, not opened beside it")
}

// The loopback rule is Build's too: a remote URL or database needs
// AllowRemote, and the error says how to set it in each front end's words.
// It runs in a network namespace of its own, so that a guard that failed
// would send nothing anywhere.
func TestBuildKeepsTrafficOnLoopback(t *testing.T) {
	if !netns.Enter(t) {
		return
	}
	s := spec()
	s.URL = "http://10.255.255.1:8080"
	_, err := config.Build(s)
	require.Error(t, err)
	var fe *idemcheck.FieldError
	require.True(t, errors.As(err, &fe))
	assert.Contains(t, fe.Text(config.FlagWords), "--url host 10.255.255.1")
	assert.Contains(t, fe.Text(config.FlagWords), "pass --allow-remote")
	s.AllowRemote = true
	_, err = config.Build(s)
	require.NoError(t, err)

	s = spec()
	s.DSN = "postgres://app:hunter2@10.255.255.1/app"
	_, err = config.Build(s)
	require.Error(t, err)
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, idemcheck.Field("DSN"), fe.Field)
	assert.Contains(t, fe.Text(config.FlagWords), "--db postgres://app:xxxxx@10.255.255.1/app")
	assert.NotContains(t, err.Error(), "hunter2")
}

// Limits: zero is the default, anything else is checked.
func TestBuildChecksTheLimits(t *testing.T) {
	for _, c := range []struct {
		set  func(*config.Spec)
		want string
	}{
		{func(s *config.Spec) { s.Timeout = time.Nanosecond }, "--timeout 1ns is too short"},
		{func(s *config.Spec) { s.Rate = 0.01 }, "--rate 0.01 must be a number of requests per second of at least 0.1"},
		{func(s *config.Spec) { s.MaxDuration = -time.Second }, "--max-duration -1s must be positive"},
		{func(s *config.Spec) { s.MaxBody = -1 }, "--max-body -1 is out of range"},
		{func(s *config.Spec) { s.Protocol = "h3" }, `--protocol "h3": use auto, http1 or h2`},
		{func(s *config.Spec) { s.RedactFields = []string{"card"} }, `--redact-field "card" must be a JSON pointer`},
		{func(s *config.Spec) { s.Policy.KeyHeader = "Idempotency Key" }, `--key-header "Idempotency Key" is not an HTTP header name`},
		{func(s *config.Spec) { s.Policy.MismatchStatus = 1000 }, "--mismatch-status 1000 is not an HTTP status: use 100 to 599, or 0 for none"},
		{func(s *config.Spec) { s.Policy.IgnoreFields = []string{"servedAt"} }, `--ignore-field: JSON pointer "servedAt" must start with /`},
		{func(s *config.Spec) { s.Tenants = []config.Header{{Name: "Authorization", Value: "A"}} }, "--tenant takes two clients' credentials"},
		{func(s *config.Spec) { s.EffectArgs = []string{"{{intent}}"} }, "--effect-arg needs --effect-sql"},
		{func(s *config.Spec) { s.EffectHTTP = "GET /orders?c={{intent}}" }, "--effect-http needs --effect-count"},
		{func(s *config.Spec) { s.Image, s.URL, s.Instances = "orders:local", "", 2 }, "--instances goes with --cmd"},
		{func(s *config.Spec) { s.TargetLog = "t.log" }, "--target-log goes with --cmd or --image"},
		{func(s *config.Spec) { s.URL, s.Command, s.Instances = "", "./bin/orders", 0 }, "--instances 0 is out of range: use 1 to 16"},
	} {
		s := spec()
		c.set(&s)
		_, err := config.Build(s)
		require.Error(t, err, c.want)
		var fe *idemcheck.FieldError
		require.True(t, errors.As(err, &fe), c.want)
		assert.Contains(t, fe.Text(config.FlagWords), c.want)
	}
}
