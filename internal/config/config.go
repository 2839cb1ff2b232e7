// Package config is the one place a certification's configuration is
// checked. The command's flags, a suite file and idemchecktest each
// describe one certification as a Spec (the endpoint, where its target
// runs, the policy, the effect count, the checks, the options and the
// limits), and Build turns it into a validated certify.Config, with what
// to start when idemcheck starts the target (Launch). A soak is the same
// description with a SoakSpec (its load and faults): BuildSoak checks both
// by the same rules and makes a certify.SoakConfig, whose Settings are the
// ones Build makes.
//
// Each rule is checked here once. An error is an *idemcheck.FieldError
// naming the Spec field at fault (URL, Headers[1], Options.BurstSize),
// which each front end says in its own words: the command a flag, a suite
// its file, line and key, idemchecktest a Target field.
//
// It imports certify and the packages below it; never internal/suite,
// idemchecktest, cmd or examples.
package config

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/net/http/httpguts"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Limits and defaults of the options every front end shares.
const (
	// MinTimeout is the shortest per-attempt timeout: below it no reply can
	// arrive, and every attempt would be blamed on the target.
	MinTimeout = 10 * time.Millisecond
	// DefaultTimeout is the per-attempt timeout unless told otherwise.
	DefaultTimeout = 10 * time.Second
	// MinRate is the lowest request-rate cap: below it the cap stops
	// meaning anything a run could reach.
	MinRate = 0.1
	// DefaultMaxBody is how much of each reply body is kept unless told
	// otherwise. Every attempt keeps its reply body for the whole run (the
	// checks compare them, the history holds them), so the kept part is
	// what a hostile or merely verbose target costs per attempt: measured
	// against a target answering 50 MB of NUL bytes, a default run (190
	// attempts) kept 1 MiB each, peaked at 494 MiB and wrote a 1.1 GB
	// history (JSON escapes a NUL in six bytes). Replies that idempotency
	// checks compare are small; a longer one is compared on its first
	// 64 KiB and marked truncated.
	DefaultMaxBody = 64 << 10
	// MaxMaxBody caps MaxBody: every attempt of a run keeps up to that
	// much, in memory and in the history.
	MaxMaxBody = 64 << 20
	// MaxInstances caps the replicas of a started command.
	MaxInstances = 16
)

// Header is one request header as its user wrote it; its value is a
// template.
type Header struct{ Name, Value string }

// SplitHeader reads "Name: value": the name before the first colon, the
// value after it, both trimmed. A text without a colon is a header without
// a name, which Build refuses without quoting it (it may be a credential
// typed without its separator).
func SplitHeader(s string) Header {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return Header{Value: s}
	}
	return Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
}

// Spec describes one certification in the words every front end shares.
// Zero values are defaults, except Options, which a front end starts from
// scenarios.Defaults.
type Spec struct {
	// Name labels the target in reports; for an image, the image.
	Name string

	// Where the API runs: one of Handler (served on loopback for the run,
	// from Go), URL (a service already running), Command or Image (a
	// target idemcheck starts, and so holds powers over).
	Handler http.Handler
	URL     string
	// URLText is URL as its user wrote it, quoted in errors (a suite's
	// text before ${NAME} expansion); empty quotes URL, its password
	// hidden.
	URLText string
	Command string
	// Instances of Command behind a round-robin balancer (1 to
	// MaxInstances).
	Instances int
	Image     string
	// DBImage (with Image and no DSN) is the PostgreSQL image of the
	// target's database; Ready the path that answers 2xx once it serves
	// (with Command, targets.ReadyTCP waits for its port instead).
	DBImage, Ready string
	// DBEngine (with Command) is the engine of the database idemcheck
	// starts for the target when DSN is empty: "postgres" (the default)
	// or "mysql" (a throwaway MariaDB; "mariadb" says the same). With a
	// DSN it must agree with the DSN's form (targets.DSNEngine).
	DBEngine string
	// Env holds NAME=VALUE variables for a Command or Image target.
	Env []string
	// Providers names the variables that hand a Command or Image target
	// the base URLs of downstream provider doubles idemcheck serves for
	// it (PROVIDER_URL, say): its calls to them are checked too.
	Providers []string
	// TargetLog names the file a started target's output goes to.
	TargetLog string

	// The request: Method (POST when empty), Path (a template; the URL's
	// own path when empty), Body and Headers (templates).
	Method, Path, Body string
	Headers            []Header
	// Tenants are two clients' credentials, for cross-tenant.
	Tenants []Header
	// MismatchBody, FailingBody and InvalidBody are the bodies of the
	// checks that need one (empty: the check's own, or none).
	MismatchBody, FailingBody, InvalidBody string
	// OtherPath is a second endpoint for cross-endpoint, with OtherMethod
	// (the method when empty) and OtherBody (the body when nil).
	OtherMethod, OtherPath string
	OtherBody              *string

	Policy idemcheck.Policy

	// Sign names the signing scheme every attempt is signed with, as a
	// webhook sender signs (scenarios.SignSchemes); SignSecret is its
	// secret, SignHeader a name for its signature header instead of the
	// scheme's, SignSkew a shift of the clock its timestamps are taken
	// from.
	Sign, SignSecret, SignHeader string
	SignSkew                     time.Duration

	// DSN is the database: where EffectSQL counts for a target reached by
	// URL, the one handed to a started target. DB is an open pool instead
	// (from Go, with Handler or URL).
	DSN string
	DB  *pgxpool.Pool
	// DSNDefault says DSN was not given for this endpoint alone but came
	// by default (DATABASE_URL, or a suite's target shared by endpoints
	// that count their effects there): a target reached by URL with no
	// effect query then leaves it unused, where a DSN given for the
	// endpoint without one is a usage error.
	DSNDefault bool
	// EffectSQL counts one intent's effects, with EffectArgs bound as
	// $1, $2, …; or EffectHTTP, a GET of the API, counts them at the JSON
	// pointer EffectCount (nil: not given).
	EffectSQL   string
	EffectArgs  []string
	EffectHTTP  string
	EffectCount *string

	// Checks to run; nil means all, and an empty list that is not nil (a
	// --checks '' or checks: [] that names none) is a usage error.
	Checks []string
	// SkipChecks are checks left out of Checks (of all, when Checks is nil).
	SkipChecks []string
	Options    scenarios.Options
	// Rate caps requests per second, Timeout each attempt, MaxDuration
	// the run, MaxBody the reply bytes kept per attempt (0: the default).
	Rate        float64
	Timeout     time.Duration
	MaxDuration time.Duration
	MaxBody     int64
	// Protocol is the burst engine: auto (when empty), http1 or h2.
	Protocol string
	// Timed bursts are not scheduled at a started target's database link.
	Timed bool
	// Preflight sends one plain request before the checks.
	Preflight   bool
	AllowRemote bool
	// Words are the front end's words for the fields a report names (why
	// a check was skipped): certify.Config.Words. Nil says Go's.
	Words map[idemcheck.Field]idemcheck.Word
	// TLS is the client's TLS configuration for an https:// target.
	TLS *tls.Config
	// Redact names headers, RedactFields JSON pointers and RedactQuery
	// query parameters whose values never reach a report; Secrets are
	// values hidden wherever they appear (${NAME} expansions).
	Redact, RedactFields, RedactQuery, Secrets []string
	// Redactor hides every secret in what the front end writes: Build
	// teaches it the description's (Teach) before any rule is checked, so
	// that an error quoting one hides it, and hands it to the run
	// (certify.Config.Redactor). Nil means the run makes its own.
	Redactor *idemcheck.Redactor
}

