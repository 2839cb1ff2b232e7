// Package certify is idemcheck's entry point from Go: Run certifies one
// endpoint, Soak soaks it. Run checks the configuration before any
// traffic, runs the scenarios against the target, counts effects in the
// database and hands the history to the checker; the Result holds the
// Report and the History. The command, the suites, idemchecktest and the
// benchmarks all certify through Run.
//
// Soak is the other mode of the same run: it checks the configuration by
// the same rules, sends a pre-flight request, then a rate of intents under
// the faults of a bad day (runner.Soak), counts every intent's effects,
// writes the history as it goes (a file put in place only once the soak
// has a report) and tallies it (assert.SoakTally) into a SoakReport with
// its cost estimate. `idemcheck soak` runs through Soak. Both take one
// Settings, embedded in Config and SoakConfig: the endpoint, the policy,
// the effect count, the limits on each attempt, redaction, the powers
// over the target, TLS, the rate and the loopback rule.
//
// Certifying a service that already runs, by its URL:
//
//	pool, _ := pgxpool.New(ctx, "postgres://app@127.0.0.1/shop") // where the orders are written
//	settings := certify.Settings{
//		Endpoint: scenarios.Endpoint{Base: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, Method: "POST",
//			Path: idemcheck.MustTemplate("/orders"),
//			Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`)},
//		Policy: idemcheck.IETF(),
//		DB:     pool, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
//		EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")},
//	}
//	res, err := certify.Run(ctx, certify.Config{Settings: settings, Options: scenarios.Defaults})
//	if err != nil {
//		return err // an *idemcheck.Error: its exit code, and the Config field at fault
//	}
//	fmt.Println(res.Report.Verdict) // pass, fail or inconclusive; res.Report.Anomalies say why
//
// A target reached by URL gives idemcheck no powers over it, so the fault
// checks are skipped with the reason. A target that idemcheck starts itself
// (targets.StartProcessTarget for a command, targets.StartContainerTarget
// for an image) gives them: set Config.Powers to its Powers().
//
// Errors are *idemcheck.Error with an exit code; a configuration error
// names the Config or SoakConfig field it is about (an
// *idemcheck.FieldError), which the command reports as its flag.
//
// It imports the layers below it (scenarios, runner, targets, assert) and the
// leaves (internal/wire, internal/netguard); never a front end (internal/config, internal/suite, idemchecktest, cmd), a
// renderer (internal/render) or an example: they build on it
// (layers_test.go in the root package keeps it so).
package certify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Settings are what every run shares, a certification (Config) and a soak
// (SoakConfig): the endpoint and its contract, where effects are counted,
// the limits on each attempt, what is redacted, the powers over the
// target, its TLS, the pace and the loopback rule. Both configurations
// embed it, so that a setting means one thing in both and a front end
// fills it once (internal/config builds either from one description).
type Settings struct {
	Endpoint scenarios.Endpoint
	Policy   idemcheck.Policy
	// DB, when set, is where EffectSQL counts each intent's effects.
	DB *pgxpool.Pool
	// EffectDB, when set instead of DB, is a database of another engine
	// where EffectSQL counts, by the same rules: a MySQL or MariaDB
	// database (targets.Database.SQL), whose query takes ? placeholders.
	EffectDB targets.EffectDB
	DBName   string // the DSN with its password redacted, for the report
	// DSN, when set, is the database's DSN, checked against the loopback
	// rule (CheckDSN) before any traffic; DB must have been opened on it
	// with the same AllowRemote.
	DSN        string
	EffectSQL  string
	EffectArgs []idemcheck.Template
	// Timeout bounds each attempt (runner.DefaultTimeout when 0).
	Timeout time.Duration
	// MaxBody is how many bytes of each reply body are kept
	// (runner.DefaultMaxBody, 64 KiB, when 0).
	MaxBody int64
	// Redactor hides the run's secrets in its history and report; the
	// command passes the one its outputs go through, so that what the run
	// learns is hidden there too. Nil means the run makes one. Redact,
	// Secrets, RedactFields and RedactQuery are taught to it.
	Redactor *idemcheck.Redactor
	// Redact names headers whose values never reach a report or history,
	// beside those idemcheck.Redactor hides by name; the tenants' header
	// names are always added.
	Redact []string
	// Secrets are values hidden wherever they appear in a report or
	// history (a suite's ${NAME} expansions).
	Secrets []string
	// RedactFields (JSON pointers into bodies) and RedactQuery (query
	// parameter names) name more values to hide wherever they appear.
	RedactFields, RedactQuery []string
	// Powers, when set, let the harness crash the target and fault its
	// database link, for the fault checks and a soak's database-link
	// faults: the target was started by idemcheck (targets.ProcessTarget,
	// targets.ContainerTarget). Nil skips those checks with the reason. A
	// target started with provider doubles (ProcessOptions.Providers,
	// ContainerOptions.Providers) hands them over with its Powers
	// (targets.Downstream): its calls to them are recorded and judged, and
	// failed-attempt faults them.
	Powers targets.Powers
	// AllowRemote lets traffic go to a target that is not on loopback.
	AllowRemote bool
	// Words are the caller's words for the fields a report names, such as
	// why a check was skipped ("set Powers"), the checker's hints
	// (assert.ReportIn) or why a soak proved nothing: the command's flags,
	// a suite's keys. Nil says them in Go's words.
	Words map[idemcheck.Field]idemcheck.Word
	// Rate is the run's pace. For Run it caps requests per second
	// (runner.DefaultRate when 0; a negative rate means no cap); for
	// Soak it is the intents started per second, a whole number from 1 to
	// MaxSoakRate, their retries on top.
	Rate float64
	// TLS is the client's TLS configuration for an https:// target (trust,
	// client certificate, verification), used by every connection the run
	// opens to it; nil means the system's roots.
	TLS *tls.Config
}

