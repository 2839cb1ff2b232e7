package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// runSuite certifies every endpoint of a suite file, one after another,
// and writes one report for them all.
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var file, rawURL, checks string
	var rf runFlags
	var of openapiFlags
	var headers listFlag
	fs.StringVar(&file, "f", "", "the suite `file` (YAML) to run (this or --openapi)")
	of.register(fs)
	fs.StringVar(&rawURL, "url", "", "with --openapi: the target's base `URL`")
	fs.Var(&headers, "header", "with --openapi: a header 'Name: value' sent to every endpoint, such as credentials (repeatable; ${NAME} is read from the environment, and what it expands to is hidden in every report)")
	fs.StringVar(&checks, "checks", "", "comma-separated `checks` every endpoint runs, in place of the suite's own (default: the suite's, or all)")
	rf.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	stdout = rf.outputs.route(stdout, stderr)
	var only []string
	for _, c := range splitList(checks) {
		if _, err := scenarios.Lookup(c); err != nil {
			return 0, idemcheck.Usagef("--checks: %v", err)
		}
		only = append(only, c)
	}
	var s *suite.Suite
	var err error
	// A generated body must be accepted before its checks run.
	probeFirst := false
	switch {
	case file != "" && of.spec != "":
		return 0, idemcheck.Usagef("run: give -f SUITE.yaml or --openapi SPEC, not both")
	case of.spec != "":
		if s, err = openapiSuite(ctx, of, rawURL, headers, rf.allowRemote, stderr); err != nil {
			return 0, err
		}
		file, probeFirst = of.spec, true
	case file == "":
		return 0, idemcheck.Usagef("run: -f SUITE.yaml is required, or --openapi SPEC --url URL (see examples/suites/)")
	case rawURL != "" || len(headers) > 0:
		return 0, idemcheck.Usagef("run: --url and --header go with --openapi; a suite file names its target itself")
	default:
		if s, err = suite.Load(file); err != nil {
			return 0, idemcheck.Usagef("%v", err)
		}
	}
	if len(only) > 0 {
		for i := range s.Endpoints {
			s.Endpoints[i].Checks = only
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// The suite's options apply unless a flag says otherwise.
	o := s.Options
	if o.Seed != 0 && !set["seed"] {
		rf.seed = o.Seed
	}
	if o.Rate > 0 && !set["rate"] {
		rf.rate = o.Rate
	}
	if o.MaxDuration > 0 && !set["max-duration"] {
		rf.maxDuration = o.MaxDuration
	}
	if o.Timeout > 0 && !set["timeout"] {
		rf.timeout = o.Timeout
	}
	if err := rf.validate(); err != nil {
		return 0, err
	}

	dbs := map[string]*targets.Database{}
	defer func() {
		for _, d := range dbs {
			d.Close()
		}
	}()
	// A suite whose target is a command: idemcheck starts it once, on the
	// database of the first endpoint that names one (or a throwaway one),
	// and every endpoint is certified against it with the fault powers.
	// Every endpoint's URL and database is checked against the loopback
	// rule before any of them is sent anything.
	allowRemote := o.AllowRemote || rf.allowRemote
	for i, e := range s.Endpoints {
		if s.Command == "" && s.Image == "" {
			if err := certify.CheckURL(e.Endpoint.Base, fmt.Sprintf("%s: endpoints[%d].url", file, i), allowRemote); err != nil {
				return 0, err
			}
		}
		if err := targets.CheckDSN(e.DB, fmt.Sprintf("%s: endpoints[%d].db", file, i), allowRemote); err != nil {
			return 0, err
		}
	}
	var started *startedTarget
	if s.Log != "" && !set["target-log"] {
		rf.targetLog = s.Log
	}
	if rf.targetLog != "" && s.Command == "" && s.Image == "" {
		return 0, idemcheck.Usagef("run: --target-log goes with a suite whose target idemcheck starts (target.cmd or target.image)")
	}
	if s.Command != "" || s.Image != "" {
		dsn := ""
		for _, e := range s.Endpoints {
			if e.DB != "" {
				dsn = e.DB
				break
			}
		}
		env, err := targets.ParseEnv(s.Env)
		if err != nil {
			return 0, idemcheck.Usagef("%s: target: env: %v", file, err)
		}
		spec := targetSpec{command: s.Command, instances: s.Instances, image: s.Image, dbImage: s.DBImage, env: env, allowRemote: allowRemote, log: rf.targetLog}
		if started, err = startTarget(ctx, spec, dsn, stderr); err != nil {
			return 0, fmt.Errorf("%s: target: %w", file, err)
		}
		defer started.close()
	}
	var results []*certify.Result
	verdict := idemcheck.Pass
	for i, e := range s.Endpoints {
		cfg := certify.Config{
			Name: e.Name, Endpoint: e.Endpoint, Policy: e.Policy, Checks: e.Checks, Options: o.Scenarios,
			Redact: o.Redact, Secrets: s.Secrets, AllowRemote: o.AllowRemote, EffectSQL: e.EffectSQL, EffectArgs: e.EffectArgs,
			EffectHTTP: e.EffectHTTP, EffectCount: e.EffectCount,
		}
		rf.apply(&cfg)
		if started != nil {
			cfg.Endpoint.Base = &url.URL{Scheme: started.url.Scheme, Host: started.url.Host}
			cfg.Powers, cfg.Replicas = started.powers, started.replicas
			cfg.TargetLog, cfg.TargetLogOnExit = started.log.path, started.log.temp
			if e.EffectSQL != "" {
				cfg.DB, cfg.DBName = started.db.Pool, targets.RedactDSN(started.db.DSN)
			}
		} else if e.EffectSQL != "" {
			d, ok := dbs[e.DB]
			if !ok {
				open := targets.OpenDatabase
				if allowRemote {
					open = targets.OpenRemoteDatabase
				}
				if d, err = open(ctx, e.DB); err != nil {
					return 0, idemcheck.Unavailablef("%s: endpoint %q: %v", file, e.Name, err)
				}
				dbs[e.DB] = d
			}
			cfg.DB, cfg.DBName, cfg.DSN = d.Pool, targets.RedactDSN(e.DB), e.DB
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if probeFirst {
			if perr := probe(ctx, cfg); perr != nil {
				var ie *idemcheck.Error
				if errors.As(perr, &ie) {
					return 0, fmt.Errorf("%s: endpoint %q: %w", file, e.Name, perr)
				}
				// The target's answer is this endpoint's finding; the run
				// goes on with the others.
				res := rejectedResult(cfg, perr)
				render.WriteText(stdout, res.Report, render.Colour(rf.noColour, stdout, os.Getenv))
				verdict = idemcheck.WorstVerdict(verdict, res.Report.Verdict)
				results = append(results, res)
				continue
			}
		}
		res, err := certifyOne(ctx, cfg, rf.outputs, stdout, stderr)
		started.noteRun(ctx, res, err)
		if err != nil {
			return 0, fmt.Errorf("%s: endpoint %q: %w", file, e.Name, err)
		}
		verdict = idemcheck.WorstVerdict(verdict, res.Report.Verdict)
		results = append(results, res)
	}
	if err := writeOutputs(results, rf.outputs, true); err != nil {
		return 0, err
	}
	return exitFor(rf.outputs, verdict), nil
}

// startedTarget is a target that idemcheck started: a command or a
// container image, with the database it was given and the file its output
// goes to.
type startedTarget struct {
	url      *url.URL
	replicas int
	powers   targets.Powers
	db       *targets.Database
	log      targetLog
	stop     func()
	stderr   io.Writer
}

// targetLog is the file a started target's output goes to: --target-log,
// or a temporary file kept only when the target died (or the run failed).
type targetLog struct {
	path string
	temp bool
	file *os.File
	keep bool
}

// noteRun records, after a certification against the target, whether its
// temporary log is worth keeping: the target exited on its own, or the run
// failed (an interrupted run leaves nothing behind). It is safe on nil.
func (s *startedTarget) noteRun(ctx context.Context, res *certify.Result, err error) {
	if s == nil {
		return
	}
	if err != nil && ctx.Err() == nil || res != nil && certify.Exited(res.History) {
		s.log.keep = true
	}
}

// close stops the target, then closes its log; a temporary log is removed
// unless it is worth keeping, and then its path is said on stderr.
func (s *startedTarget) close() {
	s.stop()
	if s.log.file == nil {
		return
	}
	_ = s.log.file.Close()
	switch {
	case s.log.temp && !s.log.keep:
		_ = os.Remove(s.log.path)
	case s.log.temp:
		fmt.Fprintf(s.stderr, "idemcheck: the target's output is in %s\n", s.log.path)
	}
}

// targetSpec is a target for idemcheck to start: a command run as
// instances behind a balancer, or a container image.
type targetSpec struct {
	command   string
	instances int
	image     string
	dbImage   string
	env       map[string]string
	ready     string
	// allowRemote lets the target's database be off loopback.
	allowRemote bool
	// log is --target-log: the file for the target's output; empty means
	// a temporary one.
	log string
}

// openTargetLog creates the file a target's output goes to.
func openTargetLog(path string) (targetLog, error) {
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return targetLog{}, idemcheck.Usagef("--target-log: %v", err)
		}
		return targetLog{path: path, file: f}, nil
	}
	f, err := os.CreateTemp("", "idemcheck-target-*.log")
	if err != nil {
		return targetLog{}, idemcheck.Unavailablef("a temporary file for the target's output: %v", err)
	}
	return targetLog{path: f.Name(), temp: true, file: f}, nil
}