// Teach teaches red every credential the description holds: the secret
// values, the credential headers' names and values (a header whose value
// the shell expanded is known by its name), the tenants', the query
// values of RedactQuery in the URL and path, the body fields of
// RedactFields, the URL's password; and leaves the policy's key header in
// clear.
func (s Spec) Teach(red *idemcheck.Redactor) {
	if red == nil {
		return
	}
	red.ExemptHeader(s.Policy.KeyHeader)
	red.AddHeader(s.Redact...)
	red.AddSecret(s.Secrets...)
	red.AddField(s.RedactFields...)
	red.AddQuery(s.RedactQuery...)
	for _, t := range s.Tenants {
		red.AddHeader(t.Name)
	}
	for _, h := range slices.Concat(s.Headers, s.Tenants) {
		if h.Name == "" {
			// A header without its separator may be a credential.
			red.AddSecret(h.Value)
			continue
		}
		if !strings.Contains(h.Value, "{{") {
			// One filled per intent is learned as it is sent.
			red.LearnHeader(h.Name, h.Value)
		}
	}
	red.LearnURL(s.URL)
	red.LearnQuery(s.Path)
	red.LearnBody([]byte(s.Body))
}

// Built is a Spec made into a certification.
type Built struct {
	Config certify.Config
	// Launch, when set, is the target to start before the run; Attach
	// then points Config at it.
	Launch *Launch
}

// Launch is a target for idemcheck to start: a Go handler served on
// loopback, a command run as Instances replicas, or a container image.
type Launch struct {
	Handler   http.Handler
	Command   string
	Instances int
	Image     string
	DBImage   string
	// DBEngine is the engine of the database to start (targets.EngineMySQL
	// or targets.EnginePostgres); empty is PostgreSQL, or the DSN's.
	DBEngine string
	Ready    string
	Env      []string
	// Providers are the variables naming its provider doubles.
	Providers []string
	// DSN is the database handed to the target; empty provides one.
	DSN         string
	AllowRemote bool
	// Log is the file the target's output goes to (Spec.TargetLog).
	Log string
}

func usage(field idemcheck.Field, format string, args ...any) error {
	return idemcheck.Fieldf(idemcheck.ExitUsage, field, format, args...)
}

// Build checks s and turns it into a certification. It sends nothing and
// starts nothing: a target to start is returned as Launch.
func Build(s Spec) (*Built, error) {
	if s.Redactor == nil {
		s.Redactor = idemcheck.NewRedactor()
	}
	s.Teach(s.Redactor)
	b, err := s.build()
	// A rule's error may quote a secret (a URL's ${NAME}, a query value).
	return b, s.Redactor.Error(err)
}

