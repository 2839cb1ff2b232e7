package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/outfile"
	"github.com/idemcheck/idemcheck/internal/program"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/internal/userfile"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// outputs are the files a run writes when it finishes, never before.
type outputs struct {
	json, junit, history, html string
	// stream is where a history goes when --history is "-": the
	// command's standard output, which then carries nothing else.
	stream   io.Writer
	noColour bool
	// allowInconclusive exits 0 on an inconclusive verdict.
	allowInconclusive bool
	// red hides the run's secrets in every file written (redactorOf).
	red *idemcheck.Redactor
}

func (o *outputs) register(fs *flag.FlagSet) {
	fs.StringVar(&o.json, "json", "", "write the JSON report (version 1) to `FILE`")
	if fs.Name() != "soak" {
		fs.StringVar(&o.junit, "junit", "", "write a JUnit XML report to `FILE`, one test case per endpoint and check")
	}
	fs.StringVar(&o.html, "html", "", "write a self-contained HTML report to `FILE`: the verdict, the contract, each check's statuses and bursts, each anomaly's attempts on a timeline (docs/html.md)")
	fs.StringVar(&o.history, "history", "", "write every attempt as JSON lines to `FILE`, for idemcheck check; - writes it to standard output (the report then goes to standard error), for idemcheck check to read from a pipe")
	fs.BoolVar(&o.noColour, "no-color", false, "no colour, even on a terminal")
	fs.BoolVar(&o.allowInconclusive, "allow-inconclusive", false,
		"exit 0, not 4, when no anomaly was found but some check's scenario did not happen (inconclusive); it is still reported")
}

// check makes sure every output file can be written, before anything is
// sent: a run must not print its verdict and then fail on a path.
func (o *outputs) check(more ...outputFlag) error {
	named := map[string]string{}
	for _, f := range append([]outputFlag{{"--json", o.json}, {"--junit", o.junit}, {"--html", o.html}, {"--history", o.history}}, more...) {
		if f.path == "" || f.flag == "--history" && f.path == "-" {
			continue
		}
		// Two outputs to one file would leave only the last written.
		key := filepath.Clean(f.path)
		if abs, err := filepath.Abs(key); err == nil {
			key = abs
		}
		if prev, ok := named[key]; ok {
			return idemcheck.Usagef("%s and %s both name %s: give each output its own file", prev, f.flag, f.path)
		}
		named[key] = f.flag
		if fi, err := os.Stat(f.path); err == nil && fi.IsDir() {
			return idemcheck.Usagef("%s %s is a folder: name a file", f.flag, f.path)
		}
		out, err := outfile.Create(f.path)
		if err != nil {
			return idemcheck.Usagef("%s %s cannot be written: %v", f.flag, f.path, userfile.Cause(errors.Unwrap(err)))
		}
		out.Abort()
	}
	return nil
}

// writeRedacted writes the file at path whole or not at all
// (outfile.WriteAtomic), every secret red knows hidden in what write
// writes.
func writeRedacted(red *idemcheck.Redactor, path string, write func(io.Writer) error) error {
	return outfile.WriteAtomic(path, func(w io.Writer) error {
		rw := red.Writer(w)
		if err := write(rw); err != nil {
			return err
		}
		return rw.Flush()
	})
}

// outputFlag is a flag that names a file the command writes.
type outputFlag struct{ flag, path string }

// route sends a history asked for with --history - to stdout, and returns
// where everything else the command prints goes: stderr then, so that
// standard output holds the history alone (idemcheck certify … --history - |
// idemcheck check). Otherwise it returns stdout.
func (o *outputs) route(stdout, stderr io.Writer) io.Writer {
	if o.history != "-" {
		return stdout
	}
	o.stream = stdout
	return stderr
}

// MinTimeout is the shortest per-attempt timeout (config.MinTimeout).
const MinTimeout = config.MinTimeout

