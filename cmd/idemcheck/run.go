package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/targets"
)

// runSuite certifies every endpoint of a suite file, one after another,
// and writes one report for them all.
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var file, rawURL, checks, skipChecks string
	var rf runFlags
	var of openapiFlags
	var headers listFlag
	fs.StringVar(&file, "f", "", "the suite `file` (YAML) to run (this or --openapi)")
	of.register(fs)
	fs.StringVar(&rawURL, "url", "", "with --openapi: the target's base `URL`")
	fs.Var(&headers, "header", "with --openapi: a header 'Name: value' sent to every endpoint, such as credentials (repeatable; ${NAME} is read from the environment, and what it expands to is hidden in every report)")
	fs.StringVar(&checks, "checks", "", "comma-separated `checks` every endpoint runs, in place of the suite's own (default: the suite's, or all)")
	fs.StringVar(&skipChecks, "skip-checks", "", "comma-separated `checks` every endpoint leaves out")
	rf.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	stdout = rf.outputs.route(stdout, stderr)
	rf.outputs.red = redactorOf(ctx)
	redactorOf(ctx).LearnURL(rawURL)
	only := splitList(checks)
	if err := config.CheckChecks(only); err != nil {
		return 0, err
	}
	if given(fs)["checks"] && len(only) == 0 {
		return 0, idemcheck.Usagef("--checks names no check: name the checks to run, such as concurrent-burst,lost-reply (leave it out to run the suite's)")
	}
	skip := splitList(skipChecks)
	s, file, err := loadSuite(ctx, file, of, rawURL, headers, rf.allowRemote, stderr)
	if err != nil {
		return 0, err
	}
	redactorOf(ctx).AddSecret(s.Secrets...)
	if err := rf.validate(); err != nil {
		return 0, err
	}
	set := given(fs)
	if of.spec != "" {
		// The generated suite's URL and headers are the flags'.
		set["url"], set["header"] = true, len(headers) > 0
	}
	built, err := buildSuite(ctx, s, only, skip, rf, set)
	if err != nil {
		return 0, err
	}
	var started *startedTarget
	if l := built[0].Launch; l != nil {
		// A suite whose target is a command or an image: idemcheck starts
		// it once, on the database of the first endpoint that names one
		// (or a throwaway one), and every endpoint is certified against it
		// with the fault powers.
		for _, e := range s.Endpoints {
			if e.DB != "" {
				l.DSN = e.DB
				break
			}
		}
		if started, err = startTarget(ctx, l, stderr); err != nil {
			return 0, fmt.Errorf("%s: target: %w", file, err)
		}
		defer started.close()
	}
	run := suiteRun{s: s, file: file, openapi: of.spec != "", built: built, started: started,
		dbs: map[string]*targets.Database{}, rf: rf, stdout: stdout, stderr: stderr}
	defer run.closeDBs()
	results, verdict, err := run.certify(ctx)
	if err != nil {
		return 0, err
	}
	if err := writeOutputs(results, rf.outputs, true, nil); err != nil {
		return 0, err
	}
	reports := make([]idemcheck.Report, len(results))
	for i, r := range results {
		reports[i] = r.Report
	}
	render.WriteSuiteVerdict(stdout, file, reports, verdict, render.Colour(rf.noColour, stdout, os.Getenv))
	return exitFor(rf.outputs, verdict), nil
}

// loadSuite reads the suite file, or makes the suite from an OpenAPI
// description (--openapi), and returns it with the file it came from.
func loadSuite(ctx context.Context, file string, of openapiFlags, rawURL string, headers listFlag, allowRemote bool, stderr io.Writer) (*suite.Suite, string, error) {
	switch {
	case file != "" && of.spec != "":
		return nil, "", idemcheck.Usagef("run: give -f SUITE.yaml or --openapi SPEC, not both")
	case of.spec != "":
		s, err := openapiSuite(ctx, of, rawURL, headers, allowRemote, stderr)
		return s, of.spec, err
	case file == "":
		return nil, "", idemcheck.Usagef("run: -f SUITE.yaml is required, or --openapi SPEC --url URL (see examples/suites/)")
	case rawURL != "" || len(headers) > 0:
		return nil, "", idemcheck.Usagef("run: --url and --header go with --openapi; a suite file names its target itself")
	}
	s, err := suite.Load(file)
	if err != nil {
		return nil, "", idemcheck.Usagef("%v", err)
	}
	return s, file, nil
}