// build is Build once the redactor knows the description's secrets.
func (s Spec) build() (*Built, error) {
	b := &Built{}
	if err := s.checkTarget(); err != nil {
		return nil, err
	}
	if err := CheckPolicy(s.Policy); err != nil {
		return nil, err
	}
	started := s.Command != "" || s.Image != ""
	var base *url.URL
	path := s.Path
	switch {
	case s.URL != "":
		var urlPath string
		var err error
		if base, urlPath, err = ParseURL("URL", s.URL, s.URLText); err != nil {
			return nil, err
		}
		if !s.AllowRemote {
			if err := certify.RequireLoopback("URL", base.Hostname()); err != nil {
				return nil, err
			}
		}
		if path == "" {
			path = urlPath
		}
	default:
		// Replaced by the address the target is started on (Attach).
		base = &url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	}
	if path == "" {
		path = "/"
	}
	if err := targets.CheckDSN(s.DSN, "DSN", s.AllowRemote); err != nil {
		return nil, err
	}
	e, err := s.endpoint(base, path)
	if err != nil {
		return nil, err
	}
	if e.Sign, err = s.signing(); err != nil {
		return nil, err
	}
	c := certify.Config{
		Settings: certify.Settings{Endpoint: e, Policy: s.Policy, DB: s.DB, Redactor: s.Redactor, Redact: s.Redact, Secrets: s.Secrets,
			RedactQuery: s.RedactQuery, AllowRemote: s.AllowRemote, TLS: s.TLS, Words: s.Words},
		Name: s.Name, Checks: s.Checks, Options: s.Options, Timed: s.Timed, Preflight: s.Preflight,
	}
	if g := e.Sign; g != nil {
		// Hidden in every report and history, wherever they show up.
		c.Secrets = append(slices.Clip(c.Secrets), g.Secrets()...)
		c.Redact = append(slices.Clip(c.Redact), g.SignatureHeader())
	}
	if c.Name == "" && s.Image != "" {
		// The port is picked anew each run; the image is what a pipeline
		// certifies.
		c.Name = s.Image
	}
	if err := s.effects(&c, started, e); err != nil {
		return nil, err
	}
	if c.Checks, err = s.checks(); err != nil {
		return nil, err
	}
	if err := s.Options.Validate(); err != nil {
		return nil, err
	}
	if err := s.limits(&c); err != nil {
		return nil, err
	}
	for i, p := range s.RedactFields {
		f := idemcheck.Field(fmt.Sprintf("RedactFields[%d]", i))
		if assert.ValidatePointer(p) != nil || p == "" {
			return nil, usage(f, "%s %q must be a JSON pointer such as /card/number", f, p)
		}
		c.RedactFields = append(c.RedactFields, p)
	}
	if s.Handler != nil || started {
		b.Launch = &Launch{Handler: s.Handler, Command: s.Command, Instances: max(s.Instances, 1), Image: s.Image,
			DBImage: s.DBImage, DBEngine: dbEngine(s.DBEngine, s.DSN), Ready: s.Ready, Env: s.Env, Providers: s.Providers, DSN: s.DSN, AllowRemote: s.AllowRemote, Log: s.TargetLog}
	} else if s.DSN != "" && s.EffectSQL != "" {
		// A DSN read from the environment with no query to run is left
		// unused (effects): the report must not say effects were counted.
		c.DSN, c.DBName = s.DSN, targets.RedactDSN(s.DSN)
	}
	b.Config = c
	return b, nil
}

// CheckSigning checks s's signing settings alone (Sign, SignSecret,
// SignHeader, SignSkew) as Build does, for a front end that reads them
// apart from an endpoint: a policy file's sign: block. Its errors never
// quote the secret.
func CheckSigning(s Spec) error {
	_, err := s.signing()
	return err
}

// signing checks the signing settings and makes them a scenarios.Signing
// (nil without Sign). Its errors never quote the secret.
func (s Spec) signing() (*scenarios.Signing, error) {
	if s.Sign == "" {
		for _, f := range []struct {
			field idemcheck.Field
			set   bool
		}{{"SignSecret", s.SignSecret != ""}, {"SignHeader", s.SignHeader != ""}, {"SignSkew", s.SignSkew != 0}} {
			if f.set {
				return nil, usage(f.field, "%s goes with %s, the signing scheme (%s)", f.field, idemcheck.Field("Sign"), strings.Join(scenarios.SignSchemes, ", "))
			}
		}
		return nil, nil
	}
	g := &scenarios.Signing{Scheme: s.Sign, Secret: s.SignSecret, Header: s.SignHeader, Skew: s.SignSkew}
	err := g.Check()
	switch {
	case err == nil:
		return g, nil
	case s.SignSecret == "":
		return nil, usage("SignSecret", "%s is missing: %s signs with a secret (read from the environment, such as ${WEBHOOK_SECRET})", idemcheck.Field("SignSecret"), s.Sign)
	case g.Scheme == scenarios.SignStandardWebhooks && strings.Contains(err.Error(), "decode"):
		return nil, usage("SignSecret", "%s: %v", idemcheck.Field("SignSecret"), err)
	case s.SignHeader != "" && strings.Contains(err.Error(), "header"):
		return nil, usage("SignHeader", "%s %q is not an HTTP header name (%s)", idemcheck.Field("SignHeader"), s.SignHeader, headerNameRule)
	}
	return nil, usage("Sign", "%s: %v", idemcheck.Field("Sign"), err)
}