// runFlags are the flags every command that sends traffic shares.
type runFlags struct {
	outputs
	protocol    string
	timedBursts bool
	rate        float64
	maxDuration time.Duration
	timeout     time.Duration
	allowRemote bool
	maxBody     int64
	targetLog   string
	tlsFlags
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.outputs.register(fs)
	fs.StringVar(&r.protocol, "protocol", "auto", "burst engine: auto (HTTP/2 single-packet release where the target speaks h2, else HTTP/1.1 last-byte sync), http1 or h2")
	fs.BoolVar(&r.timedBursts, "timed-bursts", false, "for a target idemcheck starts (--cmd, --image): do not schedule the bursts' writes at its database link; bursts are then timed only, as for a --url target, and races narrower than their spread may be missed")
	fs.Float64Var(&r.rate, "rate", runner.DefaultRate, "cap on requests per second (a burst is released whole); raise it for production-like load")
	fs.DurationVar(&r.maxDuration, "max-duration", certify.DefaultMaxDuration, "cap on the whole run's duration")
	fs.DurationVar(&r.timeout, "timeout", config.DefaultTimeout, "per-attempt timeout")
	fs.BoolVar(&r.allowRemote, "allow-remote", false, "allow traffic to a target or database that is not on loopback (without it, hosts must be loopback IPs, localhost, or names the hosts file maps to loopback; no DNS query is sent)")
	fs.Int64Var(&r.maxBody, "max-body", defaultMaxBody, "reply body `bytes` kept per attempt, in memory and in the history (the rest is read no further)")
	fs.StringVar(&r.targetLog, "target-log", "", "for a target idemcheck starts (--cmd, --image, a suite's target): write its stdout and stderr to `FILE`, named in the report (a container's when the run ends). "+
		"Default: a temporary file, kept (and named in the report) only when the target exits on its own during the run or the run fails, removed otherwise and on Ctrl-C; each exit's last 20 lines are in the report either way")
	r.tlsFlags.register(fs)
}

// validate checks what only the command has: the output files and the
// TLS files. The rest is config.Build's.
func (r *runFlags) validate() error {
	// A zero in a Spec means "the default"; a zero typed on the command
	// line is a mistake, since every one of these flags has its default.
	switch {
	case r.timeout == 0:
		return idemcheck.Usagef("--timeout 0s is too short for any reply to arrive: use %v or more, such as 10s", config.MinTimeout)
	case r.maxDuration == 0:
		return idemcheck.Usagef("--max-duration 0s must be positive, such as 10m")
	case r.maxBody == 0:
		return idemcheck.Usagef("--max-body 0 is out of range: use 1 to %d bytes", config.MaxMaxBody)
	}
	if err := r.outputs.check(); err != nil {
		return err
	}
	return r.tlsFlags.load()
}

// apply puts the run's options on s.
func (r *runFlags) apply(s *config.Spec) {
	s.Rate, s.MaxDuration, s.Timeout, s.MaxBody = r.rate, r.maxDuration, r.timeout, r.maxBody
	s.Protocol, s.Timed, s.TargetLog = r.protocol, r.timedBursts, r.targetLog
	s.AllowRemote = s.AllowRemote || r.allowRemote
	s.TLS = r.tlsFlags.config
	s.Preflight = true
}

// defaultMaxBody is --max-body unless told otherwise (config.DefaultMaxBody);
// maxMaxBody caps it.
const (
	defaultMaxBody = config.DefaultMaxBody
	maxMaxBody     = config.MaxMaxBody
)

// goneFlags are the flags idemcheck's commands no longer have, with what
// to do instead.
var goneFlags = map[string]string{
	"seed": "a certification makes no random choice (keys are UUIDs), so there is nothing to seed; leave it out (soak --seed chooses which of a soak's intents are cut)",
}

// parseFlags parses args, turning the flag package's errors into one-line
// usage errors that name the command (program.ParseFlags); -h prints the
// command's help (writeHelp).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if collectFlags != nil {
		collectFlags(fs)
		return errCollected
	}
	setHelp(fs)
	return program.ParseFlags("idemcheck", fs, args, stdout, goneFlags)
}

// parseFlagsArgs is parseFlags for a command that takes arguments after
// its flags.
func parseFlagsArgs(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if collectFlags != nil {
		collectFlags(fs)
		return errCollected
	}
	setHelp(fs)
	return program.ParseFlagsArgs("idemcheck", fs, args, stdout, goneFlags)
}

