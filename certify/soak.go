package certify

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"math"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/estimate"
	"github.com/idemcheck/idemcheck/internal/outfile"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/targets"
)

// Limits of a soak's load.
const (
	// MaxSoakRate bounds a soak's Rate: far past what one machine's
	// loopback takes.
	MaxSoakRate = 100000
	// MaxSoakWorkers bounds a soak's Workers.
	MaxSoakWorkers = 4096
	// DefaultSoakWorkers is a soak's Workers when 0.
	DefaultSoakWorkers = 64
)

// SoakConfig is one soak: the settings a certification shares (Settings,
// Rate being the intents started per second), the load's length and
// faults, and where its history goes.
type SoakConfig struct {
	Settings
	// Duration is how long the load is sent.
	Duration time.Duration
	// Intents, when positive, ends the soak after that many intents, even
	// if Duration has not passed (with Shard, the whole soak's; the shard
	// sends its part).
	Intents int64
	// Faults are the faults the soak runs under (runner.SoakFault);
	// those on the database link need Powers. None: a clean soak.
	Faults []runner.SoakFault
	// Seed chooses which intents meet which fault.
	Seed int64
	// Shard, when its Count is above 1, makes this soak one part of a soak
	// spread over several processes: Rate and Intents are the whole soak's,
	// and this one sends its part of each (idemcheck.Shard.Part).
	Shard idemcheck.Shard
	// Workers bounds the concurrent requests (DefaultSoakWorkers when 0).
	Workers int
	// CountDuring counts effects while the load runs, in batches as
	// intents complete, instead of after it (runner.Soak.CountDuring).
	CountDuring bool
	// Settle is the longest to wait, after the load, for effects that land
	// after the reply (runner.Soak.Settle); it needs EffectSQL.
	Settle time.Duration
	// EffectBatchSQL is EffectSQL's batch form on PostgreSQL, run once for
	// many intents: its $1 is the array of their EffectArgs values (one
	// argument), and it returns each value as text and its count. It is
	// checked against EffectSQL as it counts.
	EffectBatchSQL string
	// Value is what one duplicate costs, for the report's estimate.
	Value float64
	// HistoryFile, when set, is the file the history is written to: it
	// streams to a temporary file beside it, renamed into place only when
	// the soak has a report, so a failed soak leaves no file.
	HistoryFile string
	// History, when set, receives the history as it happens (a pipe, the
	// command's standard output), redacted as the file is.
	History io.Writer
	// KeepHistory returns the history in the SoakResult as well, redacted
	// as the file is. A soak keeps nothing in memory otherwise: this is for
	// short soaks (tests).
	KeepHistory bool
	// VegetaResults, when set, is the file vegeta's result of every first
	// attempt is written to, in vegeta's own encoding, atomically as
	// HistoryFile is (runner.Soak.VegetaResults).
	VegetaResults string
	// Progress, when set, is given the running count every ProgressEvery
	// (default one second) while the load runs, and once at its end.
	Progress      func(idemcheck.SoakProgress)
	ProgressEvery time.Duration
	// OnLoad, when set, is called once every check has passed and the
	// pre-flight was answered, right before the load starts: a front end
	// announces the soak there, and nothing it printed before then
	// precedes an error.
	OnLoad func()
}

// SoakResult is a finished soak.
type SoakResult struct {
	// Report is the soak's verdict, counts and cost estimate; its Tool is
	// left for the caller to stamp.
	Report idemcheck.SoakReport
	// History is the soak's history, with KeepHistory; else nil.
	History *idemcheck.History
}

// Soak runs one soak: it checks the configuration before any traffic (the
// limits, the faults against the target's powers, the loopback rule, the
// effect queries against the database), sends one pre-flight request, then
// the load under its faults, counts every intent's effects, tallies the
// history (assert.SoakTally) and returns the report with its cost
// estimate. Errors are *idemcheck.Error as Run's are: 2 for a
// configuration the soak could not start with (a *runner.RefusedError
// when the target refused the pre-flight), 3 for a target or harness that
// could not run, such as a target that answered none of the intents.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	red := cfg.redactor()
	res, err := soak(ctx, &cfg, red)
	// An error may quote what the soak was given or met: a secret.
	return res, red.Error(err)
}

// soakRun is a soak being run: the runner's value, its outputs and its
// tally.
type soakRun struct {
	cfg     *SoakConfig
	red     *idemcheck.Redactor
	sk      *runner.Soak
	tally   *assert.SoakTally
	target  idemcheck.Target
	histOut *outfile.Output
	histW   []*idemcheck.RedactWriter
	// stream is the History writer's redactor, flushed even when the soak
	// fails, as a stream is read as it comes.
	stream *idemcheck.RedactWriter
	kept   *bytes.Buffer
	vegOut *outfile.Output
	vegW   *bufio.Writer
}