// checkTarget checks where the API runs and the settings that go with a
// target idemcheck starts.
func (s Spec) checkTarget() error {
	started := s.Command != "" || s.Image != ""
	switch {
	case s.Handler != nil && (s.URL != "" || started):
		return usage("Handler", "give %s alone, not with %s, %s or %s: it is served on loopback for the run", idemcheck.Field("Handler"),
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.Image != "" && (s.URL != "" || s.Command != ""):
		return usage("Image", "give %s alone, not with %s or %s: with %s the URL is the one idemcheck starts the container on",
			idemcheck.Field("Image"), idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.URL != "" && s.Command != "":
		return usage("Command", "give %s or %s, not both: with %s the URL is the one idemcheck starts the target on",
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Command"))
	case s.Handler == nil && s.URL == "" && !started:
		return usage("URL", "%s is required, such as http://127.0.0.1:8080 (or %s or %s, to let idemcheck start the target)",
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case !started && s.Ready != "":
		return usage("Ready", "%s goes with %s or %s: it is how idemcheck knows a target it starts serves", idemcheck.Field("Ready"),
			idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.Image == "" && s.DBImage != "":
		return usage("DBImage", "%s goes with %s", idemcheck.Field("DBImage"), idemcheck.Field("Image"))
	case s.DBEngine != "" && s.DBEngine != targets.EnginePostgres && s.DBEngine != targets.EngineMySQL && s.DBEngine != "mariadb":
		return usage("DBEngine", "%s %q is not an engine idemcheck starts: use postgres or mysql (a MariaDB server)", idemcheck.Field("DBEngine"), s.DBEngine)
	case s.DBEngine != "" && s.Command == "":
		return usage("DBEngine", "%s goes with %s: it is the database idemcheck starts for the target", idemcheck.Field("DBEngine"), idemcheck.Field("Command"))
	case s.DBEngine != "" && s.DSN != "" && dbEngine(s.DBEngine, "") != targets.DSNEngine(s.DSN):
		return usage("DBEngine", "%s %s does not match the database %s, a %s DSN: leave %s out, or give a DSN of its kind",
			idemcheck.Field("DBEngine"), s.DBEngine, targets.RedactDSN(s.DSN), targets.DSNEngine(s.DSN), idemcheck.Field("DBEngine"))
	case s.Image != "" && s.DSN != "" && targets.DSNEngine(s.DSN) == targets.EngineMySQL:
		return usage("DSN", "a MySQL-family database (%s) goes with %s or %s, not %s yet: start the target with %s",
			targets.RedactDSN(s.DSN), idemcheck.Field("Command"), idemcheck.Field("URL"), idemcheck.Field("Image"), idemcheck.Field("Command"))
	case !started && len(s.Env) > 0:
		return usage("Env", "%s goes with %s or %s, a target idemcheck starts", idemcheck.Field("Env"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case !started && len(s.Providers) > 0:
		return usage("Providers", "%s goes with %s or %s: idemcheck serves provider doubles for a target it starts, and hands it their URLs",
			idemcheck.Field("Providers"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case !started && s.TargetLog != "":
		return usage("TargetLog", "%s goes with %s or %s: idemcheck keeps the output of a target it starts",
			idemcheck.Field("TargetLog"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.Image != "" && s.Instances > 1:
		return usage("Instances", "%s goes with %s: a container target is one instance", idemcheck.Field("Instances"), idemcheck.Field("Command"))
	case s.Command != "" && (s.Instances < 1 || s.Instances > MaxInstances):
		return usage("Instances", "%s %d is out of range: use 1 to %d", idemcheck.Field("Instances"), s.Instances, MaxInstances)
	case s.Instances > 1 && s.Command == "":
		return usage("Instances", "%s goes with %s: idemcheck runs replicas only of a target it starts", idemcheck.Field("Instances"), idemcheck.Field("Command"))
	case s.Ready != "" && !strings.HasPrefix(s.Ready, "/") && (s.Ready != targets.ReadyTCP || s.Command == ""):
		// With a command, tcp (its port accepting connections) is a
		// readiness too.
		return usage("Ready", "%s %q must be a path starting with /, such as /healthz (or, with %s, %s: wait until the port accepts connections)",
			idemcheck.Field("Ready"), s.Ready, idemcheck.Field("Command"), targets.ReadyTCP)
	case s.DB != nil && started:
		return usage("DB", "%s goes with %s or %s; a started target's effects are counted in the database idemcheck hands it (%s)",
			idemcheck.Field("DB"), idemcheck.Field("Handler"), idemcheck.Field("URL"), idemcheck.Field("DSN"))
	}
	if err := targets.CheckProviderEnv(s.Providers); err != nil {
		return usage("Providers", "%s %v", idemcheck.Field("Providers"), err)
	}
	for i, kv := range s.Env {
		if _, err := targets.ParseEnv([]string{kv}); err != nil {
			f := idemcheck.Field(fmt.Sprintf("Env[%d]", i))
			return usage(f, "%s %v", f, err)
		}
	}
	return nil
}

// ParseURL reads a target's URL (certify.CheckBase is the rule) into the
// base requests go to (scheme and host) and the URL's own path, "/" when it
// has none. shown is how errors quote it ("" for raw).
func ParseURL(field idemcheck.Field, raw, shown string) (*url.URL, string, error) {
	if shown == "" {
		// The caller's Redactor knows the URL's password and secret
		// query values (Redactor.LearnURL) and hides them.
		shown = raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		u = nil
	}
	if err := certify.CheckBase(u, field, shown); err != nil {
		return nil, "", err
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, path, nil
}

// ParseHeader reads "Name: value" (SplitHeader) as a request header,
// checked as Build checks Headers.
func ParseHeader(field idemcheck.Field, s string) (scenarios.Header, error) {
	return parseHeader(field, SplitHeader(s))
}

// parseHeader is the one rule for a request header: a name that is an HTTP
// token, and a value that is a template without a line break. Its errors
// never quote the value, which may be a credential.
func parseHeader(field idemcheck.Field, h Header) (scenarios.Header, error) {
	switch {
	case h.Name == "":
		return scenarios.Header{}, usage(field, "%s is not a header: write it as 'Name: value' (the text is not shown: it may hold a credential)", field)
	case strings.ContainsAny(h.Value, "\r\n\x00"):
		return scenarios.Header{}, usage(field, "%s %s: the value holds a line break or NUL, which would split the request", field, h.Name)
	case !httpguts.ValidHeaderFieldName(h.Name):
		return scenarios.Header{}, usage(field, "%s %q is not an HTTP header name (%s)", field, h.Name, headerNameRule)
	}
	t, err := idemcheck.ParseTemplate(h.Value)
	if err != nil {
		return scenarios.Header{}, usage(field, "%s %s: %v", field, h.Name, err)
	}
	return scenarios.Header{Name: h.Name, Value: t}, nil
}

// endpoint checks the request and makes it a scenarios.Endpoint on base.
func (s Spec) endpoint(base *url.URL, path string) (scenarios.Endpoint, error) {
	e, err := Request{Method: s.Method, Path: path, Body: s.Body, Headers: s.Headers}.Endpoint(base)
	if err != nil {
		return e, err
	}
	for _, b := range []struct {
		field idemcheck.Field
		text  string
		to    **idemcheck.Template
	}{{"MismatchBody", s.MismatchBody, &e.MismatchBody}, {"FailingBody", s.FailingBody, &e.FailingBody}, {"InvalidBody", s.InvalidBody, &e.InvalidBody}} {
		if b.text == "" {
			continue
		}
		t, err := template(b.field, b.text)
		if err != nil {
			return e, err
		}
		// The invalid body may be broken on purpose.
		if b.field != "InvalidBody" {
			if err := checkJSON(b.field, t, e.Header); err != nil {
				return e, err
			}
		}
		*b.to = &t
	}
	if len(s.Tenants) > 0 {
		if len(s.Tenants) != 2 {
			return e, usage("Tenants", "%s takes two clients' credentials, such as 'Authorization: Bearer A' and 'Authorization: Bearer B'; got %d", idemcheck.Field("Tenants"), len(s.Tenants))
		}
		for i, h := range s.Tenants {
			t, err := parseHeader(idemcheck.Field(fmt.Sprintf("Tenants[%d]", i)), h)
			if err != nil {
				return e, err
			}
			e.Tenants = append(e.Tenants, t)
		}
	}
	if s.OtherPath != "" || s.OtherMethod != "" || s.OtherBody != nil {
		if s.OtherPath == "" {
			return e, usage("OtherPath", "%s is missing: the other endpoint's path, such as /payments", idemcheck.Field("OtherPath"))
		}
		o := &scenarios.OtherEndpoint{Method: e.Method}
		if s.OtherMethod != "" {
			if o.Method, err = method("OtherMethod", s.OtherMethod); err != nil {
				return e, err
			}
		}
		if o.Path, err = requestPath("OtherPath", s.OtherPath); err != nil {
			return e, err
		}
		if s.OtherBody != nil {
			t, err := template("OtherBody", *s.OtherBody)
			if err != nil {
				return e, err
			}
			if err := checkJSON("OtherBody", t, e.Header); err != nil {
				return e, err
			}
			o.Body = &t
		}
		e.Other = o
	}
	return e, nil
}

// Request is an endpoint's request as its user wrote it.
type Request struct {
	Method, Path, Body string
	Headers            []Header
}

// Endpoint checks the request (a method that is an HTTP token, a path
// template starting with / that cannot split the request line, headers, a
// body that is JSON unless its Content-Type says otherwise) and makes it a
// scenarios.Endpoint on base.
func (r Request) Endpoint(base *url.URL) (scenarios.Endpoint, error) {
	e := scenarios.Endpoint{Base: base}
	var err error
	if e.Method, err = method("Method", r.Method); err != nil {
		return e, err
	}
	if e.Path, err = requestPath("Path", r.Path); err != nil {
		return e, err
	}
	if e.Body, err = template("Body", r.Body); err != nil {
		return e, err
	}
	if e.Body.Uses("body") {
		return e, usage("Body", "%s uses {{body}}, the body itself: {{body}} goes in a header or the path, computed over the body sent", idemcheck.Field("Body"))
	}
	for i, h := range r.Headers {
		t, err := parseHeader(idemcheck.Field(fmt.Sprintf("Headers[%d]", i)), h)
		if err != nil {
			return e, err
		}
		e.Header = append(e.Header, t)
	}
	if err := checkJSON("Body", e.Body, e.Header); err != nil {
		return e, err
	}
	return e, nil
}

func method(field idemcheck.Field, m string) (string, error) {
	if m == "" {
		return http.MethodPost, nil
	}
	if !isToken(m) {
		return "", usage(field, "%s %q is not an HTTP method, such as POST", field, m)
	}
	return strings.ToUpper(m), nil
}

func requestPath(field idemcheck.Field, p string) (idemcheck.Template, error) {
	if !strings.HasPrefix(p, "/") {
		return idemcheck.Template{}, usage(field, "%s %q must start with /, such as /orders", field, p)
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return idemcheck.Template{}, usage(field, "%s %q holds a space or control character at byte %d, which would split the request line: percent-encode it (a space is %%20)", field, p, i)
	}
	return template(field, p)
}

func template(field idemcheck.Field, s string) (idemcheck.Template, error) {
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return t, usage(field, "%s: %v", field, err)
	}
	return t, nil
}

// checkJSON refuses a body that is not JSON once its templates are
// filled, unless a Content-Type header says it is something else: without
// one it would go out unlabelled.
func checkJSON(field idemcheck.Field, body idemcheck.Template, headers []scenarios.Header) error {
	sampleIntent := idemcheck.Intent{ID: "ic-sample-1", Key: "00000000-0000-4000-8000-000000000000", Seq: 1}
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Content-Type") && !strings.Contains(strings.ToLower(h.Value.Fill(sampleIntent)), "json") {
			return nil
		}
	}
	sample := body.Fill(sampleIntent)
	if sample == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(sample), &v); err != nil {
		return usage(field, "%s is not valid JSON once its templates are filled (%v); for a body of another type give its Content-Type header (%s)",
			field, err, idemcheck.Field("Headers"))
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), as
// a method must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// effects checks how effects are counted: in SQL, with its arguments and a
// database, or through the API.
//
// A database given to a target reached by URL is there only to count
// effects: without an effect query it would count nothing while the
// report said effects were counted in it. An effect query's templates
// must be ones the request sends, or the query counts what no attempt
// made (a lost effect on every intent of a correct API).
func (s Spec) effects(c *certify.Config, started bool, e scenarios.Endpoint) error {
	dbGiven := s.DSN != "" && !s.DSNDefault || s.DB != nil
	switch {
	case !started && dbGiven && s.EffectSQL == "" && s.EffectHTTP != "":
		field := idemcheck.Field("DSN")
		if s.DB != nil {
			field = "DB"
		}
		return usage(field, "%s goes with %s, and %s counts effects through the API: give one way to count, not both (leave %s out, or count in SQL)",
			field, idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"), field)
	case !started && dbGiven && s.EffectSQL == "":
		field := idemcheck.Field("DSN")
		if s.DB != nil {
			field = "DB"
		}
		return usage(field, "%s needs %s, the query that counts one intent's effects there (such as SELECT count(*) FROM orders WHERE customer_id = $1): "+
			"without one nothing is counted", field, idemcheck.Field("EffectSQL"))
	case s.EffectSQL != "" && s.EffectHTTP != "":
		return usage("EffectHTTP", "give %s or %s, not both: one effect count per endpoint", idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"))
	case s.EffectCount != nil && s.EffectHTTP == "":
		return usage("EffectCount", "%s goes with %s", idemcheck.Field("EffectCount"), idemcheck.Field("EffectHTTP"))
	case s.EffectSQL != "" && s.DSN == "" && s.DB == nil && !started:
		return usage("EffectSQL", "%s needs a database: %s", idemcheck.Field("EffectSQL"), idemcheck.Setting("DB"))
	}
	args, err := ParseEffectArgs(s.EffectSQL, s.EffectArgs)
	if err != nil {
		return err
	}
	for i, a := range args {
		if err := unsent(idemcheck.Field(fmt.Sprintf("EffectArgs[%d]", i)), a, e); err != nil {
			return err
		}
	}
	c.EffectSQL, c.EffectArgs = s.EffectSQL, args
	if s.EffectHTTP == "" {
		return nil
	}
	t, err := ParseEffectHTTP(s.EffectHTTP)
	if err != nil {
		return usage("EffectHTTP", "%s: %v", idemcheck.Field("EffectHTTP"), err)
	}
	if s.EffectCount == nil {
		return usage("EffectHTTP", "%s needs %s: the JSON pointer of the array (its length is the count) or number in the answer, such as /data ('' for the whole answer)",
			idemcheck.Field("EffectHTTP"), idemcheck.Field("EffectCount"))
	}
	if err := assert.ValidatePointer(*s.EffectCount); err != nil {
		return usage("EffectCount", "%s: %v", idemcheck.Field("EffectCount"), err)
	}
	if err := unsent("EffectHTTP", t, e); err != nil {
		return err
	}
	c.EffectHTTP, c.EffectCount = &t, *s.EffectCount
	return nil
}

// unsent refuses an effect template whose per-intent value ({{intent}},
// {{seq}}) the request never sends: the query would look for what no
// attempt carried. The key ({{key}}) is always sent.
func unsent(field idemcheck.Field, t idemcheck.Template, e scenarios.Endpoint) error {
	for _, name := range []string{"intent", "seq"} {
		if !t.Uses(name) || e.Body.Uses(name) || e.Path.Uses(name) || slices.ContainsFunc(e.Header, func(h scenarios.Header) bool { return h.Value.Uses(name) }) {
			continue
		}
		if e.Body.Fill(idemcheck.Intent{}) == "" {
			// The newcomer's mistake: no body at all.
			return usage(field, "%s uses {{%s}}, but the request has no body (%s) and sends no {{%s}} in %s or %s: give the body, "+
				"such as {\"customerId\":\"{{%s}}\",\"totalCents\":4000}, so the count finds what each intent created",
				field, name, idemcheck.Field("Body"), name, idemcheck.Field("Path"), idemcheck.Field("Headers"), name)
		}
		return usage(field, "%s uses {{%s}}, which the request never sends (not in %s, %s or %s): the count would find none of its effects; "+
			"put {{%s}} in the body, such as {\"customerId\":\"{{%s}}\"}, or count by what the request sends ({{key}})",
			field, name, idemcheck.Field("Body"), idemcheck.Field("Path"), idemcheck.Field("Headers"), name, name)
	}
	return nil
}

// ParseEffectArgs parses the templates bound as $1, $2, … of sql, without
// which they mean nothing.
func ParseEffectArgs(sql string, args []string) ([]idemcheck.Template, error) {
	if len(args) > 0 && sql == "" {
		return nil, usage("EffectArgs", "%s needs %s", idemcheck.Field("EffectArgs"), idemcheck.Field("EffectSQL"))
	}
	var out []idemcheck.Template
	for i, a := range args {
		t, err := template(idemcheck.Field(fmt.Sprintf("EffectArgs[%d]", i)), a)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseEffectHTTP reads an HTTP read-back, "GET /path?query" or "/path",
// the path a template: the read-back only ever sends GET.
func ParseEffectHTTP(s string) (idemcheck.Template, error) {
	s = strings.TrimSpace(s)
	if m, rest, ok := strings.Cut(s, " "); ok && !strings.HasPrefix(s, "/") {
		if !strings.EqualFold(m, "GET") {
			return idemcheck.Template{}, fmt.Errorf("%q: the effect read-back only sends GET, so it never changes the target: write GET /path", m)
		}
		s = strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \r\n\t") {
		return idemcheck.Template{}, fmt.Errorf("expected GET and a path such as 'GET /orders?customerId={{intent}}'")
	}
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return t, err
	}
	if !strings.Contains(s, "{{") {
		return t, fmt.Errorf("the path has no {{intent}}: it would count every intent's effects together, not one intent's")
	}
	return t, nil
}

// checks are the checks to run: Checks, or every check when nil, less
// SkipChecks; nil when that is every check.
func (s Spec) checks() ([]string, error) {
	if s.Checks != nil && len(s.Checks) == 0 {
		return nil, usage("Checks", "%s names no check: name the checks to run, such as concurrent-burst,lost-reply (leave it out to run every check)",
			idemcheck.Field("Checks"))
	}
	if err := CheckChecks(s.Checks); err != nil {
		return nil, err
	}
	if len(s.SkipChecks) == 0 {
		return s.Checks, nil
	}
	for i, name := range s.SkipChecks {
		if _, err := scenarios.Lookup(name); err != nil {
			f := idemcheck.Field(fmt.Sprintf("SkipChecks[%d]", i))
			return nil, usage(f, "%s: %v", f, err)
		}
	}
	all := s.Checks
	if all == nil {
		all = scenarios.Names()
	}
	var out []string
	for _, name := range all {
		if !slices.Contains(s.SkipChecks, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, usage("SkipChecks", "%s leaves no check to run", idemcheck.Field("SkipChecks"))
	}
	return out, nil
}

// CheckChecks checks a list of check names.
func CheckChecks(checks []string) error {
	for i, name := range checks {
		if _, err := scenarios.Lookup(name); err != nil {
			f := idemcheck.Field(fmt.Sprintf("Checks[%d]", i))
			return usage(f, "%s: %v", f, err)
		}
	}
	return nil
}

// limits checks the run's caps and puts them, defaults filled, on c.
func (s Spec) limits(c *certify.Config) error {
	switch {
	case s.Rate != 0 && (math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < MinRate):
		return usage("Rate", "%s %v must be a number of requests per second of at least %v, such as 1000", idemcheck.Field("Rate"), s.Rate, MinRate)
	case s.MaxDuration < 0:
		return usage("MaxDuration", "%s %v must be positive, such as 10m", idemcheck.Field("MaxDuration"), s.MaxDuration)
	case s.Timeout != 0 && s.Timeout < MinTimeout:
		return usage("Timeout", "%s %v is too short for any reply to arrive: use %v or more, such as 10s", idemcheck.Field("Timeout"), s.Timeout, MinTimeout)
	case s.MaxBody < 0 || s.MaxBody > MaxMaxBody:
		return usage("MaxBody", "%s %d is out of range: use 1 to %d bytes", idemcheck.Field("MaxBody"), s.MaxBody, MaxMaxBody)
	}
	p := wire.ProtocolAuto
	if s.Protocol != "" {
		var err error
		if p, err = wire.ParseProtocol(s.Protocol); err != nil {
			return usage("Protocol", "%s %q: use auto, http1 or h2", idemcheck.Field("Protocol"), s.Protocol)
		}
	}
	c.Rate, c.Timeout, c.MaxDuration, c.MaxBody, c.Protocol = s.Rate, s.Timeout, s.MaxDuration, s.MaxBody, p
	if c.Rate == 0 {
		c.Rate = scenarios.DefaultRate
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = certify.DefaultMaxDuration
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	return nil
}

// policyFields are the Go names of the policy's fields, by the names a
// policy file (and idemcheck.PolicyError) gives them.
var policyFields = map[string]string{
	"key_header": "KeyHeader", "created_statuses": "CreatedStatuses", "accepted_statuses": "AcceptedStatuses", "replay_statuses": "ReplayStatuses",
	"in_progress_status": "InProgressStatus", "in_progress_statuses": "InProgressStatuses", "mismatch_status": "MismatchStatus",
	"missing_key_status": "MissingKeyStatus", "replay_errors": "ReplayErrors", "replay_header": "ReplayHeader", "lease": "Lease",
	"ignore_fields": "IgnoreFields", "resource_id": "ResourceID", "key_pointer": "KeyPointer", "ack_only": "AckOnly",
	"save_rejected": "SaveRejected", "invalid_key_status": "InvalidKeyStatus", "key_syntax": "KeySyntax",
	"status_pointer": "StatusPointer", "status_done": "StatusDone", "status_failed": "StatusFailed", "status_url_pointer": "StatusURLPointer",
	"arrival_header": "ArrivalHeader",
}

// PolicyField is the Field of a policy's field by its policy-file name
// (key_header is Policy.KeyHeader).
func PolicyField(name string) idemcheck.Field {
	if g, ok := policyFields[name]; ok {
		return idemcheck.Field("Policy." + g)
	}
	return idemcheck.Field("Policy." + name)
}

// CheckPolicy checks a policy: idemcheck.Policy.Validate's rules, the JSON
// pointers it holds, and a lease that is not negative. Its error names the
// policy field as a Field (Policy.KeyHeader).
func CheckPolicy(p idemcheck.Policy) error {
	if err := p.Validate(); err != nil {
		pe, ok := err.(*idemcheck.PolicyError)
		if !ok {
			return idemcheck.Usagef("%v", err)
		}
		f := PolicyField(pe.Field)
		if rest, ok := strings.CutPrefix(pe.Msg, pe.Field); ok {
			return usage(f, "%s %s", f, strings.TrimLeft(rest, ": "))
		}
		return usage(f, "%s: %s", f, pe.Msg)
	}
	for _, ptr := range append([]string{p.ResourceID}, p.IgnoreFields...) {
		if err := assert.ValidatePointer(ptr); err != nil {
			f := idemcheck.Field("Policy.IgnoreFields")
			if ptr == p.ResourceID {
				f = "Policy.ResourceID"
			}
			return usage(f, "%s: %v", f, err)
		}
	}
	for f, ptr := range map[idemcheck.Field]string{"Policy.StatusPointer": p.StatusPointer, "Policy.StatusURLPointer": p.StatusURLPointer} {
		if ptr != "" && assert.ValidatePointer(ptr) != nil {
			return usage(f, "%s %q must be a JSON pointer such as /status", f, ptr)
		}
	}
	if p.KeyPointer != "" && assert.ValidatePointer(p.KeyPointer) != nil {
		return usage("Policy.KeyPointer", "%s %q must be a JSON pointer such as /eventId", idemcheck.Field("Policy.KeyPointer"), p.KeyPointer)
	}
	if p.Lease < 0 {
		return usage("Policy.Lease", "%s %v must not be negative: give the target's lease, such as 2s", idemcheck.Field("Policy.Lease"), p.Lease)
	}
	return nil
}

// OpenDB opens the database an effect count in SQL reads for a target
// reached by URL (Config.DSN), checked against the loopback rule first.
func OpenDB(ctx context.Context, dsn string, allowRemote bool) (*targets.Database, error) {
	if err := targets.CheckDSN(dsn, "DSN", allowRemote); err != nil {
		return nil, err
	}
	open := targets.OpenDatabase
	if allowRemote {
		open = targets.OpenRemoteDatabase
	}
	d, err := open(ctx, dsn)
	if err != nil {
		// Wrapped, not flattened: a refusal names its setting (a
		// FieldError) for the caller to say in its words.
		return nil, idemcheck.Unavailablef("%w", err)
	}
	return d, nil
}

// Started is a target Launch started.
type Started struct {
	URL      *url.URL
	Powers   targets.Powers
	Replicas int
	// DB is the database the target was handed; nil for a handler.
	DB   *targets.Database
	stop func() error
}

// Close stops the target and what was started for it.
func (s *Started) Close() error { return s.stop() }

// Start starts the target: serves the handler, or starts the command or
// the image on its database (DSN, else a throwaway one). output receives
// the target's own output, log one line for each fallback the database
// provider takes (nil discards either).
func (l *Launch) Start(ctx context.Context, output, log io.Writer) (*Started, error) {
	switch {
	case l.Handler != nil:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, idemcheck.Unavailablef("serving the handler on loopback: %v", err)
		}
		srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: time.Minute}
		go func() { _ = srv.Serve(ln) }()
		return &Started{URL: &url.URL{Scheme: "http", Host: ln.Addr().String()}, stop: srv.Close}, nil
	case l.Image != "":
		env, err := targets.ParseEnv(l.Env)
		if err != nil {
			return nil, usage("Env", "%s %v", idemcheck.Field("Env"), err)
		}
		ct, err := targets.StartContainerTarget(ctx, targets.ContainerOptions{
			Image: l.Image, DBImage: l.DBImage, DSN: l.DSN, Env: env, Ready: l.Ready, Log: log, Output: output,
			AllowRemote: l.AllowRemote, Providers: l.Providers,
		})
		if err != nil {
			return nil, err
		}
		return &Started{URL: ct.URL, Powers: ct.Powers(), Replicas: 1, DB: ct.DB, stop: ct.Close}, nil
	}
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: l.Command, Instances: l.Instances, DSN: l.DSN, Engine: l.DBEngine, Env: l.Env,
		AllowRemote: l.AllowRemote, Logs: output, Providers: l.Providers, Ready: l.Ready})
	if err != nil {
		return nil, err
	}
	return &Started{URL: pt.URL, Powers: pt.Powers(), Replicas: pt.Replicas(), DB: pt.DB, stop: func() error { pt.Close(); return nil }}, nil
}

// Attach points the certification at a started target: its address, its
// powers, its replicas and, for an effect count in SQL, the database it
// was handed.
func (b *Built) Attach(s *Started) {
	attach(&b.Config.Settings, s)
	b.Config.Replicas = s.Replicas
}

// dbEngine is the engine of a started target's database: the one named
// ("mariadb" is MySQL's family), else the DSN's, else PostgreSQL.
func dbEngine(named, dsn string) string {
	switch {
	case named == "mariadb" || named == targets.EngineMySQL:
		return targets.EngineMySQL
	case named != "":
		return named
	case dsn != "":
		return targets.DSNEngine(dsn)
	}
	return targets.EnginePostgres
}

// UseDatabase points c's effect count at d, whatever its engine: a
// PostgreSQL pool (DB) or a MySQL-family database (EffectDB).
func UseDatabase(c *certify.Config, d *targets.Database) { useDatabase(&c.Settings, d) }

// UseSoakDatabase is UseDatabase for a soak.
func UseSoakDatabase(c *certify.SoakConfig, d *targets.Database) { useDatabase(&c.Settings, d) }

func useDatabase(c *certify.Settings, d *targets.Database) {
	c.DB = d.Pool
	if d.SQL != nil {
		c.EffectDB = d.SQL
	}
}