// Config is one endpoint to certify.
type Config struct {
	Settings
	// Name labels the target in reports ("orders (reference)").
	Name string
	// Checks to run, in order; empty means all that have a scenario.
	Checks  []string
	Options scenarios.Options
	// EffectHTTP, when set, counts effects through the API itself: a GET
	// of this path, its answer's array (or number) at EffectCount.
	EffectHTTP  *idemcheck.Template
	EffectCount string
	// Protocol chooses the burst engine (auto when empty).
	Protocol idemcheck.Protocol
	// Timed turns off the scheduling of bursts' writes at the database
	// link of a target idemcheck started: bursts are timed only.
	Timed bool
	// Replicas is how many instances of the target share its address
	// behind idemcheck's per-connection balancer. With more than one, auto
	// bursts go out over HTTP/1.1: an HTTP/2 burst is one connection per
	// release lane (one by default), which that balancer hands to as many
	// replicas at most, while a real deployment's
	// per-request balancing spreads the attempts over all of them.
	Replicas int
	// TargetLog is the file the started target's stdout and stderr go to;
	// the report names it (Target.Log).
	TargetLog string
	// TargetLogOnExit names TargetLog in the report only when the target
	// exited on its own during the run: for a log kept only then.
	TargetLogOnExit bool
	// Preflight sends one plain request before the checks and stops the
	// run when the target refuses it (see runner.Runner.Preflight): the
	// error is then a *runner.RefusedError.
	Preflight bool
	// NoDBLinkFaults, when set, says why no database-link fault can act on
	// the target (a database engine idemcheck cannot fault): the checks
	// that need one are skipped with it. Empty: decided from the link
	// itself, which skips them when no session of the database's engine
	// came through it (runner.Runner.DBLinkFaults).
	NoDBLinkFaults string
	// MaxDuration caps the whole run (DefaultMaxDuration when 0).
	MaxDuration time.Duration
	Progress    func(runner.Progress)
}

// DefaultMaxDuration bounds a run unless told otherwise, so a
// misconfigured run against a shared environment stops by itself.
const DefaultMaxDuration = 10 * time.Minute

// Result is a finished certification.
type Result struct {
	History *idemcheck.History
	Report  idemcheck.Report
}

// Run certifies one endpoint. Errors are *idemcheck.Error with the exit code
// they map to: 2 for configuration the run could not start with, 3 for a
// target or harness that could not run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	red := cfg.redactor()
	res, err := run(ctx, cfg, red)
	// An error may quote what the run was given or met: a secret.
	return res, red.Error(err)
}

