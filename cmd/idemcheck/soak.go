package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/runner"
)

// soakFlags are the soak command's flags.
type soakFlags struct {
	rawURL, command, path, method, body, db, effectSQL, effectBatchSQL, policyName, replayHeader string
	headers, effectArgs, faultSpecs                                                              listFlag
	redact, redactFields, redactQuery                                                            listFlag
	rate, workers                                                                                int
	duration, timeout, settle, progressEvery                                                     time.Duration
	cutShare, value                                                                              float64
	seed, intents, maxBody                                                                       int64
	allowRemote, countDuring                                                                     bool
	vegetaResults, progress, shardSpec                                                           string
	shards                                                                                       int
	out                                                                                          outputs
	tf                                                                                           tlsFlags
	statuses                                                                                     statusFlags
	// set holds the flags named on the command line.
	set map[string]bool
	red *idemcheck.Redactor
}

func (f *soakFlags) register() *flag.FlagSet {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&f.rawURL, "url", "", "the target's base `URL`, http:// or https:// (or --cmd)")
	fs.StringVar(&f.command, "cmd", "", "`command` that starts the target with PORT and DATABASE_URL")
	fs.StringVar(&f.method, "method", "POST", "request method")
	fs.StringVar(&f.path, "path", "", "request path template (default: the URL's path)")
	fs.StringVar(&f.body, "body", "", "request body `template`")
	fs.Var(&f.headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.Var(&f.redact, "redact-header", "header whose value never reaches a report or history (repeatable; Authorization, Cookie, X-Api-Key and names with token, secret, password or api-key always are)")
	fs.Var(&f.redactFields, "redact-field", "JSON `pointer` into request and reply bodies, such as /card/number, whose value never reaches a report or history (repeatable)")
	fs.Var(&f.redactQuery, "redact-query", "query parameter `name` whose value never reaches a report or history (repeatable)")
	fs.StringVar(&f.db, "db", "", "`DSN` of the database to count effects in, PostgreSQL or MySQL-family (default $DATABASE_URL)")
	fs.StringVar(&f.effectSQL, "effect-sql", "", "`SQL` returning one intent's effect count")
	fs.Var(&f.effectArgs, "effect-arg", "effect SQL argument template (repeatable)")
	fs.StringVar(&f.effectBatchSQL, "effect-batch-sql", "", "the effect SQL's batch form, run once for many intents: `SQL` whose $1 is the array of their --effect-arg values, returning each value as text and its count (SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1)")
	fs.StringVar(&f.policyName, "policy", "ietf", "policy preset or YAML file")
	f.statuses.register(fs)
	fs.StringVar(&f.replayHeader, "replay-header", "", "header the target sets on replays (tells which cut attempts had succeeded)")
	fs.IntVar(&f.rate, "rate", 100, fmt.Sprintf("intents per second (1 to %d)", certify.MaxSoakRate))
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send")
	fs.Int64Var(&f.intents, "intents", 0, "stop after this many intents, even before --duration has passed (0: no limit)")
	fs.Float64Var(&f.cutShare, "cut-share", runner.DefaultSoakShare, "share of first attempts whose reply is cut after commit, then retried (0 to 1); the same as --fault cut-reply@SHARE; an https:// soak cuts none (TLS would put the cut in its handshake)")
	fs.Var(&f.faultSpecs, "fault", "run the soak under a fault (repeatable): `SPEC` is NAME[:key=value,...][@SHARE], such as reset@0.02, timeout@1%, latency:ms=20 or db-latency:ms=5 (with --cmd); see docs/certify.md")
	fs.IntVar(&f.workers, "workers", certify.DefaultSoakWorkers, fmt.Sprintf("concurrent requests at most (1 to %d)", certify.MaxSoakWorkers))
	fs.DurationVar(&f.timeout, "timeout", config.DefaultTimeout, "per-attempt timeout")
	fs.Float64Var(&f.value, "value", 0, "what one duplicate would cost, for the estimate")
	fs.Int64Var(&f.seed, "seed", 1, "seed choosing which intents are cut (and meet each --fault)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow traffic to a target or database that is not on loopback (without it, hosts must be loopback IPs, localhost, or names the hosts file maps to loopback; no DNS query is sent)")
	fs.Int64Var(&f.maxBody, "max-body", config.DefaultMaxBody, "reply body `bytes` kept per attempt (the rest is read no further)")
	fs.StringVar(&f.vegetaResults, "vegeta-results", "", "also write vegeta's result of every first attempt to `FILE`, in vegeta's own encoding, for vegeta report and vegeta plot")
	fs.BoolVar(&f.countDuring, "count-during", false, "count effects while the load runs, in batches as intents complete, not after it (the soak ends sooner; the counting takes database time from the target)")
	fs.DurationVar(&f.settle, "settle", 0, "for effects that land after the reply (202 Accepted, a background worker): the longest `duration` to wait, after the load, for every intent's effect count to stay the same for a quiet period (1s, or half the duration when shorter) before it is judged, such as 30s; with --count-during, every intent is counted as it completes and again once the duration has passed after the load, for late duplicates")
	fs.StringVar(&f.progress, "progress", "auto", "live progress on standard error while the soak runs: text (a line redrawn on a terminal), json (a JSON line each interval, for log collectors), off; auto is text when standard error is a terminal, else off")
	fs.DurationVar(&f.progressEvery, "progress-every", 0, "how often progress is shown (default 1s for text, 10s for json)")
	fs.StringVar(&f.shardSpec, "shard", "", "run shard `i/n` of a soak spread over n processes (i from 0): its own intents and seed stream, 1/n of --rate and --intents; default: $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it, of --shards")
	fs.IntVar(&f.shards, "shards", 0, "the shard `count`, with the index from $JOB_COMPLETION_INDEX (default $IDEMCHECK_SHARDS)")
	f.out.register(fs)
	f.tf.register(fs)
	return fs
}