// soak is Soak with its redactor.
func soak(ctx context.Context, cfg *SoakConfig, red *idemcheck.Redactor) (*SoakResult, error) {
	rate, intents, err := cfg.load()
	if err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &soakRun{cfg: cfg, red: red, tally: &assert.SoakTally{Policy: cfg.Policy}}
	if err := r.prepare(ctx, rate, intents); err != nil {
		return nil, err
	}
	// One request before the load, as a certification's pre-flight: a
	// configuration the target refuses (a 4xx, a TLS failure) is a usage
	// error before anything else is sent or written.
	if err := r.sk.Preflight(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, idemcheck.Unavailablef("soak: %v", err)
		}
		// A *runner.RefusedError, or a TLS setting's usage error.
		return nil, err
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	defer r.abort()
	if cfg.OnLoad != nil {
		cfg.OnLoad()
	}
	started := time.Now()
	load, err := r.sk.Run(ctx)
	if err != nil {
		// A history or results file that could not be written is the
		// path's fault, said with it.
		for _, f := range []struct {
			field idemcheck.Field
			o     *outfile.Output
		}{{"HistoryFile", r.histOut}, {"VegetaResults", r.vegOut}} {
			if f.o != nil && f.o.Err() != nil {
				return nil, idemcheck.Fieldf(idemcheck.ExitUsage, f.field, "%s: %v", f.field, f.o.Err())
			}
		}
		var ie *idemcheck.Error
		if errors.As(err, &ie) && ie.Code == idemcheck.ExitUsage && ctx.Err() == nil {
			return nil, err
		}
		return nil, idemcheck.Unavailablef("soak: %w", err)
	}
	res := r.tally.Result(*load)
	if res.Intents > 0 && res.Unresolved == res.Intents {
		// A soak in which nothing was answered has proved nothing: no
		// verdict and no files, as when the target is down from the start.
		return nil, idemcheck.Unavailablef("soak: target %s answered none of %d intents, even on retry: is it still running?", cfg.Endpoint.Base.Host, res.Intents)
	}
	out := &SoakResult{}
	if out.History, err = r.commit(); err != nil {
		return nil, err
	}
	out.Report = idemcheck.SoakReport{Version: idemcheck.ReportVersion, Verdict: assert.SoakVerdict(res),
		StartedAt: started.UTC().Truncate(time.Millisecond), Seed: cfg.Seed, Target: r.target, Soak: &res, Reason: assert.SoakReasonIn(res, cfg.Words)}
	if cfg.Shard.Count > 1 {
		shard := cfg.Shard
		out.Report.Shard = &shard
	}
	out.Report.Estimate, out.Report.EstimateAssumes = estimate.Soak(res, cfg.Value)
	return out, nil
}

// load checks the load's size and returns this soak's part of it: the
// intents per second and the intents (0: no limit) it sends.
func (cfg *SoakConfig) load() (int, int64, error) {
	usage := func(f idemcheck.Field, format string, args ...any) (int, int64, error) {
		return 0, 0, idemcheck.Fieldf(idemcheck.ExitUsage, f, format, args...)
	}
	switch {
	case math.IsNaN(cfg.Rate) || cfg.Rate < 1 || cfg.Rate > MaxSoakRate:
		return usage("Rate", "%s %v is out of range: use 1 to %d", idemcheck.Field("Rate"), cfg.Rate, MaxSoakRate)
	case cfg.Rate != math.Trunc(cfg.Rate):
		return usage("Rate", "%s %v is not a whole number of intents per second: use 1 to %d", idemcheck.Field("Rate"), cfg.Rate, MaxSoakRate)
	case cfg.Duration <= 0:
		return usage("Duration", "%s %v must be positive, such as 30s", idemcheck.Field("Duration"), cfg.Duration)
	case cfg.Intents < 0:
		return usage("Intents", "%s %d is out of range: use 0 (no limit) or more", idemcheck.Field("Intents"), cfg.Intents)
	case cfg.Shard.Count < 0 || cfg.Shard.Count > 0 && (cfg.Shard.Index < 0 || cfg.Shard.Index >= cfg.Shard.Count):
		return usage("Shard", "%s %s: the index must be 0 to %d", idemcheck.Field("Shard"), cfg.Shard, max(cfg.Shard.Count-1, 0))
	}
	shard := cfg.Shard
	rate := int(shard.Part(int64(cfg.Rate)))
	if rate < 1 {
		return usage("Rate", "%s %v over %d shards leaves shard %d nothing to send: use %s %d or more",
			idemcheck.Field("Rate"), cfg.Rate, shard.Count, shard.Index, idemcheck.Field("Rate"), shard.Count)
	}
	intents := cfg.Intents
	if intents > 0 {
		if intents = shard.Part(intents); intents < 1 {
			return usage("Intents", "%s %d over %d shards leaves shard %d none: use %s %d or more",
				idemcheck.Field("Intents"), cfg.Intents, shard.Count, shard.Index, idemcheck.Field("Intents"), shard.Count)
		}
	}
	return rate, intents, nil
}

