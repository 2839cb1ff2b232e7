package main

import (
	"bufio"
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
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/estimate"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// MaxSoakRate bounds --rate: far past what one machine's loopback takes.
const MaxSoakRate = 100000

// runSoak is the soak command: flags to a scenarios.Soak, the run, its
// history counted by assert.SoakTally (and streamed to --history), the
// report rendered, the exit code.
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var (
		rawURL, command, path, method, body, db, effectSQL, effectBatchSQL, policyName, replayHeader string
		headers, effectArgs, faultSpecs                                                              listFlag
		redact, redactFields, redactQuery                                                            listFlag
		rate, workers                                                                                int
		duration, timeout                                                                            time.Duration
		cutShare, value                                                                              float64
		seed, intents                                                                                int64
		allowRemote                                                                                  bool
		maxBody                                                                                      int64
		out                                                                                          outputs
		tf                                                                                           tlsFlags
	)
	fs.StringVar(&rawURL, "url", "", "the target's base `URL`, http:// or https:// (or --cmd)")
	fs.StringVar(&command, "cmd", "", "`command` that starts the target with PORT and DATABASE_URL")
	fs.StringVar(&method, "method", "POST", "request method")
	fs.StringVar(&path, "path", "", "request path template (default: the URL's path)")
	fs.StringVar(&body, "body", "", "request body `template`")
	fs.Var(&headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.Var(&redact, "redact-header", "header whose value never reaches a report or history (repeatable; Authorization, Cookie, X-Api-Key and names with token, secret, password or api-key always are)")
	fs.Var(&redactFields, "redact-field", "JSON `pointer` into request and reply bodies, such as /card/number, whose value never reaches a report or history (repeatable)")
	fs.Var(&redactQuery, "redact-query", "query parameter `name` whose value never reaches a report or history (repeatable)")
	fs.StringVar(&db, "db", "", "`DSN` of the database to count effects in, PostgreSQL or MySQL-family (default $DATABASE_URL)")
	fs.StringVar(&effectSQL, "effect-sql", "", "`SQL` returning one intent's effect count")
	fs.Var(&effectArgs, "effect-arg", "effect SQL argument template (repeatable)")
	fs.StringVar(&effectBatchSQL, "effect-batch-sql", "", "the effect SQL's batch form, run once for many intents: `SQL` whose $1 is the array of their --effect-arg values, returning each value as text and its count (SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1)")
	fs.StringVar(&policyName, "policy", "ietf", "policy preset or YAML file")
	var statuses statusFlags
	statuses.register(fs)
	fs.StringVar(&replayHeader, "replay-header", "", "header the target sets on replays (tells which cut attempts had succeeded)")
	fs.IntVar(&rate, "rate", 100, "intents per second (1 to 100000)")
	fs.DurationVar(&duration, "duration", 10*time.Second, "how long to send")
	fs.Int64Var(&intents, "intents", 0, "stop after this many intents, even before --duration has passed (0: no limit)")
	fs.Float64Var(&cutShare, "cut-share", scenarios.DefaultSoakShare, "share of first attempts whose reply is cut after commit, then retried (0 to 1); the same as --fault cut-reply@SHARE; an https:// soak cuts none (TLS would put the cut in its handshake)")
	fs.Var(&faultSpecs, "fault", "run the soak under a fault (repeatable): `SPEC` is NAME[:key=value,...][@SHARE], such as reset@0.02, timeout@1%, latency:ms=20 or db-latency:ms=5 (with --cmd); see docs/certify.md")
	fs.IntVar(&workers, "workers", 64, "concurrent requests at most (1 to 4096)")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "per-attempt timeout")
	fs.Float64Var(&value, "value", 0, "what one duplicate would cost, for the estimate")
	fs.Int64Var(&seed, "seed", 1, "seed choosing which intents are cut (and meet each --fault)")
	fs.BoolVar(&allowRemote, "allow-remote", false, "allow traffic to a target or database that is not on loopback (without it, hosts must be loopback IPs, localhost, or names the hosts file maps to loopback; no DNS query is sent)")
	fs.Int64Var(&maxBody, "max-body", 64<<10, "reply body `bytes` kept per attempt (the rest is read no further)")
	var vegetaResults string
	fs.StringVar(&vegetaResults, "vegeta-results", "", "also write vegeta's result of every first attempt to `FILE`, in vegeta's own encoding, for vegeta report and vegeta plot")
	var countDuring bool
	fs.BoolVar(&countDuring, "count-during", false, "count effects while the load runs, in batches as intents complete, not after it (the soak ends sooner; the counting takes database time from the target)")
	var settle time.Duration
	fs.DurationVar(&settle, "settle", 0, "for effects that land after the reply (202 Accepted, a background worker): the longest `duration` to wait, after the load, for every intent's effect count to stay the same for a quiet period (1s, or half the duration when shorter) before it is judged, such as 30s; with --count-during, every intent is counted as it completes and again once the duration has passed after the load, for late duplicates")
	var progress string
	var progressEvery time.Duration
	fs.StringVar(&progress, "progress", "auto", "live progress on standard error while the soak runs: text (a line redrawn on a terminal), json (a JSON line each interval, for log collectors), off; auto is text when standard error is a terminal, else off")
	fs.DurationVar(&progressEvery, "progress-every", 0, "how often progress is shown (default 1s for text, 10s for json)")
	var shardSpec string
	var shards int
	fs.StringVar(&shardSpec, "shard", "", "run shard `i/n` of a soak spread over n processes (i from 0): its own intents and seed stream, 1/n of --rate and --intents; default: $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it, of --shards")
	fs.IntVar(&shards, "shards", 0, "the shard `count`, with the index from $JOB_COMPLETION_INDEX (default $IDEMCHECK_SHARDS)")
	out.register(fs)
	tf.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// The one redactor of the command (redactorOf) learns the soak's
	// credentials before any message can quote them: the names --redact-*
	// give and the values they name in the URL and path; below, what
	// ${NAME} expands to, and the headers' values by their names.
	red := redactorOf(ctx)
	out.red = red
	red.AddHeader(redact...)
	red.AddField(redactFields...)
	red.AddQuery(redactQuery...)
	red.LearnURL(rawURL)
	red.LearnQuery(path)
	// The headers and body are learned once ${NAME} is expanded.
	shard, err := soakShard(shardSpec, shards, set["shards"], os.LookupEnv)
	if err != nil {
		return 0, err
	}
	switch {
	case rate < 1 || rate > MaxSoakRate:
		return 0, idemcheck.Usagef("--rate %d is out of range: use 1 to %d", rate, MaxSoakRate)
	case duration <= 0:
		return 0, idemcheck.Usagef("--duration %v must be positive, such as 30s", duration)
	case intents < 0:
		return 0, idemcheck.Usagef("--intents %d is out of range: use 0 (no limit) or more", intents)
	case cutShare < 0 || cutShare > 1:
		return 0, idemcheck.Usagef("--cut-share %v is out of range: use 0 to 1", cutShare)
	case workers < 1 || workers > 4096:
		return 0, idemcheck.Usagef("--workers %d is out of range: use 1 to 4096", workers)
	case rawURL == "" && command == "":
		return 0, idemcheck.Usagef("soak: --url is required (or --cmd)")
	case rawURL != "" && command != "":
		return 0, idemcheck.Usagef("soak: give --url or --cmd, not both")
	case timeout < MinTimeout:
		return 0, idemcheck.Usagef("--timeout %v is too short for any reply to arrive: use %v or more, such as 10s", timeout, MinTimeout)
	case progress != "auto" && progress != "text" && progress != "json" && progress != "off":
		return 0, idemcheck.Usagef("--progress %q: use text, json, off or auto", progress)
	case progressEvery < 0:
		return 0, idemcheck.Usagef("--progress-every %v must be positive, such as 5s", progressEvery)
	case maxBody < 1 || maxBody > maxMaxBody:
		return 0, idemcheck.Usagef("--max-body %d is out of range: use 1 to %d bytes", maxBody, maxMaxBody)
	case settle < 0:
		return 0, idemcheck.Usagef("--settle %v must not be negative: give how long effects may take to land, such as 30s", settle)
	case settle > 0 && effectSQL == "":
		return 0, idemcheck.Usagef("--settle waits for effects to settle, and needs --effect-sql to count them")
	}
	if err := out.check(outputFlag{"--vegeta-results", vegetaResults}); err != nil {
		return 0, err
	}
	// Each shard sends its part of the rate and of the intents.
	totalRate := rate
	if rate = int(shard.Part(int64(rate))); rate < 1 {
		return 0, idemcheck.Usagef("--rate %d over %d shards leaves shard %d nothing to send: use --rate %d or more", totalRate, shard.Count, shard.Index, shard.Count)
	}
	if intents > 0 {
		total := intents
		if intents = shard.Part(intents); intents < 1 {
			return 0, idemcheck.Usagef("--intents %d over %d shards leaves shard %d none: use --intents %d or more", total, shard.Count, shard.Index, shard.Count)
		}
	}
	if err := tf.forURL(rawURL); err != nil {
		return 0, err
	}
	if err := tf.load(); err != nil {
		return 0, err
	}
	soakFaults, err := soakFaultFlags(faultSpecs, cutShare, set["cut-share"], command != "", isHTTPS(rawURL))
	if err != nil {
		return 0, err
	}
	if db == "" {
		db = os.Getenv("DATABASE_URL")
	}
	var urlSecrets []string
	if rawURL, urlSecrets, err = expandFlag("--url", rawURL, os.LookupEnv); err != nil {
		return 0, err
	}
	red.AddSecret(urlSecrets...)
	red.LearnURL(rawURL)
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
	pf, err := loadPolicy(policyName)
	if err != nil {
		return 0, err
	}
	if pf.Sign != nil {
		return 0, idemcheck.Usagef("--policy %s: sign: a soak sends its requests unsigned (signing is certify's); leave sign: out of the policy file given to soak", policyName)
	}
	red.AddSecret(pf.Secrets...)
	policy := pf.Policy
	red.ExemptHeader(policy.KeyHeader)
	if set["replay-header"] {
		policy.ReplayHeader = replayHeader
	}
	if err := statuses.apply(&policy, set); err != nil {
		return 0, err
	}
	if err := checkPolicy(policy, policyName, set); err != nil {
		return 0, err
	}
	// ${NAME} in the URL (above), headers and body is read from the environment,
	// as certify reads it, so that a credential (a Kubernetes Secret's
	// variable) never needs to be in the arguments; what the headers and
	// body expand to is redacted in the history.
	var secrets []string
	bodies := []string{body}
	for _, e := range []struct {
		name string
		vs   []string
	}{{"--header", headers}, {"--body", bodies}} {
		used, err := expandFlags(e.name, e.vs, os.LookupEnv)
		if err != nil {
			return 0, err
		}
		secrets = append(secrets, used...)
	}
	body = bodies[0]
	red.AddSecret(secrets...)
	red.LearnBody([]byte(body))
	for _, h := range headers {
		if name, value, _ := strings.Cut(h, ":"); !strings.Contains(value, "{{") {
			red.LearnHeader(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	for _, h := range headers {
		if _, err := suite.ParseHeader(h); err != nil {
			return 0, idemcheck.Usagef("--header %v", err)
		}
	}
	argTemplates, err := parseEffectArgs(effectArgs, effectSQL)
	if err != nil {
		return 0, err
	}
	if effectBatchSQL != "" && effectSQL == "" {
		return 0, idemcheck.Usagef("--effect-batch-sql needs --effect-sql: the query for one intent, which checks the batch form and names each count")
	}
	sk := &scenarios.Soak{Policy: policy, Rate: rate, Duration: duration, Intents: intents, Faults: soakFaults, Seed: seed, Workers: workers, Timeout: timeout, Shard: shard, CountDuring: countDuring, Settle: settle}
	var dbName string
	if command != "" {
		started, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: command, DSN: db, AllowRemote: allowRemote})
		if err != nil {
			return 0, err
		}
		defer started.Close()
		rawURL = started.URL.String()
		sk.Powers = started.Powers()
		if why := started.Powers().NoDBLink(); why != "" {
			for _, f := range soakFaults {
				if f.Fault.Link == faults.LinkDB {
					return 0, idemcheck.Usagef("--fault %s acts on the target's database link, and %s: leave it out", f.Fault.Name, why)
				}
			}
		}
		if effectSQL != "" {
			sk.Effects, dbName = config.EffectsIn(started.DB, effectSQL, argTemplates), targets.RedactDSN(started.DB.DSN)
		}
	} else if effectSQL != "" {
		d, err := openEffectDB(ctx, db, allowRemote)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		sk.Effects, dbName = config.EffectsIn(d, effectSQL, argTemplates), targets.RedactDSN(db)
	}
	base, urlPath, err := targetURL(rawURL)
	if err != nil {
		return 0, err
	}
	if path == "" {
		path = urlPath
	}
	if sk.Endpoint, err = endpoint(base, method, path, body, headers); err != nil {
		return 0, err
	}
	if sk.Upstream, err = certify.ResolveTargetTLS(ctx, base, allowRemote, tf.config); err != nil {
		return 0, err
	}
	sk.AllowRemote, sk.MaxBody, sk.Secrets, sk.TLS = allowRemote, maxBody, secrets, tf.config
	sk.Redactor, sk.Redact, sk.RedactFields, sk.RedactQuery = red, redact, redactFields, redactQuery
	if sk.Effects != nil {
		if err := certify.CheckEffectSQL(ctx, sk.Effects); err != nil {
			return 0, err
		}
		if effectBatchSQL != "" && sk.Effects.DB != nil {
			return 0, idemcheck.Usagef("--effect-batch-sql is PostgreSQL's (= ANY($1)); on %s the soak counts a batch with --effect-sql, prepared once, in one transaction: leave --effect-batch-sql out", sk.Effects.DB.Engine())
		}
		if sk.Effects.BatchSQL = effectBatchSQL; effectBatchSQL != "" {
			if err := checkEffectBatchSQL(ctx, sk.Effects); err != nil {
				return 0, err
			}
		}
	}
	target := idemcheck.Target{URL: red.String(base.String()), Method: sk.Endpoint.Method, Path: red.String(path), Database: dbName,
		Insecure: base.Scheme == "https" && tf.insecure}
	sk.Header = idemcheck.Run{Seed: seed, Target: target, Policy: policy, EffectQuery: effectSQL,
		Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSoak}}}

	// One request before the load, as a certification's pre-flight: a
	// configuration the target refuses (a 4xx, a TLS failure) is a usage
	// error before anything else is sent or written.
	if err := preflightErr(ctx, sk.Preflight(ctx)); err != nil {
		return 0, err
	}

	// The history streams to a temporary file beside the target file and
	// is renamed into place only when the soak finishes; with --history -
	// it streams to standard output, and the report goes to stderr.
	var histFile *idemcheck.Output
	var histOut *idemcheck.RedactWriter
	switch out.history {
	case "":
	case "-":
		sk.History = history.NewEncoder(stdout)
		stdout = stderr
	default:
		if histFile, err = idemcheck.CreateOutput(out.history); err != nil {
			return 0, idemcheck.Usagef("--history: %v", err)
		}
		defer histFile.Abort()
		histOut = red.Writer(histFile)
		sk.History = history.NewEncoder(histOut)
	}
	var vegetaFile *idemcheck.Output
	if vegetaResults != "" {
		if vegetaFile, err = idemcheck.CreateOutput(vegetaResults); err != nil {
			return 0, idemcheck.Usagef("--vegeta-results: %v", err)
		}
		defer vegetaFile.Abort()
		vw := bufio.NewWriter(vegetaFile)
		defer vw.Flush()
		sk.VegetaResults = vw
	}
	tally := &assert.SoakTally{Policy: policy}
	sk.Counter = tally
	settling := ""
	switch {
	case settle > 0 && countDuring:
		settling = fmt.Sprintf(", effects counted again %v after the load", settle)
	case settle > 0:
		settling = fmt.Sprintf(", effects counted once settled (at most %v after the load)", settle)
	}
	if shard.Count > 1 {
		fmt.Fprintf(stderr, "soak: shard %s: %d of %d intents/s for %v, %s%s …\n", shard, rate, totalRate, duration, faultsLine(soakFaults), settling)
	} else {
		fmt.Fprintf(stderr, "soak: %d intents/s for %v, %s%s …\n", rate, duration, faultsLine(soakFaults), settling)
	}
	terminal := render.IsTerminal(stderr)
	if progress == "auto" {
		progress = "off"
		if terminal {
			progress = "text"
		}
	}
	var text *render.SoakProgressWriter
	switch progress {
	case "text":
		text = &render.SoakProgressWriter{W: stderr, Terminal: terminal}
		sk.Progress = text.Update
		sk.ProgressEvery = cmp.Or(progressEvery, time.Second)
	case "json":
		sk.Progress = func(p idemcheck.SoakProgress) { _ = render.WriteSoakProgressJSON(stderr, p, time.Now()) }
		sk.ProgressEvery = cmp.Or(progressEvery, 10*time.Second)
	}
	started := time.Now()
	load, err := sk.Run(ctx)
	if text != nil {
		// The last count stays on screen, the report below it.
		text.Done()
	}
	if err != nil {
		// A history or results file that could not be written is the
		// path's fault, said with it.
		for _, f := range []struct {
			flag string
			o    *idemcheck.Output
		}{{"--history", histFile}, {"--vegeta-results", vegetaFile}} {
			if f.o != nil && f.o.Err() != nil {
				return 0, idemcheck.Usagef("%s: %v", f.flag, f.o.Err())
			}
		}
		return 0, idemcheck.Unavailablef("soak: %v", err)
	}
	res := tally.Result(*load)
	if res.Intents > 0 && res.Unresolved == res.Intents {
		// A soak in which nothing was answered has proved nothing: no
		// verdict and no files, as when the target is down from the start.
		return 0, idemcheck.Unavailablef("soak: target %s answered none of %d intents, even on retry: is it still running?", base.Host, res.Intents)
	}
	if histFile != nil {
		if err := histOut.Flush(); err != nil {
			return 0, idemcheck.Usagef("--history: %v", err)
		}
		if err := histFile.Commit(); err != nil {
			return 0, idemcheck.Usagef("--history: %v", err)
		}
	}
	if vegetaFile != nil {
		if err := sk.VegetaResults.(*bufio.Writer).Flush(); err != nil {
			return 0, idemcheck.Usagef("--vegeta-results: %v", err)
		}
		if err := vegetaFile.Commit(); err != nil {
			return 0, idemcheck.Usagef("--vegeta-results: %v", err)
		}
	}
	rep := idemcheck.SoakReport{Version: idemcheck.ReportVersion, Verdict: assert.SoakVerdict(res), Tool: tool,
		StartedAt: started.UTC().Truncate(time.Millisecond), Seed: seed, Target: target, Soak: &res, Reason: assert.SoakReasonIn(res, flagWords)}
	if shard.Count > 1 {
		rep.Shard = &shard
	}
	rep.Estimate, rep.EstimateAssumes = estimate.Soak(res, value)
	render.WriteSoak(stdout, rep, sk.Effects != nil)
	if out.json != "" {
		if err := red.WriteFileAtomic(out.json, rep.WriteJSON); err != nil {
			return 0, idemcheck.Usagef("--json: %v", err)
		}
	}
	if out.html != "" {
		err := red.WriteFileAtomic(out.html, func(w io.Writer) error { return render.WriteSoakHTML(w, rep, sk.Effects != nil) })
		if err != nil {
			return 0, idemcheck.Usagef("--html: %v", err)
		}
	}
	return exitFor(out, rep.Verdict), nil
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