// redactor is the run's redactor (Redactor, or a new one), taught the
// settings' secrets before anything can quote them, as the runner teaches
// it (runner.Teach), and the fixed header values; the key header stays
// in clear.
func (s *Settings) redactor() *idemcheck.Redactor {
	red := s.Redactor
	if red == nil {
		red = idemcheck.NewRedactor()
	}
	runner.Teach(red, s.Policy, s.Endpoint, s.Redact, s.Secrets, s.RedactFields, s.RedactQuery)
	for _, h := range slices.Concat(s.Endpoint.Header, s.Endpoint.Tenants) {
		if !slices.ContainsFunc(idemcheck.TemplateNames, h.Value.Uses) {
			// A fixed value is known before the first send (an error
			// may quote it); one filled per intent is learned as sent.
			red.LearnHeader(h.Name, h.Value.Fill(idemcheck.Intent{}))
		}
	}
	// The fixed query values and body fields RedactQuery and RedactFields
	// name, for the report's target, which is not a sent request.
	red.LearnQuery(s.Endpoint.Path.Fill(idemcheck.Intent{}))
	red.LearnBody([]byte(s.Endpoint.Body.Fill(idemcheck.Intent{})))
	return red
}

// sqlEffects is the effect count in SQL the settings describe, checked
// (checkEffectSQL) before anything is sent; nil without EffectSQL.
func (s *Settings) sqlEffects(ctx context.Context) (*runner.Effects, error) {
	if s.EffectSQL == "" {
		return nil, nil
	}
	if s.DB == nil && s.EffectDB == nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s needs a database: %s", idemcheck.Field("EffectSQL"), idemcheck.Setting("DB"))
	}
	effects := &runner.Effects{Pool: s.DB, SQL: s.EffectSQL, Args: s.EffectArgs}
	if s.DB == nil {
		effects.DB = s.EffectDB
	}
	if err := checkEffectSQL(ctx, effects); err != nil {
		return nil, err
	}
	return effects, nil
}