// check checks the rest of the configuration that needs nothing sent.
func (cfg *SoakConfig) check() error {
	usage := func(f idemcheck.Field, format string, args ...any) error {
		return idemcheck.Fieldf(idemcheck.ExitUsage, f, format, args...)
	}
	switch {
	case cfg.Endpoint.Base == nil:
		return usage("Endpoint.Base", "%s is not set: give an absolute http:// or https:// URL, such as http://127.0.0.1:8080", idemcheck.Field("Endpoint.Base"))
	case cfg.Workers < 0 || cfg.Workers > MaxSoakWorkers:
		return usage("Workers", "%s %d is out of range: use 1 to %d", idemcheck.Field("Workers"), cfg.Workers, MaxSoakWorkers)
	case cfg.ProgressEvery < 0:
		return usage("ProgressEvery", "%s %v must be positive, such as 5s", idemcheck.Field("ProgressEvery"), cfg.ProgressEvery)
	case cfg.Settle < 0:
		return usage("Settle", "%s %v must not be negative: give how long effects may take to land, such as 30s", idemcheck.Field("Settle"), cfg.Settle)
	case cfg.Settle > 0 && cfg.EffectSQL == "":
		return usage("Settle", "%s waits for effects to settle, and needs %s to count them", idemcheck.Field("Settle"), idemcheck.Field("EffectSQL"))
	case cfg.EffectBatchSQL != "" && cfg.EffectSQL == "":
		return usage("EffectBatchSQL", "%s needs %s: the query for one intent, which checks the batch form and names each count", idemcheck.Field("EffectBatchSQL"), idemcheck.Field("EffectSQL"))
	case cfg.HistoryFile != "" && cfg.History != nil:
		return usage("HistoryFile", "give %s or %s, not both", idemcheck.Field("HistoryFile"), idemcheck.Field("History"))
	}
	if err := CheckBase(cfg.Endpoint.Base, "Endpoint.Base", ""); err != nil {
		return err
	}
	overTLS := cfg.Endpoint.Base.Scheme == "https"
	if err := runner.CheckSoakFaults(cfg.Faults, cfg.Powers != nil, overTLS); err != nil {
		return usage("Faults", "%s: %w", idemcheck.Field("Faults"), err)
	}
	if nl, ok := cfg.Powers.(targets.NoDBLink); ok && nl.NoDBLink() != "" {
		why := nl.NoDBLink()
		for _, f := range cfg.Faults {
			if f.Fault.Link == faults.LinkDB {
				return usage("Faults", "%s %s acts on the target's database link, and %s: leave it out", idemcheck.Field("Faults"), f.Fault.Name, why)
			}
		}
	}
	return targets.CheckDSN(cfg.DSN, "DSN", cfg.AllowRemote)
}

// prepare reaches the target, checks the effect queries and makes the
// runner's value: everything the soak needs but its outputs.
func (r *soakRun) prepare(ctx context.Context, rate int, intents int64) error {
	cfg := r.cfg
	upstream, err := ResolveTargetTLS(ctx, cfg.Endpoint.Base, cfg.AllowRemote, cfg.TLS)
	if err != nil {
		return err
	}
	effects, err := cfg.sqlEffects(ctx)
	if err != nil {
		return err
	}
	if err := cfg.batchEffects(ctx, effects); err != nil {
		return err
	}
	base := cfg.Endpoint.Base
	r.target = idemcheck.Target{URL: r.red.String(base.String()), Method: cfg.Endpoint.Method,
		Path:     r.red.String(cfg.Endpoint.Path.Fill(idemcheck.Intent{ID: "{{intent}}", Key: "{{key}}"})),
		Insecure: base.Scheme == "https" && cfg.TLS != nil && cfg.TLS.InsecureSkipVerify}
	if effects != nil {
		r.target.Database = cfg.DBName
	}
	r.sk = &runner.Soak{Endpoint: cfg.Endpoint, Policy: cfg.Policy, Effects: effects, Rate: rate, Duration: cfg.Duration, Intents: intents,
		Faults: cfg.Faults, Powers: cfg.Powers, Seed: cfg.Seed, Shard: cfg.Shard, Workers: cmp.Or(cfg.Workers, DefaultSoakWorkers),
		Timeout: cfg.Timeout, CountDuring: cfg.CountDuring, Settle: cfg.Settle,
		Redactor: r.red, Redact: cfg.Redact, Secrets: cfg.Secrets, RedactFields: cfg.RedactFields, RedactQuery: cfg.RedactQuery,
		Upstream: upstream, AllowRemote: cfg.AllowRemote, TLS: cfg.TLS, MaxBody: cfg.MaxBody,
		Header: idemcheck.Run{Seed: cfg.Seed, Target: r.target, Policy: cfg.Policy, EffectQuery: cfg.EffectSQL,
			Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSoak}}},
		Counter: r.tally, Progress: cfg.Progress, ProgressEvery: cfg.ProgressEvery,
	}
	if r.sk.Progress != nil && r.sk.ProgressEvery == 0 {
		r.sk.ProgressEvery = time.Second
	}
	return nil
}