// validate checks what only the command has: the flags a Spec reads as
// defaults when zero, the progress, the output files and the TLS files.
func (f *soakFlags) validate() error {
	switch {
	case f.timeout == 0:
		return idemcheck.Usagef("--timeout 0s is too short for any reply to arrive: use %v or more, such as 10s", config.MinTimeout)
	case f.maxBody == 0:
		return idemcheck.Usagef("--max-body 0 is out of range: use 1 to %d bytes", config.MaxMaxBody)
	case f.workers == 0:
		return idemcheck.Usagef("--workers 0 is out of range: use 1 to %d", certify.MaxSoakWorkers)
	case f.progress != "auto" && f.progress != "text" && f.progress != "json" && f.progress != "off":
		return idemcheck.Usagef("--progress %q: use text, json, off or auto", f.progress)
	}
	if err := f.out.check(outputFlag{"--vegeta-results", f.vegetaResults}); err != nil {
		return err
	}
	if err := f.tf.forURL(f.rawURL); err != nil {
		return err
	}
	return f.tf.load()
}

// spec is the soak the flags describe: ${NAME} read from the environment
// (what it expands to is hidden in the history, as certify's is), the
// policy loaded and overridden, the shard read.
func (f *soakFlags) spec() (config.Spec, config.SoakSpec, error) {
	shard, err := soakShard(f.shardSpec, f.shards, f.set["shards"], os.LookupEnv)
	if err != nil {
		return config.Spec{}, config.SoakSpec{}, err
	}
	rawURL, secrets, err := expandFlag("--url", f.rawURL, os.LookupEnv)
	if err != nil {
		return config.Spec{}, config.SoakSpec{}, err
	}
	// Known before any check below can quote them.
	defer func() { f.red.AddSecret(secrets...) }()
	body := []string{f.body}
	for _, e := range []struct {
		name string
		vs   []string
	}{{"--header", f.headers}, {"--body", body}} {
		used, err := expandFlags(e.name, e.vs, os.LookupEnv)
		if err != nil {
			return config.Spec{}, config.SoakSpec{}, err
		}
		secrets = append(secrets, used...)
	}
	pf, err := loadPolicy(f.policyName)
	if err != nil {
		return config.Spec{}, config.SoakSpec{}, err
	}
	if pf.Sign != nil {
		return config.Spec{}, config.SoakSpec{}, idemcheck.Usagef("--policy %s: sign: a soak sends its requests unsigned (signing is certify's); leave sign: out of the policy file given to soak", f.policyName)
	}
	secrets = append(secrets, pf.Secrets...)
	pol := pf.Policy
	if f.set["replay-header"] {
		pol.ReplayHeader = f.replayHeader
	}
	if err := f.statuses.apply(&pol, f.set); err != nil {
		return config.Spec{}, config.SoakSpec{}, err
	}
	db, dbFromEnv := f.db, false
	if db == "" {
		db = os.Getenv("DATABASE_URL")
		dbFromEnv = db != ""
	}
	s := config.Spec{
		Words: flagWords, URL: rawURL, Command: f.command, Instances: 1,
		Method: f.method, Path: f.path, Body: body[0], Headers: splitHeaders(f.headers),
		Policy: pol, DSN: db, DSNDefault: dbFromEnv, EffectSQL: f.effectSQL, EffectArgs: f.effectArgs,
		Redact: f.redact, RedactFields: f.redactFields, RedactQuery: f.redactQuery, Secrets: secrets,
		Rate: float64(f.rate), Timeout: f.timeout, MaxBody: f.maxBody, AllowRemote: f.allowRemote, TLS: f.tf.config,
	}
	k := config.SoakSpec{Duration: f.duration, Intents: f.intents, Faults: f.faultSpecs, CutShare: f.cutShare, CutShareSet: f.set["cut-share"],
		Seed: f.seed, Shard: shard, Workers: f.workers, CountDuring: f.countDuring, Settle: f.settle, EffectBatchSQL: f.effectBatchSQL, Value: f.value}
	return s, k, nil
}