// given is the set of flags named on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// certifyFlags are certify's flags as given.
type certifyFlags struct {
	rawURL, method, path, body, db, effectSQL, checks, name        string
	skipChecks, keySyntax                                          string
	effectHTTP, effectCount                                        string
	keyHeader, replayHeader, resourceID, keyPointer, arrivalHeader string
	policyName, otherPath, command, failingBody                    string
	invalidBody, image, dbImage, ready                             string
	sign, signSecret, signHeader                                   string
	signSkew                                                       time.Duration
	dbEngine                                                       string
	instances                                                      int
	lease                                                          time.Duration
	headers, effectArgs, ignore, redact, env, tenants, providers   listFlag
	redactFields, redactQuery                                      listFlag
	rf                                                             runFlags
	statuses                                                       statusFlags
	opts                                                           scenarios.Options
	set                                                            map[string]bool

	// red is the command's redactor (redactorOf), taught the flags'
	// secrets as they are read.
	red *idemcheck.Redactor
}

func (f *certifyFlags) register() *flag.FlagSet {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	f.opts = scenarios.Defaults
	def := idemcheck.IETF()
	fs.StringVar(&f.rawURL, "url", "", "the target's base `URL`, such as http://127.0.0.1:8080 or ${API_URL} (or --cmd, or --image)")
	fs.StringVar(&f.command, "cmd", "", "`command` that starts the target (run with sh -c, given PORT, ADDR and DATABASE_URL, an empty database it must migrate itself; ready when GET /healthz answers 2xx, see --ready): idemcheck then owns its process and database link, for the fault checks")
	fs.IntVar(&f.instances, "instances", 1, "with --cmd: instances behind a round-robin balancer (1 to 16)")
	fs.StringVar(&f.image, "image", "", "container `image` of the target, already on the Docker host (never pulled), run on host networking with PORT, ADDR=127.0.0.1 and DATABASE_URL: idemcheck then owns its container and database link, for the fault checks")
	fs.StringVar(&f.dbImage, "db-image", targets.DefaultPostgresImage, "with --image and no --db: the PostgreSQL `image` started for the target's database (without Docker or the image: the local PostgreSQL binaries); with --db-engine mysql, the MariaDB image, default idemcheck/mariadb:local (else the local MariaDB binaries)")
	fs.Var(&f.env, "env", "with --cmd or --image: a variable 'NAME=VALUE' for the target (repeatable)")
	fs.Var(&f.providers, "provider-env", "with --cmd or --image: serve a payment provider double on loopback and hand the target its base URL in the variable `NAME`, such as PROVIDER_URL; the target's calls to it are checked too (repeatable: one double each; docs/provider.md)")
	fs.StringVar(&f.ready, "ready", targets.DefaultContainerReady, "with --cmd or --image: the `path` that answers 2xx once the target serves; with --cmd, tcp waits only until its port accepts connections (for a service without a health route)")
	fs.DurationVar(&f.lease, "lease", 0, "the target's lease on a claimed key (for crash-lease and lease-fencing), such as 2s")
	fs.StringVar(&f.failingBody, "failing-body", "", "a body `template` the target answers with an error (a declined card): failed-attempt checks the error is saved")
	fs.StringVar(&f.invalidBody, "invalid-body", "", "a body `template` the target must refuse with a 4xx before doing any work, for corrected-retry (default: the body with every member's type broken)")
	fs.StringVar(&f.method, "method", "POST", "request method")
	fs.StringVar(&f.path, "path", "", "request path, with {{key}}, {{intent}}, {{seq}} filled per intent and computed parts such as {{timestamp}} (default: the URL's path)")
	fs.StringVar(&f.body, "body", "", "request body `template`, such as '{\"customerId\":\"{{intent}}\",\"totalCents\":4000}' (${NAME} is read from the environment)")
	fs.Var(&f.headers, "header", "extra request header 'Name: value' (repeatable; templates allowed, computed per attempt over the body sent, such as 'X-Sig: {{hmac_sha256_hex \"${SECRET}\" body}}'; ${NAME} is read from the environment and hidden in reports, $${ is a literal ${), such as 'Authorization: Bearer ${TOKEN}'")
	fs.StringVar(&f.sign, "sign", "", "sign every attempt as a webhook sender does, with `scheme` "+strings.Join(scenarios.SignSchemes, ", ")+": a fresh timestamp and signature per attempt, over the exact body sent (docs/webhooks.md)")
	fs.StringVar(&f.signSecret, "sign-secret", "", "with --sign: the signing secret, read from the environment: '${NAME}' (hidden in every report and history, with every signature)")
	fs.StringVar(&f.signHeader, "sign-header", "", "with --sign: the signature header's `name`, for a sender that follows the scheme under another name")
	fs.DurationVar(&f.signSkew, "sign-skew", 0, "with --sign: shift the signing clock, such as -10m: a consumer that accepts a signature past its 5-minute tolerance is remarked on")
	fs.StringVar(&f.dbEngine, "db-engine", "", "with --cmd or --image and no --db: the `engine` of the throwaway database idemcheck starts for the target, postgres (default) or mysql (a MariaDB server: from the local binaries for --cmd, a container of --db-image for --image)")
	fs.StringVar(&f.db, "db", "", "`DSN` of the database to count effects in: postgres://…, mysql://…, mariadb://… or user:pw@tcp(host:port)/db (default $DATABASE_URL)")
	fs.StringVar(&f.effectSQL, "effect-sql", "", "`SQL` returning one intent's effect count, such as 'SELECT count(*) FROM orders WHERE customer_id = $1'")
	fs.Var(&f.effectArgs, "effect-arg", "effect SQL argument template, bound as $1, $2, … (PostgreSQL) or each ? in turn (MySQL, MariaDB) (repeatable)")
	fs.StringVar(&f.effectHTTP, "effect-http", "", "count effects through the API, without database access: a `GET` of the target whose answer counts one intent's effects, such as 'GET /orders?customerId={{intent}}' (only GET is ever sent)")
	fs.StringVar(&f.effectCount, "effect-count", "", "with --effect-http: the JSON `pointer` of the array (its length is the count) or number in the answer, such as /data; empty for the whole answer")
	fs.StringVar(&f.checks, "checks", strings.Join(scenarios.Names(), ","), "comma-separated `checks` to run")
	fs.StringVar(&f.skipChecks, "skip-checks", "", "comma-separated `checks` left out of the run, such as key-syntax")
	fs.StringVar(&f.keySyntax, "key-syntax", "", "`required`: a malformed key the target accepts fails key-syntax; remark: it is a conformance remark apart from the verdict (the default, but for --policy stripe)")
	fs.StringVar(&f.name, "name", "", "label for the target in reports")
	fs.StringVar(&f.keyHeader, "key-header", def.KeyHeader, "the idempotency key header")
	fs.StringVar(&f.replayHeader, "replay-header", "", "header the target sets on replays, such as Idempotent-Replayed (checked when given)")
	fs.StringVar(&f.arrivalHeader, "arrival-header", "", "reply header in which the target says when it received the whole request, by its own clock (Unix s, ms, us or ns, or RFC 3339), such as X-Received-At: bursts then report how tightly they arrived, not only how tightly they left")
	fs.StringVar(&f.resourceID, "resource-id", "", "JSON `pointer` of the created resource's id in success bodies (default: detected)")
	fs.Var(&f.ignore, "ignore-field", "JSON pointer left out when comparing replays (repeatable)")
	fs.Var(&f.redact, "redact-header", "header whose value never reaches a report or history (repeatable; Authorization, Cookie, X-Api-Key and names with token, secret, password or api-key always are)")
	fs.Var(&f.redactFields, "redact-field", "JSON `pointer` into request and reply bodies, such as /card/number, whose value never reaches a report or history (repeatable)")
	fs.Var(&f.redactQuery, "redact-query", "query parameter `name` whose value never reaches a report or history (repeatable)")
	fs.IntVar(&f.opts.BurstSize, "burst", f.opts.BurstSize, "same-key attempts released together in concurrent-burst (2 to 1024)")
	fs.IntVar(&f.opts.BurstRounds, "burst-rounds", f.opts.BurstRounds, "concurrent-burst rounds, each with a fresh intent (1 to 10000)")
	fs.IntVar(&f.opts.Rounds, "rounds", f.opts.Rounds, "rounds of the sequential checks (1 to 10000)")
	fs.IntVar(&f.opts.FaultRounds, "fault-rounds", f.opts.FaultRounds, "rounds of the checks that cut, crash or stall the target (1 to 10000)")
	fs.IntVar(&f.opts.Redeliveries, "redeliveries", f.opts.Redeliveries, "copies of one event webhook-redelivery delivers at once (2 to 1024)")
	fs.DurationVar(&f.opts.Settle, "settle", 0, "for effects that land after the reply (202 Accepted, a background worker): the longest `duration` to wait, after each check, for every intent's effect count to stay the same for a quiet period (1s, or half the duration when shorter) before it is judged, such as 30s; every intent is counted again after the last check either way")
	fs.DurationVar(&f.opts.RetryWindow, "retry-window", 0, "how long after a success clients may still retry: sequential-replay then also replays after that long")
	fs.Var(&f.tenants, "tenant", "a client's credentials 'Name: value' for cross-tenant (give two: --tenant 'Authorization: Bearer A' --tenant 'Authorization: Bearer B')")
	fs.StringVar(&f.keyPointer, "key-pointer", "", "JSON `pointer` of the key in the body (a webhook's /eventId) instead of the key header")
	fs.StringVar(&f.policyName, "policy", "ietf", "policy preset (ietf, stripe, gofiber, webhook) or a YAML `file` with a preset and overrides (and a sign: block, which the --sign flags override)")
	f.statuses.register(fs)
	fs.StringVar(&f.otherPath, "other-path", "", "a second endpoint's path for cross-endpoint (same method and body)")
	f.rf.register(fs)
	return fs
}