// run is Run with its redactor.
func run(ctx context.Context, cfg Config, red *idemcheck.Redactor) (*Result, error) {
	start := time.Now()
	if cfg.Checks == nil {
		cfg.Checks = scenarios.Names()
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, idemcheck.Usagef("%v", err)
	}
	scs, plan, err := scenarios.Plan(cfg.Checks, cfg.Options, cfg.Policy, cfg.Endpoint, cfg.Powers, cfg.Words)
	if err != nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Checks", "%s: %v", idemcheck.Field("Checks"), err)
	}
	if err := targets.CheckDSN(cfg.DSN, "DSN", cfg.AllowRemote); err != nil {
		return nil, err
	}
	upstream, err := ResolveTargetTLS(ctx, cfg.Endpoint.Base, cfg.AllowRemote, cfg.TLS)
	if err != nil {
		return nil, err
	}
	var effects *runner.Effects
	if cfg.EffectHTTP != nil && cfg.EffectSQL != "" {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "give %s or %s, not both: one effect count per endpoint", idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"))
	}
	if cfg.EffectHTTP != nil {
		effects = &runner.Effects{HTTP: &runner.HTTPEffects{
			Base: cfg.Endpoint.Base, Upstream: upstream, Path: *cfg.EffectHTTP, Count: cfg.EffectCount,
			Header: readBackHeader(cfg.Endpoint.Header, cfg.Policy.KeyHeader), AllowRemote: cfg.AllowRemote, TLS: cfg.TLS,
		}}
		if err := effects.Try(ctx); err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "EffectHTTP", "%s: the read-back of a fresh intent failed: %v: it must answer 2xx with JSON holding an array or a number at %s",
				idemcheck.Field("EffectHTTP"), err, idemcheck.Field("EffectCount"))
		}
	}
	if cfg.EffectSQL != "" {
		if effects, err = cfg.sqlEffects(ctx); err != nil {
			return nil, err
		}
	}

	h := &idemcheck.History{Run: idemcheck.Run{
		Target: idemcheck.Target{
			Name: cfg.Name, URL: cfg.Endpoint.Base.String(), Method: cfg.Endpoint.Method,
			Path: cfg.Endpoint.Path.Fill(idemcheck.Intent{ID: "{{intent}}", Key: "{{key}}"}),
		},
		Policy:      cfg.Policy,
		EffectQuery: cfg.EffectSQL,
	}}
	if cfg.EffectSQL != "" {
		// The report says effects were counted in the database only when
		// they were: a database handed to a started target, with no query
		// to count in it, counts nothing.
		h.Run.Target.Database = cfg.DBName
	}
	if g := cfg.Endpoint.Sign; g != nil {
		h.Run.Target.Signing = &idemcheck.TargetSigning{Scheme: g.Scheme, Header: g.SignatureHeader(), SkewMS: g.Skew.Milliseconds()}
	}
	if effects != nil && effects.HTTP != nil {
		// The read-back's path may carry a suite's secret (${NAME}).
		desc := red.String(effects.HTTP.Describe())
		h.Run.EffectQuery, h.Run.Target.ReadBack = desc, desc
	}
	h.Run.Checks, h.Run.NotAsked = plan, scenarios.NotAsked(plan)
	h.Run.Target.Insecure = cfg.Endpoint.Base.Scheme == "https" && cfg.TLS != nil && cfg.TLS.InsecureSkipVerify
	if cfg.Replicas > 1 && (cfg.Protocol == "" || cfg.Protocol == idemcheck.ProtocolAuto) {
		cfg.Protocol = idemcheck.ProtocolHTTP1
	}
	rate := cfg.Rate
	if rate == 0 {
		rate = runner.DefaultRate
	}
	maxDur := cfg.MaxDuration
	if maxDur <= 0 {
		maxDur = DefaultMaxDuration
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, maxDur, errMaxDuration)
	defer cancel()
	r := &runner.Runner{
		Endpoint: cfg.Endpoint, Policy: cfg.Policy, Effects: effects,
		Timeout: cfg.Timeout, Redactor: red, Redact: cfg.Redact, Secrets: cfg.Secrets, RedactFields: cfg.RedactFields, RedactQuery: cfg.RedactQuery, Progress: cfg.Progress, Rate: max(rate, 0), Powers: cfg.Powers, Protocol: cfg.Protocol, Timed: cfg.Timed,
		Upstream: upstream, AllowRemote: cfg.AllowRemote, MaxBody: cfg.MaxBody, TLS: cfg.TLS, Preflight: cfg.Preflight,
		NoDBLinkFaults: cfg.NoDBLinkFaults, Settle: cfg.Options.Settle,
	}
	if err := r.Run(runCtx, scs, h); err != nil {
		var refusedErr *runner.RefusedError
		var ie *idemcheck.Error
		if (errors.As(err, &refusedErr) || errors.As(err, &ie) && ie.Code == idemcheck.ExitUsage) && ctx.Err() == nil {
			// The pre-flight's verdict on the configuration.
			return nil, err
		}
		if cfg.TargetLog != "" && ctx.Err() == nil {
			err = fmt.Errorf("%w (the target's output is in %s)", err, cfg.TargetLog)
		}
		if errors.Is(context.Cause(runCtx), errMaxDuration) && ctx.Err() == nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUnavailable, "MaxDuration", "the run went past its duration cap of %v: raise %s, or send less (%s, %s)",
				maxDur, idemcheck.Field("MaxDuration"), idemcheck.Field("Options.BurstRounds"), idemcheck.Field("Options.Rounds"))
		}
		if ctx.Err() != nil {
			return nil, idemcheck.Unavailablef("interrupted: %v", context.Cause(ctx))
		}
		// Wrapped, not quoted: a setting the error names (a silent
		// pre-flight's Timeout) stays a Field the caller says in its words.
		return nil, idemcheck.Unavailablef("%w", err)
	}
	if n := refused(h); n == len(h.Attempts) && n > 0 {
		return nil, idemcheck.Unavailablef("target %s refused every connection: is it still running?", cfg.Endpoint.Base.Host)
	}
	if cfg.TargetLog != "" && (!cfg.TargetLogOnExit || Exited(h)) {
		h.Run.Target.Log = cfg.TargetLog
	}
	rep := assert.ReportIn(h, cfg.Words)
	rep.Stats.DurationMS = time.Since(start).Milliseconds()
	return &Result{History: h, Report: rep}, nil
}

var errMaxDuration = errors.New("the run's duration cap")

// readBackHeader is what an effect read-back sends: the endpoint's headers
// (its credentials) without the key header and the body's Content-Type,
// since a GET carries neither.
func readBackHeader(hs []scenarios.Header, keyHeader string) []scenarios.Header {
	var out []scenarios.Header
	for _, h := range hs {
		if strings.EqualFold(h.Name, keyHeader) || strings.EqualFold(h.Name, "Content-Type") {
			continue
		}
		out = append(out, h)
	}
	return out
}

// Exited reports whether the target exited on its own during the run
// recorded in h.
func Exited(h *idemcheck.History) bool {
	for _, e := range h.Events {
		if e.Kind == idemcheck.TargetExited {
			return true
		}
	}
	return false
}

// ResolveTarget refuses a URL that is not absolute http(s) and a
// non-loopback target unless allowed, and dials the target once, so an
// unreachable one fails before any traffic is sent. It returns the address
// it reached: without allowRemote the loopback IP:port it checked, which
// every later connection to the target must use instead of the URL's
// host, so no resolver is asked again; with it, the URL's host:port.
func ResolveTarget(ctx context.Context, base *url.URL, allowRemote bool) (string, error) {
	return ResolveTargetTLS(ctx, base, allowRemote, nil)
}