// batchEffects checks EffectBatchSQL and puts it on effects.
func (cfg *SoakConfig) batchEffects(ctx context.Context, effects *runner.Effects) error {
	if cfg.EffectBatchSQL == "" || effects == nil {
		return nil
	}
	if effects.DB != nil {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectBatchSQL", "%s is PostgreSQL's (= ANY($1)); on %s the soak counts a batch with %s, prepared once, in one transaction: leave %s out",
			idemcheck.Field("EffectBatchSQL"), effects.DB.Engine(), idemcheck.Field("EffectSQL"), idemcheck.Field("EffectBatchSQL"))
	}
	effects.BatchSQL = cfg.EffectBatchSQL
	return checkEffectBatchSQL(ctx, effects)
}

// open opens the soak's outputs: the history's file, stream and copy, and
// vegeta's results.
func (r *soakRun) open() error {
	cfg := r.cfg
	var ws []io.Writer
	if cfg.HistoryFile != "" {
		o, err := outfile.Create(cfg.HistoryFile)
		if err != nil {
			return idemcheck.Fieldf(idemcheck.ExitUsage, "HistoryFile", "%s: %v", idemcheck.Field("HistoryFile"), err)
		}
		// Every copy of the history passes through the redactor.
		r.histOut = o
		rw := r.red.Writer(o)
		r.histW = append(r.histW, rw)
		ws = append(ws, rw)
	}
	if cfg.History != nil {
		r.stream = r.red.Writer(cfg.History)
		r.histW = append(r.histW, r.stream)
		ws = append(ws, r.stream)
	}
	if cfg.KeepHistory {
		// Redacted as the file is: what is returned is what it holds.
		r.kept = &bytes.Buffer{}
		rw := r.red.Writer(r.kept)
		r.histW = append(r.histW, rw)
		ws = append(ws, rw)
	}
	if len(ws) > 0 {
		r.sk.History = history.NewEncoder(io.MultiWriter(ws...))
	}
	if cfg.VegetaResults != "" {
		o, err := outfile.Create(cfg.VegetaResults)
		if err != nil {
			return idemcheck.Fieldf(idemcheck.ExitUsage, "VegetaResults", "%s: %v", idemcheck.Field("VegetaResults"), err)
		}
		r.vegOut, r.vegW = o, bufio.NewWriter(o)
		r.sk.VegetaResults = r.vegW
	}
	return nil
}

// abort removes the files of a soak that has no report; what the stream
// was given is flushed.
func (r *soakRun) abort() {
	if r.stream != nil {
		_ = r.stream.Flush()
	}
	for _, o := range []*outfile.Output{r.histOut, r.vegOut} {
		if o != nil {
			o.Abort()
		}
	}
}

// commit flushes the outputs and puts the files in place, and reads the
// kept history back.
func (r *soakRun) commit() (*idemcheck.History, error) {
	for _, w := range r.histW {
		if err := w.Flush(); err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "HistoryFile", "%s: %v", idemcheck.Field("HistoryFile"), err)
		}
	}
	if r.histOut != nil {
		if err := r.histOut.Commit(); err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "HistoryFile", "%s: %v", idemcheck.Field("HistoryFile"), err)
		}
	}
	if r.vegOut != nil {
		err := r.vegW.Flush()
		if err == nil {
			err = r.vegOut.Commit()
		}
		if err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "VegetaResults", "%s: %v", idemcheck.Field("VegetaResults"), err)
		}
	}
	if r.kept == nil {
		return nil, nil
	}
	hs, err := history.ReadAll(r.kept, "the soak's history")
	if err != nil || len(hs) != 1 {
		return nil, idemcheck.Unavailablef("soak: reading its history back: %v (%d histories)", err, len(hs))
	}
	return hs[0], nil
}
