package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/openapi"
	"github.com/idemcheck/idemcheck/internal/outfile"
	"github.com/idemcheck/idemcheck/internal/suite"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// openapiFlags are the flags init and run share for a description.
type openapiFlags struct {
	spec    string
	methods string
}

func (o *openapiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.spec, "openapi", "", "the OpenAPI description (3.0, 3.1, or Swagger 2.0): a `file`, or a URL on this machine (elsewhere with --allow-remote)")
	fs.StringVar(&o.methods, "methods", strings.Join(openapi.DefaultMethods, ","), "the `methods` whose operations are certified: POST and PATCH by default; PUT and DELETE when asked")
}

func (o *openapiFlags) parseMethods() ([]string, error) {
	var out []string
	for _, m := range splitList(o.methods) {
		m = strings.ToUpper(m)
		if !slices.Contains(openapi.KnownMethods, m) {
			return nil, idemcheck.Usagef("--methods %q: %s is not certified (use %s): safe methods have no effect to repeat", o.methods, m, strings.Join(openapi.KnownMethods, ", "))
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, idemcheck.Usagef("--methods is empty: name at least one of %s", strings.Join(openapi.KnownMethods, ", "))
	}
	return out, nil
}

// generate reads the description and makes its endpoints.
func (o *openapiFlags) generate(ctx context.Context, allowRemote bool) (openapi.Result, error) {
	methods, err := o.parseMethods()
	if err != nil {
		return openapi.Result{}, err
	}
	doc, err := openapi.Load(ctx, o.spec, allowRemote)
	if err != nil {
		return openapi.Result{}, idemcheck.Usagef("%v", err)
	}
	return openapi.Generate(doc, openapi.Options{Methods: methods}), nil
}

// runInit writes a suite file from an OpenAPI description.
func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	var of openapiFlags
	var out, rawURL string
	var allowRemote, force bool
	of.register(fs)
	fs.StringVar(&out, "o", "", "write the suite to `FILE` (default: standard output)")
	fs.BoolVar(&force, "force", false, "overwrite the -o file when it exists")
	fs.StringVar(&rawURL, "url", "", "the target's base `URL` written into the suite (default: ${TARGET_URL}, read when the suite runs)")
	fs.BoolVar(&allowRemote, "allow-remote", false, "allow fetching an --openapi URL that is not on loopback")
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if of.spec == "" {
		return 0, idemcheck.Usagef("init: --openapi FILE is required (an OpenAPI 3.0/3.1 or Swagger 2.0 description)")
	}
	if fs.NArg() > 0 {
		return 0, idemcheck.Usagef("init: unexpected argument %q: flags only, such as --openapi api.yaml -o suite.yaml", fs.Arg(0))
	}
	if rawURL != "" {
		if _, err := hostOnly(rawURL); err != nil {
			return 0, err
		}
	}
	if out != "" && !force {
		if _, err := os.Stat(out); err == nil {
			return 0, idemcheck.Usagef("-o %s exists: pass --force to overwrite it", out)
		}
	}
	res, err := of.generate(ctx, allowRemote)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	if err := openapi.WriteSuite(&buf, res, openapi.SuiteOptions{Source: of.spec, URL: strings.TrimSuffix(rawURL, "/")}); err != nil {
		return 0, err
	}
	// What init writes, run must read: checked here, with ${NAME} left as
	// it is, so a generator bug is found before the user runs it.
	if _, err := suite.Parse("generated suite", buf.Bytes(), func(n string) (string, bool) { return "http://127.0.0.1:1", true }); err != nil {
		return 0, idemcheck.Unavailablef("init wrote a suite it cannot read back (a bug in idemcheck): %v", err)
	}
	if out == "" {
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return 0, err
		}
	} else if err := outfile.WriteAtomic(out, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return 0, idemcheck.Usagef("-o %s: %v", out, err)
	}
	writeInitSummary(stderr, res, out)
	return idemcheck.ExitHeld, nil
}

// runDest stands for run --openapi in writeInitSummary: nothing is written.
const runDest = "\x00run"

func writeInitSummary(w io.Writer, res openapi.Result, out string) {
	dest := "written to standard output"
	switch out {
	case "":
	case runDest:
		dest = "to certify"
	default:
		dest = "written to " + out
	}
	fmt.Fprintf(w, "idemcheck: %d operations: %d endpoints %s, %d skipped, %d of methods not asked for\n",
		res.Operations, len(res.Endpoints), dest, len(res.Skipped), res.NotAsked)
	withEffect := 0
	for _, e := range res.Endpoints {
		if e.Effect != nil {
			withEffect++
		}
	}
	if len(res.Endpoints) > 0 {
		fmt.Fprintf(w, "idemcheck: %d of them count effects through a list operation; the others are wire-only until given an effect\n", withEffect)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "  skipped %s %s: %s\n", s.Method, s.Path, s.Reason)
	}
}