// ResolveTargetTLS is ResolveTarget for an https:// target reached with
// the client TLS configuration cfg (its client certificate is offered in
// the handshake it opens).
func ResolveTargetTLS(ctx context.Context, base *url.URL, allowRemote bool, cfg *tls.Config) (string, error) {
	if err := checkURL(base, "Endpoint.Base", allowRemote); err != nil {
		return "", err
	}
	hostport := runner.Upstream(base)
	addr, err := netguard.Pin(ctx, hostport, allowRemote, 3*time.Second)
	if err != nil {
		if errors.Is(err, netguard.ErrNotLoopback) {
			return "", idemcheck.Fieldf(idemcheck.ExitUsage, "Endpoint.Base", "%s host %s: %v", idemcheck.Field("Endpoint.Base"), base.Hostname(), err)
		}
		return "", idemcheck.Fieldf(idemcheck.ExitUnavailable, "Endpoint.Base", "cannot reach target %s: %v (is it running? check %s)", hostport, unwrapNet(err), idemcheck.Field("Endpoint.Base"))
	}
	if base.Scheme == "https" {
		if err := checkSpeaksTLS(ctx, addr, runner.ClientTLS(cfg, base)); err != nil {
			return "", err
		}
	}
	return addr, nil
}

// checkSpeaksTLS opens one TLS handshake with an https:// target, so that
// a target serving plain HTTP is a usage error naming --url before any
// attempt, rather than every attempt failing as if the target were down.
// Certificates are checked by the run itself, not here.
func checkSpeaksTLS(ctx context.Context, addr string, cfg *tls.Config) error {
	// A protocol probe: the handshake, and no data. The certificate is
	// checked by the pre-flight (or the run), whose error names the flags.
	cfg.InsecureSkipVerify = true
	// Whether the server asked for a client certificate: a TLS 1.2 server
	// that wants one and gets none may say only "handshake failure".
	certs, asked := cfg.Certificates, false
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked = true
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		if len(certs) > 0 {
			return &certs[0], nil
		}
		return &tls.Certificate{}, nil
	}
	d := tls.Dialer{Config: cfg}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err == nil {
		return conn.Close()
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Endpoint.Base", "%s is https:// but the target at %s answered in plain text, not TLS: use http://", idemcheck.Field("Endpoint.Base"), addr)
	}
	if asked && len(certs) == 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "TLS.Certificates", "the target at %s wants a TLS client certificate and refused the handshake without one (%s): %s", addr, unwrapNet(err), idemcheck.Setting("TLS.Certificates"))
	}
	if asked {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "TLS.Certificates", "the target at %s refused the TLS client certificate of %s (%s): give one its CA trusts", addr, idemcheck.Field("TLS.Certificates"), unwrapNet(err))
	}
	return idemcheck.Unavailablef("TLS handshake with target %s: %v", addr, unwrapNet(err))
}

// checkURL checks a target URL without sending anything (CheckBase), and,
// unless allowRemote, that its host is one the loopback rule accepts
// (RequireLoopback). field names the setting in the error: Go's name
// (Endpoint.Base) or the caller's own (a file's key).
func checkURL(base *url.URL, field string, allowRemote bool) error {
	if err := CheckBase(base, idemcheck.Field(field), ""); err != nil {
		return err
	}
	if !allowRemote {
		return RequireLoopback(field, base.Hostname())
	}
	return nil
}

// CheckBase is the one rule for a target's URL: absolute http:// or
// https://, with a host, and nothing idemcheck would not send (credentials,
// a query, a fragment). Its path is the caller's to use. field names the
// setting; shown is the URL as its user wrote it, quoted in the errors (a
// file's text before ${NAME} expansion), or "" to quote base itself with
// its password hidden. A nil base is a URL that did not parse.
func CheckBase(base *url.URL, field idemcheck.Field, shown string) error {
	if shown == "" && base != nil {
		shown = base.Redacted()
	}
	switch {
	case base == nil && shown == "":
		return idemcheck.Fieldf(idemcheck.ExitUsage, field, "%s is not set: give an absolute http:// or https:// URL, such as http://127.0.0.1:8080", field)
	case base == nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https"):
		return idemcheck.Fieldf(idemcheck.ExitUsage, field, "%s %q is not an absolute http:// or https:// URL, such as http://127.0.0.1:8080", field, shown)
	case base.User != nil:
		return idemcheck.Fieldf(idemcheck.ExitUsage, field, "%s %q carries credentials (user:password@), which idemcheck would not send: send them in a header instead (%s), such as 'Authorization: Basic …'",
			field, shown, idemcheck.Field("Endpoint.Header"))
	case base.RawQuery != "" || base.ForceQuery:
		return idemcheck.Fieldf(idemcheck.ExitUsage, field, "%s %q carries a query string, which idemcheck would not send: put it in the request path (%s), such as /orders?…",
			field, shown, idemcheck.Field("Endpoint.Path"))
	case base.Fragment != "":
		return idemcheck.Fieldf(idemcheck.ExitUsage, field, "%s %q carries a fragment, which is never sent: leave it out", field, shown)
	}
	return nil
}

