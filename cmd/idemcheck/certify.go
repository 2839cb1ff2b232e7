package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

var errHelp = errors.New("help shown")

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// outputs are the files a run writes when it finishes, never before.
type outputs struct {
	json, junit, history string
	// stream is where a history goes when --history is "-": the
	// command's standard output, which then carries nothing else.
	stream   io.Writer
	noColour bool
	// allowInconclusive exits 0 on an inconclusive verdict.
	allowInconclusive bool
}

func (o *outputs) register(fs *flag.FlagSet) {
	fs.StringVar(&o.json, "json", "", "write the JSON report (version 1) to `FILE`")
	if fs.Name() != "soak" {
		fs.StringVar(&o.junit, "junit", "", "write a JUnit XML report to `FILE`, one test case per endpoint and check")
	}
	fs.StringVar(&o.history, "history", "", "write every attempt as JSON lines to `FILE`, for idemcheck check; - writes it to standard output (the report then goes to standard error), for idemcheck check to read from a pipe")
	fs.BoolVar(&o.noColour, "no-color", false, "no colour, even on a terminal")
	fs.BoolVar(&o.allowInconclusive, "allow-inconclusive", false,
		"exit 0, not 4, when no anomaly was found but some check's scenario did not happen (inconclusive); it is still reported")
}

// check makes sure every output file can be written, before anything is
// sent: a run must not print its verdict and then fail on a path.
func (o *outputs) check() error {
	for _, f := range []struct{ flag, path string }{{"--json", o.json}, {"--junit", o.junit}, {"--history", o.history}} {
		if f.path == "" || f.flag == "--history" && f.path == "-" {
			continue
		}
		if fi, err := os.Stat(f.path); err == nil && fi.IsDir() {
			return idemcheck.Usagef("%s %s is a folder: name a file", f.flag, f.path)
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".*")
		if err != nil {
			return idemcheck.Usagef("%s %s cannot be written: %v", f.flag, f.path, unwrapPath(err))
		}
		tmp.Close()
		os.Remove(tmp.Name())
	}
	return nil
}

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

// unwrapPath drops the temporary file's name from an error about its folder.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MinTimeout is the shortest per-attempt timeout: below it no reply can
// arrive, and every attempt would be blamed on the target.
const MinTimeout = 10 * time.Millisecond

// MinRate is the lowest request-rate cap: below it the cap stops meaning
// anything a run could reach.
const MinRate = 0.1

// runFlags are the flags every command that sends traffic shares.
type runFlags struct {
	outputs
	protocol    string
	timedBursts bool
	seed        int64
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
	fs.Int64Var(&r.seed, "seed", 0, "seed for the run's random choices (default: random, printed in the report)")
	fs.StringVar(&r.protocol, "protocol", "auto", "burst engine: auto (HTTP/2 single-packet release where the target speaks h2, else HTTP/1.1 last-byte sync), http1 or h2")
	fs.BoolVar(&r.timedBursts, "timed-bursts", false, "for a target idemcheck starts (--cmd, --image): do not schedule the bursts' writes at its database link; bursts are then timed only, as for a --url target, and races narrower than their spread may be missed")
	fs.Float64Var(&r.rate, "rate", scenarios.DefaultRate, "cap on requests per second (a burst is released whole); raise it for production-like load")
	fs.DurationVar(&r.maxDuration, "max-duration", certify.DefaultMaxDuration, "cap on the whole run's duration")
	fs.DurationVar(&r.timeout, "timeout", 10*time.Second, "per-attempt timeout")
	fs.BoolVar(&r.allowRemote, "allow-remote", false, "allow traffic to a target or database that is not on loopback (without it, hosts must be loopback IPs, localhost, or names the hosts file maps to loopback; no DNS query is sent)")
	fs.Int64Var(&r.maxBody, "max-body", defaultMaxBody, "reply body `bytes` kept per attempt, in memory and in the history (the rest is read no further)")
	fs.StringVar(&r.targetLog, "target-log", "", "for a target idemcheck starts (--cmd, --image, a suite's target): write its stdout and stderr to `FILE`, named in the report (a container's when the run ends). "+
		"Default: a temporary file, kept (and named in the report) only when the target exits on its own during the run or the run fails, removed otherwise and on Ctrl-C; each exit's last 20 lines are in the report either way")
	r.tlsFlags.register(fs)
}