// runSoak is the soak command: flags to a description, config.BuildSoak,
// the target started if idemcheck starts it, certify.Soak, the report
// rendered and written, the exit code.
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var f soakFlags
	fs := f.register()
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	f.set = given(fs)
	f.red = redactorOf(ctx)
	f.out.red = f.red
	if err := f.validate(); err != nil {
		return 0, err
	}
	spec, k, err := f.spec()
	if err != nil {
		return 0, err
	}
	spec.Redactor = f.red
	b, err := config.BuildSoak(spec, k)
	if err != nil {
		return 0, err
	}
	switch {
	case b.Launch != nil:
		st, err := b.Launch.Start(ctx, nil, stderr)
		if err != nil {
			return 0, err
		}
		defer st.Close()
		b.Attach(st)
	case b.Config.EffectSQL != "":
		d, err := config.OpenDB(ctx, b.Config.DSN, b.Config.AllowRemote)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		config.UseSoakDatabase(&b.Config, d)
	}
	cfg := b.Config
	cfg.HistoryFile, cfg.VegetaResults = f.out.history, f.vegetaResults
	if f.out.history == "-" {
		// The history streams to standard output, and the report goes to
		// standard error.
		cfg.HistoryFile, cfg.History, stdout = "", stdout, stderr
	}
	cfg.OnLoad = func() { fmt.Fprintln(stderr, soakLine(cfg)) }
	text := f.showProgress(&cfg, stderr)
	res, err := certify.Soak(ctx, cfg)
	if text != nil {
		// The last count stays on screen, the report below it.
		text.Done()
	}
	var refused *runner.RefusedError
	if errors.As(err, &refused) {
		return 0, idemcheck.Usagef("%s", refusedHint(refused.Status, 0))
	}
	if err != nil {
		return 0, err
	}
	rep := res.Report
	rep.Tool = tool
	counted := cfg.EffectSQL != ""
	render.WriteSoak(stdout, rep, counted)
	if f.out.json != "" {
		if err := writeRedacted(f.red, f.out.json, rep.WriteJSON); err != nil {
			return 0, idemcheck.Usagef("--json: %v", err)
		}
	}
	if f.out.html != "" {
		err := writeRedacted(f.red, f.out.html, func(w io.Writer) error { return render.WriteSoakHTML(w, rep, counted) })
		if err != nil {
			return 0, idemcheck.Usagef("--html: %v", err)
		}
	}
	return exitFor(f.out, rep.Verdict), nil
}

// showProgress sets the soak's progress as --progress asks, on stderr; it
// returns the text line to close when the soak ends, if any.
func (f *soakFlags) showProgress(cfg *certify.SoakConfig, stderr io.Writer) *render.SoakProgressWriter {
	terminal := render.IsTerminal(stderr)
	progress := f.progress
	if progress == "auto" {
		progress = "off"
		if terminal {
			progress = "text"
		}
	}
	// Given, it is checked (certify.Soak) even where nothing is shown.
	cfg.ProgressEvery = f.progressEvery
	switch progress {
	case "text":
		text := &render.SoakProgressWriter{W: stderr, Terminal: terminal}
		cfg.Progress = text.Update
		cfg.ProgressEvery = cmp.Or(cfg.ProgressEvery, time.Second)
		return text
	case "json":
		cfg.Progress = func(p idemcheck.SoakProgress) { _ = render.WriteSoakProgressJSON(stderr, p, time.Now()) }
		cfg.ProgressEvery = cmp.Or(cfg.ProgressEvery, 10*time.Second)
	}
	return nil
}

