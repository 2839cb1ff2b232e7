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
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math"
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
	"github.com/idemcheck/idemcheck/runner"
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
	// otherwise: the library's own default (runner.DefaultMaxBody),
	// one value for every front end.
	DefaultMaxBody = runner.DefaultMaxBody
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
		c.Rate = runner.DefaultRate
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