func (r *runFlags) validate() error {
	switch {
	case math.IsNaN(r.rate) || math.IsInf(r.rate, 0) || r.rate < MinRate:
		return idemcheck.Usagef("--rate %v must be a number of requests per second of at least %v, such as 1000", r.rate, MinRate)
	case r.maxDuration <= 0:
		return idemcheck.Usagef("--max-duration %v must be positive, such as 10m", r.maxDuration)
	case r.timeout < MinTimeout:
		return idemcheck.Usagef("--timeout %v is too short for any reply to arrive: use %v or more, such as 10s", r.timeout, MinTimeout)
	case r.maxBody < 1 || r.maxBody > maxMaxBody:
		return idemcheck.Usagef("--max-body %d is out of range: use 1 to %d bytes", r.maxBody, maxMaxBody)
	}
	if err := r.outputs.check(); err != nil {
		return err
	}
	if _, err := wire.ParseProtocol(r.protocol); err != nil {
		return idemcheck.Usagef("--protocol %q: use auto, http1 or h2", r.protocol)
	}
	if err := r.tlsFlags.load(); err != nil {
		return err
	}
	if r.seed == 0 {
		r.seed = rand.Int64N(1<<53) + 1
	}
	return nil
}

func (r *runFlags) apply(cfg *certify.Config) {
	cfg.Seed, cfg.Rate, cfg.MaxDuration, cfg.Timeout = r.seed, r.rate, r.maxDuration, r.timeout
	cfg.Protocol, _ = wire.ParseProtocol(r.protocol)
	cfg.Timed = r.timedBursts
	cfg.AllowRemote = cfg.AllowRemote || r.allowRemote
	cfg.MaxBody = r.maxBody
	cfg.TLS = r.tlsFlags.config
	cfg.Preflight = true
}

// defaultMaxBody is --max-body unless told otherwise. Every attempt keeps
// its reply body for the whole run (the checks compare them, the history
// holds them), so the kept part is what a hostile or merely verbose target
// costs per attempt: measured against a target answering 50 MB of NUL
// bytes, a default run (190 attempts) kept 1 MiB each, peaked at 494 MiB
// and wrote a 1.1 GB history (JSON escapes a NUL in six bytes). Replies
// that idempotency checks compare are small; a longer one is compared on
// its first 64 KiB and marked truncated.
const defaultMaxBody = 64 << 10

// maxMaxBody caps --max-body: every attempt of a run keeps up to that
// much, in memory and in the history.
const maxMaxBody = 64 << 20