// buildSuite builds every endpoint of s, its URL and database checked
// against the loopback rule, before anything is started or sent. The
// suite's options apply unless a flag (set) says otherwise; only and skip
// are --checks and --skip-checks.
func buildSuite(ctx context.Context, s *suite.Suite, only, skip []string, rf runFlags, set map[string]bool) ([]*config.Built, error) {
	built := make([]*config.Built, len(s.Endpoints))
	for i, e := range s.Endpoints {
		spec := e.Spec
		if len(only) > 0 {
			spec.Checks = only
		}
		spec.SkipChecks = append(spec.SkipChecks, skip...)
		if set["rate"] || spec.Rate == 0 {
			spec.Rate = rf.rate
		}
		if set["max-duration"] || spec.MaxDuration == 0 {
			spec.MaxDuration = rf.maxDuration
		}
		if set["timeout"] || spec.Timeout == 0 {
			spec.Timeout = rf.timeout
		}
		if set["target-log"] {
			spec.TargetLog = rf.targetLog
		}
		spec.MaxBody, spec.Protocol, spec.Timed, spec.TLS, spec.Preflight = rf.maxBody, rf.protocol, rf.timedBursts, rf.tlsFlags.config, true
		spec.AllowRemote = spec.AllowRemote || rf.allowRemote
		spec.Secrets, spec.Redactor = s.Secrets, redactorOf(ctx)
		var err error
		if built[i], err = config.Build(spec); err != nil {
			return nil, suiteError(s, i, err, set)
		}
	}
	return built, nil
}

// suiteRun is a suite's certification once every endpoint was built: the
// target idemcheck started for them, if any, and the effect databases
// they opened, one per DSN.
type suiteRun struct {
	s       *suite.Suite
	file    string
	openapi bool // the suite was made from an OpenAPI description
	built   []*config.Built
	started *startedTarget
	dbs     map[string]*targets.Database
	rf      runFlags
	stdout  io.Writer
	stderr  io.Writer
}

func (r *suiteRun) closeDBs() {
	for _, d := range r.dbs {
		d.Close()
	}
}

// certify certifies every endpoint, one after another, and returns their
// results and the worst verdict. An OpenAPI suite's endpoint whose
// generated body the target rejects is that endpoint's finding; the run
// goes on with the others.
func (r *suiteRun) certify(ctx context.Context) ([]*certify.Result, idemcheck.Status, error) {
	var results []*certify.Result
	verdict := idemcheck.Pass
	for i, e := range r.s.Endpoints {
		b := r.built[i]
		if r.started != nil {
			r.started.attach(b)
		} else if b.Config.EffectSQL != "" {
			d, ok := r.dbs[b.Config.DSN]
			if !ok {
				var err error
				if d, err = config.OpenDB(ctx, b.Config.DSN, b.Config.AllowRemote); err != nil {
					return nil, "", fmt.Errorf("%s: endpoint %q: %w", r.file, e.Name, err)
				}
				r.dbs[b.Config.DSN] = d
			}
			config.UseDatabase(&b.Config, d)
		}
		cfg := b.Config
		if i > 0 {
			fmt.Fprintln(r.stdout)
		}
		// A generated body must be accepted before its checks run.
		if r.openapi {
			if perr := probe(ctx, cfg); perr != nil {
				var ie *idemcheck.Error
				if errors.As(perr, &ie) {
					return nil, "", suiteErr(r.s, r.file, i, !r.openapi, perr)
				}
				// The target's answer is this endpoint's finding; the run
				// goes on with the others.
				res := rejectedResult(cfg, perr)
				render.WriteText(r.stdout, res.Report, render.Colour(r.rf.noColour, r.stdout, os.Getenv))
				verdict = idemcheck.WorstVerdict(verdict, res.Report.Verdict)
				results = append(results, res)
				continue
			}
		}
		res, err := certifyOne(ctx, cfg, r.rf.outputs, r.stdout, r.stderr)
		r.started.noteRun(ctx, res, err)
		if err != nil {
			return nil, "", suiteErr(r.s, r.file, i, !r.openapi, err)
		}
		verdict = idemcheck.WorstVerdict(verdict, res.Report.Verdict)
		results = append(results, res)
	}
	return results, verdict, nil
}