// RequireLoopback refuses a host off this machine: idemcheck sends traffic
// elsewhere only with AllowRemote. It sends nothing, not even a DNS query:
// loopback IP literals, "localhost" and "*.localhost" pass, and so does a
// name the hosts file maps to loopback only; any other name is refused
// without a query, which would itself leave the machine and whose answer
// could change before the connection. field names the setting that gave
// the host, which the refusal names.
func RequireLoopback(field, host string) error {
	if err := netguard.Check(host); err != nil {
		return idemcheck.Fieldf(idemcheck.ExitUsage, idemcheck.Field(field), "%s host %s: %v; use 127.0.0.1 or localhost, or %s to send traffic off this machine",
			idemcheck.Field(field), host, err, idemcheck.Setting("AllowRemote"))
	}
	return nil
}

// checkEffectSQL prepares the effect query, so a typo or a missing table is
// reported with PostgreSQL's own message before any traffic is sent, checks
// it takes as many parameters as there are arguments and returns one
// column, asks PostgreSQL for every function it calls and refuses one that
// may write past the read-only transaction (volatile, from an extension
// such as dblink, administrative: runner.CheckFunctions), and only then
// runs it once, read-only, so a query that tries to write (a DELETE, an
// UPDATE ... RETURNING, a data-modifying WITH) or runs past the statement
// timeout is refused before anything is sent. It changes nothing.
//
// On a database of another engine (e.DB) that engine's Check does the
// same, by its own means.
func checkEffectSQL(ctx context.Context, e *runner.Effects) error {
	if e.DB != nil && e.Pool == nil {
		return e.Try(ctx)
	}
	conn, err := e.Pool.Acquire(ctx)
	if err != nil {
		return idemcheck.Unavailablef("database: %v", err)
	}
	sd, err := conn.Conn().Prepare(ctx, "", e.SQL)
	conn.Release()
	if err != nil {
		return effectSQLError(err)
	}
	if len(sd.ParamOIDs) != len(e.Args) {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s takes %d parameters ($1..$%d) but %d %s were given",
			idemcheck.Field("EffectSQL"), len(sd.ParamOIDs), len(sd.ParamOIDs), len(e.Args), idemcheck.Field("EffectArgs"))
	}
	if len(sd.Fields) != 1 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must return one number (such as SELECT count(*) ...), it returns %d columns", idemcheck.Field("EffectSQL"), len(sd.Fields))
	}
	if err := runner.CheckFunctions(ctx, e.Pool, e.SQL); err != nil {
		var wf *runner.WritingFunction
		if errors.As(err, &wf) {
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must only read, and %v", idemcheck.Field("EffectSQL"), wf)
		}
		return effectSQLError(err)
	}
	if err := e.Try(ctx); err != nil {
		return effectSQLError(err)
	}
	return nil
}

// effectSQLError names --effect-sql and says what PostgreSQL said.
func effectSQLError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "25006": // read_only_sql_transaction
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s must only read, and this query writes (PostgreSQL refused it in a read-only transaction: %s): count with SELECT", idemcheck.Field("EffectSQL"), pe.Message)
		case "57014": // query_canceled: the statement timeout
			return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s took longer than %v for one intent: count over an indexed column", idemcheck.Field("EffectSQL"), runner.EffectTimeout)
		}
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s: PostgreSQL says: %s (SQLSTATE %s)", idemcheck.Field("EffectSQL"), pe.Message, pe.Code)
	}
	return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectSQL", "%s: %v", idemcheck.Field("EffectSQL"), err)
}

func refused(h *idemcheck.History) int {
	n := 0
	for _, a := range h.Attempts {
		if a.Outcome == idemcheck.NotSent {
			n++
		}
	}
	return n
}

func unwrapNet(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