// spec is the certification the flags describe: ${NAME} read from the
// environment, the policy loaded and overridden.
func (f *certifyFlags) spec() (config.Spec, error) {
	// What the URL, header, tenant and body flags expand to is hidden in
	// every report and message, as a suite's is.
	rawURL, secrets, err := expandFlag("--url", f.rawURL, os.LookupEnv)
	if err != nil {
		return config.Spec{}, err
	}
	// Known before any check below can quote them.
	defer func() { f.red.AddSecret(secrets...) }()
	body := []string{f.body}
	for _, e := range []struct {
		name string
		vs   []string
	}{{"--header", f.headers}, {"--tenant", f.tenants}, {"--body", body}} {
		used, err := expandFlags(e.name, e.vs, os.LookupEnv)
		if err != nil {
			return config.Spec{}, err
		}
		secrets = append(secrets, used...)
	}
	signSecret, err := signSecret(f.signSecret)
	if err != nil {
		return config.Spec{}, err
	}
	if err := f.rf.tlsFlags.forURL(rawURL); err != nil {
		return config.Spec{}, err
	}
	pf, err := loadPolicy(f.policyName)
	if err != nil {
		return config.Spec{}, err
	}
	// What the policy file expanded (its signing secret among them).
	secrets = append(secrets, pf.Secrets...)
	pol := pf.Policy
	set := f.set
	if set["key-header"] {
		pol.KeyHeader = f.keyHeader
	}
	if set["replay-header"] {
		pol.ReplayHeader = f.replayHeader
	}
	if set["arrival-header"] {
		pol.ArrivalHeader = f.arrivalHeader
	}
	if set["resource-id"] {
		pol.ResourceID = f.resourceID
	}
	if len(f.ignore) > 0 {
		pol.IgnoreFields = f.ignore
	}
	if set["key-pointer"] {
		pol.KeyPointer = f.keyPointer
	}
	if set["lease"] {
		pol.Lease = f.lease
	}
	if set["key-syntax"] {
		pol.KeySyntax = f.keySyntax
	}
	if err := f.statuses.apply(&pol, set); err != nil {
		return config.Spec{}, err
	}
	db, dbFromEnv := f.db, false
	if db == "" {
		db = os.Getenv("DATABASE_URL")
		dbFromEnv = db != ""
	}
	s := config.Spec{
		Words: flagWords,
		Name:  f.name, URL: rawURL, Command: f.command, Instances: f.instances, Image: f.image, Env: f.env, Providers: f.providers,
		Method: f.method, Path: f.path, Body: body[0], Headers: splitHeaders(f.headers), Tenants: splitHeaders(f.tenants),
		FailingBody: f.failingBody, InvalidBody: f.invalidBody, OtherPath: f.otherPath,
		DBEngine: f.dbEngine, Policy: pol, DSN: db, DSNDefault: dbFromEnv, EffectSQL: f.effectSQL, EffectArgs: f.effectArgs, EffectHTTP: f.effectHTTP,
		Checks: splitList(f.checks), Options: f.opts,
		Redact: f.redact, RedactFields: f.redactFields, RedactQuery: f.redactQuery, Secrets: secrets,
	}
	// The policy file's sign: block, each --sign flag given overriding its
	// field (--sign '' signs nothing).
	pf.Sign.Apply(&s)
	if set["sign"] {
		if f.sign == "" {
			(*suite.Signing)(nil).Apply(&s)
		}
		s.Sign = f.sign
	}
	if set["sign-secret"] {
		s.SignSecret = signSecret
	}
	if set["sign-header"] {
		s.SignHeader = f.signHeader
	}
	if set["sign-skew"] {
		s.SignSkew = f.signSkew
	}
	if set["checks"] && s.Checks == nil {
		s.Checks = []string{} // --checks '' names none: a usage error, not every check
	}
	s.SkipChecks = splitList(f.skipChecks)
	if set["effect-count"] {
		s.EffectCount = &f.effectCount
	}
	if set["ready"] {
		s.Ready = f.ready
	}
	if set["db-image"] {
		s.DBImage = f.dbImage
	}
	f.rf.apply(&s)
	return s, nil
}