// runFlagFields are the fields of a suite's run that run's own flags may
// set, by flag.
var runFlagFields = map[idemcheck.Field]string{
	"URL": "url", "Endpoint.Base": "url", "Headers": "header", "Checks": "checks", "SkipChecks": "skip-checks", "Rate": "rate", "Timeout": "timeout",
	"MaxDuration": "max-duration", "TargetLog": "target-log", "MaxBody": "max-body", "Protocol": "protocol",
}

// suiteError says an error of config.Build for endpoint i of a suite: when
// a flag of run set the field, naming that flag (and the suite's keys for
// the other fields), else in the suite's words (its file, line and key).
func suiteError(s *suite.Suite, i int, err error, set map[string]bool) error {
	var fe *idemcheck.FieldError
	if errors.As(err, &fe) {
		if f, ok := runFlagFields[fe.Field.List()]; ok && set[f] {
			words := maps.Clone(suite.Words)
			for field, flag := range runFlagFields {
				if set[flag] {
					words[field] = flagWords[field]
				}
			}
			words["AllowRemote"] = flagWords["AllowRemote"]
			return idemcheck.Usagef("%s", fe.Text(words))
		}
	}
	return idemcheck.Usagef("%v", s.Explain(i, err))
}

// startedTarget is a target that idemcheck started (config.Launch), with
// the file its output goes to.
type startedTarget struct {
	*config.Started
	log    targetLog
	stderr io.Writer
}

// attach points b at the target, and names its log.
func (s *startedTarget) attach(b *config.Built) {
	b.Attach(s.Started)
	b.Config.TargetLog, b.Config.TargetLogOnExit = s.log.path, s.log.temp
}

// targetLog is the file a started target's output goes to: --target-log,
// or a temporary file kept only when the target died (or the run failed).
type targetLog struct {
	path string
	temp bool
	file *os.File
	keep bool
	// dir is the run's folder a temporary log is in (targets.NewRunDir).
	dir string
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
// unless it is worth keeping, and then its path is said on stderr. It says,
// rather than swallows, a container it could not remove: that one is the
// user's to remove until the next run's sweep.
func (s *startedTarget) close() {
	if err := s.Started.Close(); err != nil {
		fmt.Fprintf(s.stderr, "idemcheck: %v\n", err)
	}
	if s.log.file == nil {
		return
	}
	_ = s.log.file.Close()
	switch {
	case s.log.temp && !s.log.keep:
		_ = os.RemoveAll(s.log.dir)
	case s.log.temp:
		_ = targets.KeepRunDir(s.log.dir)
		fmt.Fprintf(s.stderr, "idemcheck: the target's output is in %s\n", s.log.path)
	}
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
	// In a folder of this run's own, removed when it ends, and swept by
	// the next run if it is killed: the output can hold secrets.
	dir, err := targets.NewRunDir()
	if err != nil {
		return targetLog{}, idemcheck.Unavailablef("a temporary folder for the target's output: %v", err)
	}
	f, err := os.CreateTemp(dir, "idemcheck-target-*.log")
	if err != nil {
		_ = os.RemoveAll(dir)
		return targetLog{}, idemcheck.Unavailablef("a temporary file for the target's output: %v", err)
	}
	return targetLog{path: f.Name(), temp: true, file: f, dir: dir}, nil
}

// startTarget starts l, its output going to its log (l.Log, else a
// temporary file).
func startTarget(ctx context.Context, l *config.Launch, stderr io.Writer) (*startedTarget, error) {
	log, err := openTargetLog(l.Log)
	if err != nil {
		return nil, err
	}
	st, err := l.Start(ctx, log.file, stderr)
	if err != nil {
		_ = log.file.Close()
		if log.temp {
			_ = os.RemoveAll(log.dir)
		}
		return nil, err
	}
	return &startedTarget{Started: st, log: log, stderr: stderr}, nil
}

// suiteErr says an error of certifying endpoint i of suite s: one about a
// setting (a refused effect query) at the file's line and key that gave
// it, when the suite is a file (inFile), any other after the endpoint's
// name. A suite made from OpenAPI has its settings from flags, which the
// error names already.
func suiteErr(s *suite.Suite, file string, i int, inFile bool, err error) error {
	var fe *idemcheck.FieldError
	if inFile && errors.As(err, &fe) {
		return s.Explain(i, err)
	}
	return fmt.Errorf("%s: endpoint %q: %w", file, s.Endpoints[i].Name, err)
}