// openapiSuite is the suite run --openapi certifies: the description's
// endpoints against --url, each with the --header headers.
func openapiSuite(ctx context.Context, of openapiFlags, rawURL string, headers []string, allowRemote bool, stderr io.Writer) (*suite.Suite, error) {
	if rawURL == "" {
		return nil, idemcheck.Usagef("run: --openapi needs --url, the target's base URL, such as http://127.0.0.1:8080")
	}
	base, err := hostOnly(rawURL)
	if err != nil {
		return nil, err
	}
	if !allowRemote {
		if err := certify.RequireLoopback("URL", base.Hostname()); err != nil {
			return nil, err
		}
	}
	// ${NAME} is read from the environment, as for certify's --header;
	// what it expands to is redacted like a suite's own secrets. The
	// headers are checked with every endpoint (config.Build).
	headers = slices.Clone(headers)
	secrets, err := expandFlags("--header", headers, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	hs := splitHeaders(headers)
	res, err := of.generate(ctx, allowRemote)
	if err != nil {
		return nil, err
	}
	writeInitSummary(stderr, res, runDest)
	if len(res.Endpoints) == 0 {
		return nil, idemcheck.Usagef("--openapi %s: no operation can be certified (the reasons are above)", of.spec)
	}
	var buf bytes.Buffer
	if err := openapi.WriteSuite(&buf, res, openapi.SuiteOptions{Source: of.spec, URL: strings.TrimSuffix(rawURL, "/")}); err != nil {
		return nil, err
	}
	s, err := suite.Parse(of.spec+" (generated)", buf.Bytes(), os.LookupEnv)
	if err != nil {
		return nil, idemcheck.Unavailablef("the suite generated from %s cannot be read back (a bug in idemcheck): %v", of.spec, err)
	}
	s.Secrets = append(s.Secrets, secrets...)
	for i := range s.Endpoints {
		spec := &s.Endpoints[i].Spec
		for _, h := range hs {
			spec.Headers = append(slices.DeleteFunc(spec.Headers, func(o config.Header) bool { return strings.EqualFold(o.Name, h.Name) }), h)
		}
		spec.AllowRemote = allowRemote
	}
	s.Options.AllowRemote = allowRemote
	return s, nil
}

// hostOnly checks an --url that names a target and nothing more: scheme
// and host:port (config.ParseURL's rule, and no path).
func hostOnly(raw string) (*url.URL, error) {
	base, path, err := config.ParseURL("URL", raw, "")
	if err != nil {
		return nil, err
	}
	if path != "/" {
		return nil, idemcheck.Usagef("--url %q must be a scheme and host:port only, such as http://127.0.0.1:8080: the paths are the description's", raw)
	}
	return base, nil
}

// ProbeBodyMax bounds the target's answer quoted when it rejects a
// generated body.
const ProbeBodyMax = 512

// probe sends an endpoint's body once, with a fresh intent and key, and
// returns nil when the target accepts it (2xx), else what it answered:
// a generated body must be accepted before its checks mean anything.
func probe(ctx context.Context, cfg certify.Config) error {
	addr, err := certify.ResolveTargetTLS(ctx, cfg.Endpoint.Base, cfg.AllowRemote, cfg.TLS)
	if err != nil {
		return err
	}
	in := idemcheck.Intent{ID: "ic-probe-" + uuid.NewString()[:8], Key: uuid.NewString(), Seq: 1}
	body := cfg.Endpoint.Body.Fill(in)
	req, err := http.NewRequestWithContext(ctx, cfg.Endpoint.Method, cfg.Endpoint.Base.Scheme+"://"+cfg.Endpoint.Base.Host+cfg.Endpoint.Path.Fill(in), strings.NewReader(body))
	if err != nil {
		return idemcheck.Usagef("the request cannot be built: %v", err)
	}
	for _, h := range cfg.Endpoint.Header {
		req.Header.Set(h.Name, h.Value.Fill(in))
	}
	if req.Header.Get("Content-Type") == "" && body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(cfg.Policy.KeyHeader, in.Key)
	d := netguard.Dialer(cfg.AllowRemote, 3*time.Second)
	tr := &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	if cfg.Endpoint.Base.Scheme == "https" {
		tr.TLSClientConfig = runner.ClientTLS(cfg.TLS, cfg.Endpoint.Base)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: max(cfg.Timeout, 5*time.Second),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the generated body got no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, ProbeBodyMax+1))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	if len(b) > ProbeBodyMax {
		text += "…"
	}
	return fmt.Errorf("the target did not accept the generated body: it answered %d %s", resp.StatusCode, text)
}

// rejectedResult is the result of an endpoint whose generated body was not
// accepted: every planned check skipped with the target's answer, nothing
// more sent.
func rejectedResult(cfg certify.Config, why error) *certify.Result {
	h := &idemcheck.History{Run: idemcheck.Run{
		Target: idemcheck.Target{Name: cfg.Name, URL: cfg.Endpoint.Base.String(), Method: cfg.Endpoint.Method,
			Path: cfg.Endpoint.Path.Fill(idemcheck.Intent{ID: "{{intent}}", Key: "{{key}}"})},
		Policy: cfg.Policy,
	}}
	checks := cfg.Checks
	if len(checks) == 0 {
		checks = scenarios.Names()
	}
	for _, c := range checks {
		pc := idemcheck.PlannedCheck{Name: c}
		if known, err := scenarios.Lookup(c); err == nil {
			pc = known.Planned("")
		}
		pc.Skip = why.Error()
		h.Run.Checks = append(h.Run.Checks, pc)
	}
	h.Run.NotAsked = scenarios.NotAsked(h.Run.Checks)
	return &certify.Result{History: h, Report: assert.ReportIn(h, flagWords)}
}
