package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/certify"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// runSuite certifies every endpoint of a suite file, one after another,
// and writes one report for them all.
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var file string
	var rf runFlags
	fs.StringVar(&file, "f", "", "the suite `file` (YAML) to run (required)")
	rf.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if file == "" {
		return 0, idemcheck.Usagef("run: -f SUITE.yaml is required (see examples/suites/)")
	}
	s, err := suite.Load(file)
	if err != nil {
		return 0, idemcheck.Usagef("%v", err)
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
	var started *startedTarget
	if s.Command != "" || s.Image != "" {
		dsn := ""
		for _, e := range s.Endpoints {
			if e.DB != "" {
				dsn = e.DB
				break
			}
		}
		if started, err = startSuiteTarget(ctx, s, dsn, stderr); err != nil {
			return 0, fmt.Errorf("%s: target: %w", file, err)
		}
		defer started.close()
	}
	var results []*certify.Result
	failed := false
	for i, e := range s.Endpoints {
		cfg := certify.Config{
			Name: e.Name, Endpoint: e.Endpoint, Policy: e.Policy, Checks: e.Checks, Options: o.Scenarios,
			Redact: o.Redact, AllowRemote: o.AllowRemote, EffectSQL: e.EffectSQL, EffectArgs: e.EffectArgs,
		}
		rf.apply(&cfg)
		if started != nil {
			cfg.Endpoint.Base = &url.URL{Scheme: started.url.Scheme, Host: started.url.Host}
			cfg.Powers, cfg.Replicas = started.powers, started.replicas
			if e.EffectSQL != "" {
				cfg.DB, cfg.DBName = started.db.Pool, targets.RedactDSN(started.db.DSN)
			}
		} else if e.EffectSQL != "" {
			d, ok := dbs[e.DB]
			if !ok {
				if d, err = targets.OpenDatabase(ctx, e.DB); err != nil {
					return 0, idemcheck.Unavailablef("%s: endpoint %q: %v", file, e.Name, err)
				}
				dbs[e.DB] = d
			}
			cfg.DB, cfg.DBName = d.Pool, targets.RedactDSN(e.DB)
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		res, err := certifyOne(ctx, cfg, rf.outputs, stdout, stderr)
		if err != nil {
			return 0, fmt.Errorf("%s: endpoint %q: %w", file, e.Name, err)
		}
		failed = failed || res.Report.Failed()
		results = append(results, res)
	}
	if err := writeOutputs(results, rf.outputs, true); err != nil {
		return 0, err
	}
	return exitFor(failed), nil
}

// startedTarget is a suite's target that idemcheck started: a command or a
// container image.
type startedTarget struct {
	url      *url.URL
	replicas int
	powers   scenarios.Powers
	db       *targets.Database
	close    func()
}

func startSuiteTarget(ctx context.Context, s *suite.Suite, dsn string, stderr io.Writer) (*startedTarget, error) {
	if s.Image != "" {
		env, err := certify.ParseEnv(s.Env)
		if err != nil {
			return nil, idemcheck.Usagef("env: %v", err)
		}
		ct, err := certify.StartContainerTarget(ctx, certify.ContainerOptions{Image: s.Image, DBImage: s.DBImage, DSN: dsn, Env: env, Log: stderr})
		if err != nil {
			return nil, err
		}
		return &startedTarget{url: ct.URL, powers: ct.Powers(), db: ct.DB, close: func() { _ = ct.Close() }}, nil
	}
	pt, err := certify.StartProcessTarget(ctx, certify.ProcessOptions{Command: s.Command, Instances: s.Instances, DSN: dsn})
	if err != nil {
		return nil, err
	}
	return &startedTarget{url: pt.URL, replicas: pt.Replicas(), powers: pt.Powers(), db: pt.DB, close: pt.Close}, nil
}