// preflightErr is the command's error for a soak's pre-flight: the hint
// for a request the target refuses, a TLS setting's usage error as it is.
func preflightErr(ctx context.Context, err error) error {
	var refused *scenarios.RefusedError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return idemcheck.Unavailablef("soak: %v", err)
	case errors.As(err, &refused):
		return idemcheck.Usagef("%s", refusedHint(refused.Status, 0))
	}
	return err
}

// soakFaultFlags reads the --fault flags, with --cut-share as the share of
// cut-reply (one mechanism: --cut-share X is --fault cut-reply@X), and
// checks them before anything is started or sent. started says idemcheck
// starts the target (--cmd), which the faults of its database link need;
// overTLS that the target is https://, where a reply cut after commit
// cannot be made (scenarios.SoakFault.OverTLS): --cut-share's default is
// then no cut, and a cut asked for is a usage error.
func soakFaultFlags(specs []string, cutShare float64, cutShareSet, started, overTLS bool) ([]scenarios.SoakFault, error) {
	var out []scenarios.SoakFault
	cutGiven := false
	if overTLS && cutShareSet && cutShare > 0 {
		cut := scenarios.SoakFault{Fault: faults.CutReply, Share: cutShare}
		return nil, idemcheck.Usagef("--cut-share %v: %v", cutShare, cut.OverTLS())
	}
	for _, spec := range specs {
		f, err := scenarios.ParseSoakFault(spec)
		if err != nil {
			return nil, idemcheck.Usagef("--fault %s: %w", spec, err)
		}
		if overTLS {
			if err := f.OverTLS(); err != nil {
				return nil, idemcheck.Usagef("--fault %s: %v", spec, err)
			}
		}
		if f.Fault.Name == faults.CutReply.Name {
			if cutShareSet {
				return nil, idemcheck.Usagef("--fault %s and --cut-share both set the share of replies cut after commit: give one", spec)
			}
			cutGiven = true
		}
		if f.Fault.Link == faults.LinkDB && !started {
			return nil, idemcheck.Usagef("--fault %s acts on the target's database link, which idemcheck holds only for a target it starts: give --cmd instead of --url", spec)
		}
		out = append(out, f)
	}
	if !cutGiven && cutShare > 0 && !overTLS {
		out = append([]scenarios.SoakFault{{Fault: faults.CutReply, Share: cutShare}}, out...)
	}
	if err := scenarios.CheckSoakFaults(out, started, overTLS); err != nil {
		return nil, idemcheck.Usagef("--fault: %w", err)
	}
	return out, nil
}

// faultsLine says what a soak runs under, for its progress line.
func faultsLine(fs []scenarios.SoakFault) string {
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