// parseFlags parses args, turning the flag package's errors into one-line
// usage errors that name the command.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage of idemcheck %s:\n", fs.Name())
			fs.PrintDefaults()
			return errHelp
		}
		return idemcheck.Usagef("%s: %v (see idemcheck %s -h)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return idemcheck.Usagef("%s: unexpected argument %q (see idemcheck %s -h)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

func runCertify(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	var (
		rawURL, method, path, body, db, effectSQL, checks, name string
		effectHTTP, effectCount                                 string
		keyHeader, replayHeader, resourceID                     string
		policyName, otherPath, command, failingBody             string
		invalidBody                                             string
		image, dbImage, ready                                   string
		instances                                               int
		lease                                                   time.Duration
		headers, effectArgs, ignore, redact, env, tenants       listFlag
		redactFields, redactQuery                               listFlag
		keyPointer                                              string
		rf                                                      runFlags
		statuses                                                statusFlags
		opts                                                    = scenarios.Defaults
	)
	def := idemcheck.IETF()
	fs.StringVar(&rawURL, "url", "", "the target's base `URL`, such as http://127.0.0.1:8080 or ${API_URL} (or --cmd, or --image)")
	fs.StringVar(&command, "cmd", "", "`command` that starts the target (run with sh -c, given PORT and DATABASE_URL): idemcheck then owns its process and database link, for the fault checks")
	fs.IntVar(&instances, "instances", 1, "with --cmd: instances behind a round-robin balancer (1 to 16)")
	fs.StringVar(&image, "image", "", "container `image` of the target, already on the Docker host (never pulled), run on host networking with PORT, ADDR=127.0.0.1 and DATABASE_URL: idemcheck then owns its container and database link, for the fault checks")
	fs.StringVar(&dbImage, "db-image", targets.DefaultPostgresImage, "with --image and no --db: the PostgreSQL `image` started for the target's database (without Docker or the image: the local PostgreSQL binaries)")
	fs.Var(&env, "env", "with --image: a variable 'NAME=VALUE' for the container (repeatable)")
	fs.StringVar(&ready, "ready", targets.DefaultContainerReady, "with --image: the `path` that answers 2xx once the target serves")
	fs.DurationVar(&lease, "lease", 0, "the target's lease on a claimed key (for crash-lease and lease-fencing), such as 2s")
	fs.StringVar(&failingBody, "failing-body", "", "a body `template` the target answers with an error (a declined card): failed-attempt checks the error is saved")
	fs.StringVar(&invalidBody, "invalid-body", "", "a body `template` the target must refuse with a 4xx before doing any work, for corrected-retry (default: the body with every member's type broken)")
	fs.StringVar(&method, "method", "POST", "request method")
	fs.StringVar(&path, "path", "", "request path, with {{key}}, {{intent}}, {{seq}} filled per intent (default: the URL's path)")
	fs.StringVar(&body, "body", "", "request body `template`, such as '{\"customerId\":\"{{intent}}\",\"totalCents\":4000}' (${NAME} is read from the environment)")
	fs.Var(&headers, "header", "extra request header 'Name: value' (repeatable; templates allowed; ${NAME} is read from the environment and hidden in reports, $${ is a literal ${), such as 'Authorization: Bearer ${TOKEN}'")
	fs.StringVar(&db, "db", "", "PostgreSQL `DSN` to count effects in (default $DATABASE_URL)")
	fs.StringVar(&effectSQL, "effect-sql", "", "`SQL` returning one intent's effect count, such as 'SELECT count(*) FROM orders WHERE customer_id = $1'")
	fs.Var(&effectArgs, "effect-arg", "effect SQL argument template, bound as $1, $2, … (repeatable)")
	fs.StringVar(&effectHTTP, "effect-http", "", "count effects through the API, without database access: a `GET` of the target whose answer counts one intent's effects, such as 'GET /orders?customerId={{intent}}' (only GET is ever sent)")
	fs.StringVar(&effectCount, "effect-count", "", "with --effect-http: the JSON `pointer` of the array (its length is the count) or number in the answer, such as /data; empty for the whole answer")
	fs.StringVar(&checks, "checks", strings.Join(scenarios.Names(), ","), "comma-separated `checks` to run")
	fs.StringVar(&name, "name", "", "label for the target in reports")
	fs.StringVar(&keyHeader, "key-header", def.KeyHeader, "the idempotency key header")
	fs.StringVar(&replayHeader, "replay-header", "", "header the target sets on replays, such as Idempotent-Replayed (checked when given)")
	fs.StringVar(&resourceID, "resource-id", "", "JSON `pointer` of the created resource's id in success bodies (default: detected)")
	fs.Var(&ignore, "ignore-field", "JSON pointer left out when comparing replays (repeatable)")
	fs.Var(&redact, "redact-header", "header whose value never reaches a report or history (repeatable; Authorization and Cookie always are)")
	fs.Var(&redactFields, "redact-field", "JSON `pointer` into request and reply bodies, such as /card/number, whose value never reaches a report or history (repeatable)")
	fs.Var(&redactQuery, "redact-query", "query parameter `name` whose value never reaches a report or history (repeatable)")
	fs.IntVar(&opts.BurstSize, "burst", opts.BurstSize, "same-key attempts released together in concurrent-burst (2 to 1024)")
	fs.IntVar(&opts.BurstRounds, "burst-rounds", opts.BurstRounds, "concurrent-burst rounds, each with a fresh intent (1 to 10000)")
	fs.IntVar(&opts.Rounds, "rounds", opts.Rounds, "rounds of the sequential checks (1 to 10000)")
	fs.IntVar(&opts.FaultRounds, "fault-rounds", opts.FaultRounds, "rounds of the checks that cut, crash or stall the target (1 to 10000)")
	fs.IntVar(&opts.Redeliveries, "redeliveries", opts.Redeliveries, "copies of one event webhook-redelivery delivers at once (2 to 1024)")
	fs.DurationVar(&opts.RetryWindow, "retry-window", 0, "how long after a success clients may still retry: sequential-replay then also replays after that long")
	fs.Var(&tenants, "tenant", "a client's credentials 'Name: value' for cross-tenant (give two: --tenant 'Authorization: Bearer A' --tenant 'Authorization: Bearer B')")
	fs.StringVar(&keyPointer, "key-pointer", "", "JSON `pointer` of the key in the body (a webhook's /eventId) instead of the key header")
	fs.StringVar(&policyName, "policy", "ietf", "policy preset (ietf, stripe, gofiber, webhook) or a YAML `file` with a preset and overrides")
	statuses.register(fs)
	fs.StringVar(&otherPath, "other-path", "", "a second endpoint's path for cross-endpoint (same method and body)")
	rf.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if err := rf.validate(); err != nil {
		return 0, err
	}
	stdout = rf.outputs.route(stdout, stderr)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// ${NAME} in these flags comes from the environment. What the header,
	// tenant and body flags expand to is hidden in every report, as a
	// suite's is; the URL is printed in the report anyway.
	var secrets []string
	rawURL, _, err := expandFlag("--url", rawURL, os.LookupEnv)
	if err != nil {
		return 0, err
	}
	for _, f := range []struct {
		name string
		vs   []string
	}{{"--header", headers}, {"--tenant", tenants}, {"--body", []string{body}}} {
		used, err := expandFlags(f.name, f.vs, os.LookupEnv)
		if err != nil {
			return 0, err
		}
		secrets = append(secrets, used...)
		if f.name == "--body" {
			body = f.vs[0]
		}
	}

	switch {
	case rawURL == "" && command == "" && image == "":
		return 0, idemcheck.Usagef("certify: --url is required, such as --url http://127.0.0.1:8080 (or --cmd or --image to let idemcheck start the target)")
	case image != "" && (rawURL != "" || command != ""):
		return 0, idemcheck.Usagef("certify: give --image alone, not with --url or --cmd: with --image the URL is the one idemcheck starts the container on")
	case image == "" && (len(env) > 0 || set["ready"] || set["db-image"]):
		return 0, idemcheck.Usagef("certify: --env, --ready and --db-image go with --image")
	case image != "" && instances != 1:
		return 0, idemcheck.Usagef("certify: --instances goes with --cmd: a container target is one instance")
	case image != "" && !strings.HasPrefix(ready, "/"):
		return 0, idemcheck.Usagef("--ready %q must be a path starting with /, such as /healthz", ready)
	case rf.targetLog != "" && command == "" && image == "":
		return 0, idemcheck.Usagef("certify: --target-log goes with --cmd or --image: idemcheck keeps the output of a target it starts")
	case rawURL != "" && command != "":
		return 0, idemcheck.Usagef("certify: give --url or --cmd, not both: with --cmd the URL is the one idemcheck starts the target on")
	case instances < 1 || instances > 16:
		return 0, idemcheck.Usagef("--instances %d is out of range: use 1 to 16", instances)
	case lease < 0:
		return 0, idemcheck.Usagef("--lease %v must be positive, such as 2s", lease)
	}
	if f := rf.tlsFlags.given(); f != "" && !strings.HasPrefix(strings.ToLower(rawURL), "https://") {
		return 0, idemcheck.Usagef("%s goes with an https:// --url (a target idemcheck starts with --cmd or --image is reached over http://)", f)
	}
	// The policy and the request headers are checked before the target is
	// started or anything is sent: configuration that cannot be right is a
	// usage error, not a run of false findings.
	pol, err := loadPolicy(policyName)
	if err != nil {
		return 0, err
	}
	if set["key-header"] {
		pol.KeyHeader = keyHeader
	}
	if set["replay-header"] {
		pol.ReplayHeader = replayHeader
	}
	if set["resource-id"] {
		pol.ResourceID = resourceID
	}
	if len(ignore) > 0 {
		pol.IgnoreFields = ignore
	}
	if set["key-pointer"] {
		if err := assert.ValidatePointer(keyPointer); err != nil || keyPointer == "" {
			return 0, idemcheck.Usagef("--key-pointer %q must be a JSON pointer such as /eventId", keyPointer)
		}
		pol.KeyPointer = keyPointer
	}
	if set["lease"] {
		pol.Lease = lease
	}
	for _, p := range append([]string{resourceID}, ignore...) {
		if err := assert.ValidatePointer(p); err != nil {
			return 0, idemcheck.Usagef("--resource-id/--ignore-field: %v", err)
		}
	}
	if err := statuses.apply(&pol, set); err != nil {
		return 0, err
	}
	if err := checkPolicy(pol, policyName, set); err != nil {
		return 0, err
	}
	for _, h := range headers {
		if _, err := suite.ParseHeader(h); err != nil {
			return 0, idemcheck.Usagef("--header %v", err)
		}
	}
	if db == "" {
		db = os.Getenv("DATABASE_URL")
	}
	allowRemote := rf.allowRemote
	if rawURL != "" {
		u, _, err := targetURL(rawURL)
		if err != nil {
			return 0, err
		}
		if err := certify.CheckURL(u, "--url", allowRemote); err != nil {
			return 0, err
		}
	}
	if err := targets.CheckDSN(db, "--db", allowRemote); err != nil {
		return 0, err
	}
	// A target idemcheck starts (--cmd, --image) is started before the rest
	// of the checks below so that its URL is known; every error path after
	// this closes it, an interrupted run (ctx cancelled) included.
	var started *startedTarget
	if command != "" || image != "" {
		vars, err := targets.ParseEnv(env)
		if err != nil {
			return 0, idemcheck.Usagef("--env %v", err)
		}
		spec := targetSpec{command: command, instances: instances, image: image, dbImage: dbImage, env: vars, ready: ready, allowRemote: allowRemote, log: rf.targetLog}
		if started, err = startTarget(ctx, spec, db, stderr); err != nil {
			return 0, err
		}
		defer started.close()
		rawURL = started.url.String()
		if name == "" && image != "" {
			// The port is picked anew each run; the image is what a
			// pipeline certifies.
			name = image
		}
	}
	base, urlPath, err := targetURL(rawURL)
	if err != nil {
		return 0, err
	}
	if path == "" {
		path = urlPath
	}
	if err := checkRange("--burst", opts.BurstSize, 2, scenarios.MaxBurstSize); err != nil {
		return 0, err
	}
	if err := checkRange("--burst-rounds", opts.BurstRounds, 1, scenarios.MaxRounds); err != nil {
		return 0, err
	}
	if err := checkRange("--rounds", opts.Rounds, 1, scenarios.MaxRounds); err != nil {
		return 0, err
	}
	if err := checkRange("--fault-rounds", opts.FaultRounds, 1, scenarios.MaxRounds); err != nil {
		return 0, err
	}
	if err := checkRange("--redeliveries", opts.Redeliveries, 2, scenarios.MaxBurstSize); err != nil {
		return 0, err
	}
	if opts.RetryWindow < 0 {
		return 0, idemcheck.Usagef("--retry-window %v must not be negative", opts.RetryWindow)
	}
	for _, p := range redactFields {
		if err := assert.ValidatePointer(p); err != nil || p == "" {
			return 0, idemcheck.Usagef("--redact-field %q must be a JSON pointer such as /card/number", p)
		}
	}
	cfg := certify.Config{
		Name: name, Options: opts, Redact: redact, RedactFields: redactFields, RedactQuery: redactQuery,
		Checks: splitList(checks), EffectSQL: effectSQL, Secrets: secrets,
	}
	rf.apply(&cfg)
	cfg.Policy = pol
	if cfg.Endpoint, err = endpoint(base, method, path, body, headers); err != nil {
		return 0, err
	}
	if otherPath != "" {
		t, err := idemcheck.ParseTemplate(otherPath)
		if err != nil || !strings.HasPrefix(otherPath, "/") {
			return 0, idemcheck.Usagef("--other-path %q must be a path starting with /, with {{key}}, {{intent}} or {{seq}} holes only", otherPath)
		}
		cfg.Endpoint.Other = &scenarios.OtherEndpoint{Method: cfg.Endpoint.Method, Path: t}
	}
	if failingBody != "" {
		t, err := idemcheck.ParseTemplate(failingBody)
		if err != nil {
			return 0, idemcheck.Usagef("--failing-body: %v", err)
		}
		cfg.Endpoint.FailingBody = &t
	}
	if invalidBody != "" {
		t, err := idemcheck.ParseTemplate(invalidBody)
		if err != nil {
			return 0, idemcheck.Usagef("--invalid-body: %v", err)
		}
		cfg.Endpoint.InvalidBody = &t
	}
	if len(tenants) > 0 {
		if len(tenants) != 2 {
			return 0, idemcheck.Usagef("--tenant takes two clients' credentials, given as two flags; got %d", len(tenants))
		}
		for _, raw := range tenants {
			h, err := suite.ParseHeader(raw)
			if err != nil {
				return 0, idemcheck.Usagef("--tenant %v", err)
			}
			cfg.Endpoint.Tenants = append(cfg.Endpoint.Tenants, h)
		}
	}
	if cfg.EffectArgs, err = parseEffectArgs(effectArgs, effectSQL); err != nil {
		return 0, err
	}
	if cfg.EffectHTTP, cfg.EffectCount, err = parseEffectHTTP(effectHTTP, effectCount, effectSQL, isSet(fs, "effect-count")); err != nil {
		return 0, err
	}
	switch {
	case started != nil:
		cfg.Powers, cfg.Replicas = started.powers, started.replicas
		cfg.TargetLog, cfg.TargetLogOnExit = started.log.path, started.log.temp
		if effectSQL != "" {
			cfg.DB, cfg.DBName = started.db.Pool, targets.RedactDSN(started.db.DSN)
		}
	case effectSQL != "":
		database, err := openEffectDB(ctx, db, allowRemote)
		if err != nil {
			return 0, err
		}
		defer database.Close()
		cfg.DB, cfg.DBName, cfg.DSN = database.Pool, targets.RedactDSN(db), db
	}

	return certifyAndReport(ctx, cfg, rf.outputs, stdout, stderr, started)
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
// the command line) on p, checking each.
func (s *statusFlags) apply(p *idemcheck.Policy, set map[string]bool) error {
	if set["mismatch-status"] {
		if err := checkStatusFlag("--mismatch-status", s.mismatch); err != nil {
			return err
		}
		p.MismatchStatus = s.mismatch
	}
	if set["missing-key-status"] {
		if err := checkStatusFlag("--missing-key-status", s.missingKey); err != nil {
			return err
		}
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

func checkStatusFlag(name string, v int) error {
	if v != 0 && (v < 100 || v > 599) {
		return idemcheck.Usagef("%s %d is not an HTTP status: use 100 to 599, or 0 for none", name, v)
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
		if err := checkStatusFlag("--in-progress-status", n); err != nil {
			return nil, err
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

// policyFieldFlags are the flags that set a policy field, by the field's
// name in a policy file.
var policyFieldFlags = map[string]string{
	"key_header": "key-header", "replay_header": "replay-header", "mismatch_status": "mismatch-status",
	"missing_key_status": "missing-key-status", "in_progress_status": "in-progress-status", "in_progress_statuses": "in-progress-status",
}

// checkPolicy validates the policy the flags built, naming the flag that
// set a wrong field, else --policy.
func checkPolicy(p idemcheck.Policy, policyName string, set map[string]bool) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	var pe *idemcheck.PolicyError
	if errors.As(err, &pe) {
		if f, ok := policyFieldFlags[pe.Field]; ok && set[f] {
			msg := strings.TrimLeft(strings.TrimPrefix(pe.Msg, pe.Field), ": ")
			return idemcheck.Usagef("--%s %s", f, msg)
		}
	}
	return idemcheck.Usagef("--policy %s: %v", policyName, err)
}

// loadPolicy reads --policy: a preset name, or a YAML file holding a
// preset and overrides.
func loadPolicy(v string) (idemcheck.Policy, error) {
	if p, err := idemcheck.Preset(v); err == nil {
		return p, nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return idemcheck.Policy{}, idemcheck.Usagef("--policy %q is neither a preset (%s) nor a readable file: %v",
			v, strings.Join(idemcheck.PresetNames(), ", "), err)
	}
	p, err := suite.ParsePolicy(v, b, os.LookupEnv)
	if err != nil {
		return idemcheck.Policy{}, idemcheck.Usagef("--policy: %v", err)
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
	if err := writeOutputs([]*certify.Result{res}, out, false); err != nil {
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
	cfg.Progress = func(s scenarios.Progress) { prog.Update(render.Step(s)) }
	started := time.Now()
	res, err := certifyRun(ctx, cfg)
	prog.Done()
	var refused *scenarios.RefusedError
	if errors.As(err, &refused) {
		return nil, idemcheck.Usagef("%s", refusedHint(refused.Status, 0))
	}
	if err != nil {
		return nil, err
	}
	stamp(&res.Report, started)
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
		return fmt.Sprintf("the target answers %d to the request itself (a first request with a fresh key), so the run stopped before the checks: %s", status, look)
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
func writeOutputs(results []*certify.Result, out outputs, suiteReport bool) error {
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
			err = idemcheck.WriteFileAtomic(out.history, func(w io.Writer) error { return history.Write(w, hs...) })
		}
		if err != nil {
			return idemcheck.Usagef("--history: %v", err)
		}
	}
	if out.json != "" {
		write := reports[0].WriteJSON
		if suiteReport {
			write = idemcheck.NewSuiteReport(reports[0].Seed, reports).WriteJSON
		}
		if err := idemcheck.WriteFileAtomic(out.json, write); err != nil {
			return idemcheck.Usagef("--json: %v", err)
		}
	}
	if out.junit != "" {
		err := idemcheck.WriteFileAtomic(out.junit, func(w io.Writer) error { return render.WriteJUnit(w, reports) })
		if err != nil {
			return idemcheck.Usagef("--junit: %v", err)
		}
	}
	if err := render.AppendGitHubSummary(reports); err != nil {
		return idemcheck.Unavailablef("GITHUB_STEP_SUMMARY: %v", err)
	}
	return nil
}

// targetURL parses --url, an absolute http:// or https:// URL, into the
// base requests go to (scheme and host) and the URL's own path, "/" when it
// has none, which is the request path unless --path says otherwise.
func targetURL(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, "", idemcheck.Usagef("--url %q is not an absolute http:// or https:// URL, such as http://127.0.0.1:8080", redactURL(raw))
	}
	switch {
	case u.User != nil:
		return nil, "", idemcheck.Usagef("--url carries credentials (user:password@), which idemcheck would not send: pass --header 'Authorization: Basic …' instead")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, "", idemcheck.Usagef("--url carries a query string, which idemcheck would not send: put it in --path, such as --path '/orders?%s'", u.RawQuery)
	case u.Fragment != "":
		return nil, "", idemcheck.Usagef("--url carries a fragment (#%s), which is never sent: leave it out", u.Fragment)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, path, nil
}

// parseEffectHTTP checks --effect-http and --effect-count: a GET path
// template and a JSON pointer, given together, and not with --effect-sql.
func parseEffectHTTP(effectHTTP, effectCount, effectSQL string, countSet bool) (*idemcheck.Template, string, error) {
	if effectHTTP == "" {
		if countSet {
			return nil, "", idemcheck.Usagef("--effect-count goes with --effect-http")
		}
		return nil, "", nil
	}
	if effectSQL != "" {
		return nil, "", idemcheck.Usagef("give --effect-sql or --effect-http, not both: one effect count per endpoint")
	}
	t, err := suite.ParseEffectHTTP(effectHTTP)
	if err != nil {
		return nil, "", idemcheck.Usagef("--effect-http %q: %v", effectHTTP, err)
	}
	if !countSet {
		return nil, "", idemcheck.Usagef("--effect-http needs --effect-count: the JSON pointer of the array or number that counts, such as /data (or '' for the whole answer)")
	}
	if err := assert.ValidatePointer(effectCount); err != nil {
		return nil, "", idemcheck.Usagef("--effect-count: %v", err)
	}
	return &t, effectCount, nil
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseEffectArgs parses the --effect-arg templates, bound as $1, $2, … of
// --effect-sql, without which they mean nothing.
func parseEffectArgs(args []string, effectSQL string) ([]idemcheck.Template, error) {
	if len(args) > 0 && effectSQL == "" {
		return nil, idemcheck.Usagef("--effect-arg needs --effect-sql")
	}
	var ts []idemcheck.Template
	for _, a := range args {
		t, err := idemcheck.ParseTemplate(a)
		if err != nil {
			return nil, idemcheck.Usagef("--effect-arg %q: %v", a, err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// openEffectDB opens the database --effect-sql counts effects in: --db, or
// DATABASE_URL when --db is not given (dsn holds either).
func openEffectDB(ctx context.Context, dsn string, allowRemote bool) (*targets.Database, error) {
	if dsn == "" {
		return nil, idemcheck.Usagef("--effect-sql needs a database: pass --db DSN or set DATABASE_URL")
	}
	if err := targets.CheckDSN(dsn, "--db", allowRemote); err != nil {
		return nil, err
	}
	open := targets.OpenDatabase
	if allowRemote {
		open = targets.OpenRemoteDatabase
	}
	d, err := open(ctx, dsn)
	if err != nil {
		return nil, idemcheck.Unavailablef("%v", err)
	}
	return d, nil
}

func endpoint(base *url.URL, method, path, body string, headers []string) (scenarios.Endpoint, error) {
	e := scenarios.Endpoint{Base: base, Method: strings.ToUpper(method)}
	if !isToken(e.Method) {
		return e, idemcheck.Usagef("--method %q is not an HTTP method, such as POST", method)
	}
	if !strings.HasPrefix(path, "/") {
		return e, idemcheck.Usagef("--path %q must start with /", path)
	}
	if i := strings.IndexFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return e, idemcheck.Usagef("--path %q holds a space or control character at byte %d, which would split the request line: percent-encode it (a space is %%20)", path, i)
	}
	var err error
	if e.Path, err = idemcheck.ParseTemplate(path); err != nil {
		return e, idemcheck.Usagef("--path: %v", err)
	}
	if e.Body, err = idemcheck.ParseTemplate(body); err != nil {
		return e, idemcheck.Usagef("--body: %v", err)
	}
	jsonBody := true
	for _, h := range headers {
		hd, err := suite.ParseHeader(h)
		if err != nil {
			return e, idemcheck.Usagef("--header %v", err)
		}
		if strings.EqualFold(hd.Name, "Content-Type") && !strings.Contains(strings.ToLower(h), "json") {
			jsonBody = false
		}
		e.Header = append(e.Header, hd)
	}
	if body != "" && jsonBody {
		sample := e.Body.Fill(idemcheck.Intent{ID: "ic-sample-1", Key: "00000000-0000-4000-8000-000000000000", Seq: 1})
		var v any
		if err := json.Unmarshal([]byte(sample), &v); err != nil {
			return e, idemcheck.Usagef("--body is not valid JSON once its templates are filled (%v); for a non-JSON body pass --header 'Content-Type: …'", err)
		}
	}
	return e, nil
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

// redactURL hides a URL's password, for messages.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

func checkRange(flagName string, v, lo, hi int) error {
	if v < lo || v > hi {
		return idemcheck.Usagef("%s %d is out of range: use %d to %d", flagName, v, lo, hi)
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