// soakLine announces the soak on standard error once it starts: its rate
// (a shard's part of the whole), its length, its faults and its settling.
func soakLine(cfg certify.SoakConfig) string {
	settling := ""
	switch {
	case cfg.Settle > 0 && cfg.CountDuring:
		settling = fmt.Sprintf(", effects counted again %v after the load", cfg.Settle)
	case cfg.Settle > 0:
		settling = fmt.Sprintf(", effects counted once settled (at most %v after the load)", cfg.Settle)
	}
	if cfg.Settle > 0 && cfg.Policy.StatusPointer != "" {
		settling += fmt.Sprintf(", status monitors followed (%s)", cfg.Policy.StatusPointer)
	}
	total := int64(cfg.Rate)
	if sh := cfg.Shard; sh.Count > 1 {
		return fmt.Sprintf("soak: shard %s: %d of %d intents/s for %v, %s%s …", sh, sh.Part(total), total, cfg.Duration, faultsLine(cfg.Faults), settling)
	}
	return fmt.Sprintf("soak: %d intents/s for %v, %s%s …", total, cfg.Duration, faultsLine(cfg.Faults), settling)
}

// soakShard reads which shard of a soak this process runs: --shard i/n;
// else $JOB_COMPLETION_INDEX (which a Kubernetes Indexed Job sets in each
// pod) of --shards or $IDEMCHECK_SHARDS; else the whole soak (Count 0).
func soakShard(spec string, shards int, shardsSet bool, lookup func(string) (string, bool)) (idemcheck.Shard, error) {
	const how = "such as --shard 2/4 (shard 2 of 4, counted from 0)"
	if spec != "" {
		if shardsSet {
			return idemcheck.Shard{}, idemcheck.Usagef("--shard %s and --shards %d both give the shard count: give one", spec, shards)
		}
		is, ns, ok := strings.Cut(spec, "/")
		i, err1 := strconv.Atoi(strings.TrimSpace(is))
		n, err2 := strconv.Atoi(strings.TrimSpace(ns))
		switch {
		case !ok || err1 != nil || err2 != nil:
			return idemcheck.Shard{}, idemcheck.Usagef("--shard %q is not INDEX/COUNT: write it %s", spec, how)
		case n < 1:
			return idemcheck.Shard{}, idemcheck.Usagef("--shard %s: the count must be 1 or more, %s", spec, how)
		case i < 0 || i >= n:
			return idemcheck.Shard{}, idemcheck.Usagef("--shard %s: the index must be 0 to %d, %s", spec, n-1, how)
		}
		return idemcheck.Shard{Index: i, Count: n}, nil
	}
	countFrom := "--shards"
	if !shardsSet {
		if v, ok := lookup("IDEMCHECK_SHARDS"); ok && v != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return idemcheck.Shard{}, idemcheck.Usagef("IDEMCHECK_SHARDS=%q is not a number: set it to the shard count, such as 4", v)
			}
			shards, shardsSet, countFrom = n, true, "IDEMCHECK_SHARDS"
		}
	}
	if shardsSet && shards < 1 {
		return idemcheck.Shard{}, idemcheck.Usagef("%s %d is out of range: the shard count is 1 or more", countFrom, shards)
	}
	v, ok := lookup("JOB_COMPLETION_INDEX")
	if !ok || v == "" {
		if shardsSet {
			return idemcheck.Shard{}, idemcheck.Usagef("%s %d needs the shard's index: run it in a Kubernetes Indexed Job (which sets JOB_COMPLETION_INDEX), or give --shard i/%d", countFrom, shards, shards)
		}
		return idemcheck.Shard{}, nil
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil:
		return idemcheck.Shard{}, idemcheck.Usagef("JOB_COMPLETION_INDEX=%q is not a shard index: it must be a number from 0, as a Kubernetes Indexed Job sets it", v)
	case !shardsSet:
		return idemcheck.Shard{}, idemcheck.Usagef("JOB_COMPLETION_INDEX=%d is set but not the shard count: give --shards N (the Job's completions) or set IDEMCHECK_SHARDS", i)
	case i < 0 || i >= shards:
		return idemcheck.Shard{}, idemcheck.Usagef("JOB_COMPLETION_INDEX=%d is out of range for %s %d: the index must be 0 to %d", i, countFrom, shards, shards-1)
	}
	return idemcheck.Shard{Index: i, Count: shards}, nil
}

// faultsLine says what a soak runs under, for its progress line.
func faultsLine(fs []runner.SoakFault) string {
	if len(fs) == 0 {
		return "no faults"
	}
	var parts []string
	for _, f := range fs {
		switch {
		case f.Fault.Name == faults.CutReply.Name:
			parts = append(parts, fmt.Sprintf("%.1f%% of replies cut after commit", f.Share*100))
		case f.WholeLink():
			parts = append(parts, f.Fault.String()+" on every attempt")
		default:
			parts = append(parts, fmt.Sprintf("%s on %.1f%%", f.Fault, f.Share*100))
		}
	}
	return strings.Join(parts, ", ")
}