// signSecret reads --sign-secret, which must name an environment
// variable: a secret typed on the command line would stay in the shell's
// history and the process list.
func signSecret(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if !strings.Contains(v, "${") {
		return "", idemcheck.Usagef("--sign-secret takes the secret from the environment: write '${NAME}' (in single quotes, so the shell leaves it), not the secret itself")
	}
	out, _, err := expandFlag("--sign-secret", v, os.LookupEnv)
	return out, err
}

func splitHeaders(hs []string) []config.Header {
	var out []config.Header
	for _, h := range hs {
		out = append(out, config.SplitHeader(h))
	}
	return out
}

// runCertify is the certify command: flags to a description, config.Build,
// the target started if idemcheck starts it, certify.Run, the report
// rendered, the exit code.
func runCertify(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var f certifyFlags
	fs := f.register()
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	f.set = given(fs)
	if err := f.rf.validate(); err != nil {
		return 0, err
	}
	stdout = f.rf.outputs.route(stdout, stderr)
	f.red = redactorOf(ctx)
	spec, err := f.spec()
	if err != nil {
		return 0, err
	}
	spec.Redactor, f.rf.outputs.red = f.red, f.red
	b, err := config.Build(spec)
	if err != nil {
		return 0, err
	}
	// Every error path after this closes what was started, an interrupted
	// run (ctx cancelled) included.
	var started *startedTarget
	switch {
	case b.Launch != nil:
		if started, err = startTarget(ctx, b.Launch, stderr); err != nil {
			return 0, err
		}
		defer started.close()
		started.attach(b)
	case b.Config.EffectSQL != "":
		d, err := config.OpenDB(ctx, b.Config.DSN, b.Config.AllowRemote)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		config.UseDatabase(&b.Config, d)
	}
	return certifyAndReport(ctx, b.Config, f.rf.outputs, stdout, stderr, started)
}