// startTarget starts spec on the database dsn (a throwaway one when
// empty). Its close says, rather than swallows, a container it could not
// remove: that one is the user's to remove until the next run's sweep.
func startTarget(ctx context.Context, spec targetSpec, dsn string, stderr io.Writer) (*startedTarget, error) {
	log, err := openTargetLog(spec.log)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*startedTarget, error) {
		_ = log.file.Close()
		if log.temp {
			_ = os.Remove(log.path)
		}
		return nil, err
	}
	if spec.image != "" {
		ct, err := targets.StartContainerTarget(ctx, targets.ContainerOptions{
			Image: spec.image, DBImage: spec.dbImage, DSN: dsn, Env: spec.env, Ready: spec.ready, Log: stderr, Output: log.file,
			AllowRemote: spec.allowRemote,
		})
		if err != nil {
			return fail(err)
		}
		return &startedTarget{url: ct.URL, replicas: 1, powers: ct.Powers(), db: ct.DB, log: log, stderr: stderr, stop: func() {
			if err := ct.Close(); err != nil {
				fmt.Fprintf(stderr, "idemcheck: %v\n", err)
			}
		}}, nil
	}
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: spec.command, Instances: spec.instances, DSN: dsn, AllowRemote: spec.allowRemote, Logs: log.file})
	if err != nil {
		return fail(err)
	}
	return &startedTarget{url: pt.URL, replicas: pt.Replicas(), powers: pt.Powers(), db: pt.DB, log: log, stderr: stderr, stop: pt.Close}, nil
}