// statusFlags are the one-number policy overrides, applied on top of the
// preset or policy file --policy names, so that one status needs no file.
type statusFlags struct {
	mismatch, missingKey int
	inProgress           string
}

func (s *statusFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.mismatch, "mismatch-status", 0, "override the policy's `status` for a reused key with another body (0: no fingerprint kept)")
	fs.IntVar(&s.missingKey, "missing-key-status", 0, "override the policy's `status` for a request without a key (0: the key is optional)")
	fs.StringVar(&s.inProgress, "in-progress-status", "", "override the policy's in-progress `statuses`, comma-separated, the main one first, such as 409,423 (0: duplicates wait for the replay)")
}

// apply puts the overrides that were given (set holds the flags named on
// the command line) on p; the policy's own check (config.CheckPolicy)
// judges the statuses.
func (s *statusFlags) apply(p *idemcheck.Policy, set map[string]bool) error {
	if set["mismatch-status"] {
		p.MismatchStatus = s.mismatch
	}
	if set["missing-key-status"] {
		p.MissingKeyStatus = s.missingKey
	}
	if set["in-progress-status"] {
		sts, err := parseInProgress(s.inProgress)
		if err != nil {
			return err
		}
		p.SetInProgress(sts...)
	}
	return nil
}

// parseInProgress reads --in-progress-status: "409", "409,423", or "0".
func parseInProgress(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, idemcheck.Usagef("--in-progress-status %q: %q is not a status; give statuses separated by commas, such as 409,423, or 0 for none", v, strings.TrimSpace(f))
		}
		if slices.Contains(out, n) {
			return nil, idemcheck.Usagef("--in-progress-status %q names %d twice", v, n)
		}
		out = append(out, n)
	}
	if len(out) > 1 && slices.Contains(out, 0) {
		return nil, idemcheck.Usagef("--in-progress-status %q: 0 means none and goes alone", v)
	}
	return out, nil
}

// loadPolicy reads --policy: a preset name, or a YAML file holding a
// preset and overrides, and how to sign (sign:).
func loadPolicy(v string) (*suite.PolicyFile, error) {
	if p, err := idemcheck.Preset(v); err == nil {
		return &suite.PolicyFile{Policy: p}, nil
	}
	b, err := userfile.Read(v, userfile.MaxPolicy)
	var large *userfile.TooLargeError
	if errors.As(err, &large) {
		return nil, idemcheck.Usagef("--policy %s: %v", v, err)
	}
	if err != nil {
		return nil, idemcheck.Usagef("--policy %q is neither a preset (%s) nor a readable file: %v",
			v, strings.Join(idemcheck.PresetNames(), ", "), err)
	}
	p, err := suite.ReadPolicyFile(v, b, os.LookupEnv)
	if err != nil {
		return nil, idemcheck.Usagef("--policy: %v", err)
	}
	return p, nil
}

// certifyAndReport runs one certification, prints it, writes the requested
// files and returns the exit code; on error nothing is written.
func certifyAndReport(ctx context.Context, cfg certify.Config, out outputs, stdout, stderr io.Writer, started *startedTarget) (int, error) {
	res, err := certifyOne(ctx, cfg, out, stdout, stderr)
	started.noteRun(ctx, res, err)
	if err != nil {
		return 0, err
	}
	if err := writeOutputs([]*certify.Result{res}, out, false, nil); err != nil {
		return 0, err
	}
	return exitFor(out, res.Report.Verdict), nil
}

// certifyRun is certify.Run; a test puts a recorder around it to see the
// configuration the command built.
var certifyRun = certify.Run

// certifyOne runs one certification with a progress line and prints its report.
func certifyOne(ctx context.Context, cfg certify.Config, out outputs, stdout, stderr io.Writer) (*certify.Result, error) {
	label := cfg.Name
	if label == "" {
		label = cfg.Endpoint.Base.Host
	}
	prog := &render.Progress{W: stderr, TTY: render.IsTerminal(stderr), Label: label}
	cfg.Progress = func(s runner.Progress) { prog.Update(render.Step(s)) }
	started := time.Now()
	res, err := certifyRun(ctx, cfg)
	prog.Done()
	var refused *runner.RefusedError
	if errors.As(err, &refused) {
		return nil, idemcheck.Usagef("%s", refusedHint(refused.Status, 0))
	}
	if err != nil {
		return nil, err
	}
	res.Report.Stamp(tool, started)
	if st, n, ok := refusedRequest(res.History); ok {
		// Kept for a run without the pre-flight (or one whose pre-flight
		// answer was a status a client retries).
		return nil, idemcheck.Usagef("%s", refusedHint(st, n))
	}
	render.WriteText(stdout, res.Report, render.Colour(out.noColour, stdout, os.Getenv))
	return res, nil
}

// refusedRequest reports whether the target refused the request itself:
// the first attempt of every intent that sent the request as configured
// (not a check's deliberate variant: no key, a broken body) was answered
// with one and the same 4xx. Nothing a retry does is then tested, and the
// anomalies the checks would report are the configuration's, not the
// API's. It needs at least two such intents answered.
func refusedRequest(h *idemcheck.History) (status, intents int, refused bool) {
	if h == nil {
		return 0, 0, false
	}
	first := map[string]idemcheck.Attempt{}
	for _, a := range h.Attempts {
		if f, ok := first[a.Intent]; !ok || a.ID < f.ID {
			first[a.Intent] = a
		}
	}
	for _, a := range first {
		if (a.Variant != "" && a.Variant != idemcheck.TenantA) || a.Status == 0 {
			// A deliberate variant, or a first attempt whose reply was
			// cut or never came: it says nothing of the request.
			continue
		}
		if a.Status < 400 || a.Status > 499 || (status != 0 && a.Status != status) {
			return 0, 0, false
		}
		status = a.Status
		intents++
	}
	return status, intents, intents >= 2
}

// refusedHint (intents 0: the pre-flight's answer) is the one line that says which flags to look at for a
// request the target refused.
func refusedHint(status, intents int) string {
	look := "check --body, --header, --path"
	switch status {
	case 401, 403:
		look = "check the credentials in --header (an environment variable is written ${NAME}), then --path"
	case 404, 405:
		look = "check --path and --method (and the --url's port)"
	case 415:
		look = "check --body and its Content-Type (--header 'Content-Type: …')"
	}
	if intents == 0 {
		// The pre-flight: one request, before any check.
		return fmt.Sprintf("the target answers %d to the request itself (a first request with a fresh key), so the run stopped before sending anything else: %s", status, look)
	}
	return fmt.Sprintf("the target answers %d to the request itself, on the first attempt of all %d intents, so no retry was tested: %s", status, intents, look)
}

// exitFor maps a verdict to the exit code (see idemcheck.VerdictExit).
func exitFor(out outputs, v idemcheck.Status) int {
	return idemcheck.VerdictExit(v, out.allowInconclusive)
}

// writeOutputs writes the files a run asked for, each whole or not at all,
// and the GitHub step summary when GITHUB_STEP_SUMMARY is set. A suite's
// JSON report holds one report per endpoint; a single certification's is
// the report itself.
//
// pages are what --html draws of each result; nil draws them from the
// results' histories (check, which keeps no history, gathers them as it
// goes).
func writeOutputs(results []*certify.Result, out outputs, suiteReport bool, pages []*render.HTMLPage) error {
	reports := make([]idemcheck.Report, len(results))
	for i, r := range results {
		reports[i] = r.Report
	}
	if out.history != "" {
		hs := make([]*idemcheck.History, len(results))
		for i, r := range results {
			hs[i] = r.History
		}
		var err error
		if out.history == "-" {
			err = history.Write(out.stream, hs...)
		} else {
			err = writeRedacted(out.red, out.history, func(w io.Writer) error { return history.Write(w, hs...) })
		}
		if err != nil {
			return idemcheck.Usagef("--history: %v", err)
		}
	}
	if out.json != "" {
		write := reports[0].WriteJSON
		if suiteReport {
			write = idemcheck.NewSuiteReport(reports).WriteJSON
		}
		if err := writeRedacted(out.red, out.json, write); err != nil {
			return idemcheck.Usagef("--json: %v", err)
		}
	}
	if out.junit != "" {
		err := writeRedacted(out.red, out.junit, func(w io.Writer) error { return render.WriteJUnit(w, reports) })
		if err != nil {
			return idemcheck.Usagef("--junit: %v", err)
		}
	}
	if out.html != "" {
		if pages == nil {
			for _, r := range results {
				pages = append(pages, render.NewHTMLPage(r.Report, r.History))
			}
		}
		err := writeRedacted(out.red, out.html, func(w io.Writer) error { return render.WriteHTML(w, pages) })
		if err != nil {
			return idemcheck.Usagef("--html: %v", err)
		}
	}
	if err := render.AppendGitHubSummaryRedacted(reports, out.html, out.red); err != nil {
		return idemcheck.Unavailablef("GITHUB_STEP_SUMMARY: %v", err)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
