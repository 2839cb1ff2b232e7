// Package idemchecktest certifies an HTTP API from Go tests: Check runs
// the checks and returns the Report, and Run does the same inside `go
// test`, one named subtest per check, the way x/net/nettest's TestConn
// certifies a net.Conn. Both certify through certify.Run.
//
// The target is where the API runs: a handler served on loopback for the
// run, a running service reached by its URL, or a command (or image) that
// idemcheck starts itself. Only a target idemcheck starts gives it powers
// over it (a fault proxy on its database link, kill and restart), so only
// then do the fault checks run (failed-attempt, crash-lease,
// restart-replay, crash-after-commit, in-flight-retry, lease-fencing);
// with a handler or a URL they are skipped with the reason.
//
//	func TestOrdersAreSafeToRetry(t *testing.T) {
//		idemchecktest.Run(t, idemchecktest.Target{
//			Handler:   myapi.New(pool),
//			Path:      "/orders",
//			Body:      `{"customerId":"{{intent}}","totalCents":4000}`,
//			DB:        pool,
//			EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
//		})
//	}
//
// With the service as a process, the fault checks run too:
//
//	idemchecktest.Run(t, idemchecktest.Target{
//		Command:   "./bin/orders", // started with PORT and DATABASE_URL
//		Path:      "/orders",
//		Body:      `{"customerId":"{{intent}}","totalCents":4000}`,
//		EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
//	})
//
// It imports certify and targets; nothing in the module imports it.
package idemchecktest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Target is the endpoint to certify, where it runs and what it promises.
// Give one of Handler, URL, Command or Image.
type Target struct {
	// Handler is served on a loopback port for the run.
	Handler http.Handler
	// URL is the base URL of a running service, such as http://127.0.0.1:8080.
	URL string
	// Command is run with /bin/sh -c as the target, the way the command's
	// --cmd does: idemcheck provides its database (DSN, or a throwaway
	// PostgreSQL from the local binaries), puts a fault proxy on the link
	// to it, and starts it with PORT and DATABASE_URL in its environment.
	// It must serve HTTP on 127.0.0.1:$PORT, answer GET /healthz with 2xx
	// once ready, and create its own tables. idemcheck holds powers over
	// it, so the fault checks run.
	Command string
	// Image is Command for a container image already on the Docker host
	// (never pulled), the way --image does: it gets PORT, ADDR and
	// DATABASE_URL, on host networking.
	Image string
	// Env holds extra NAME=VALUE variables for a Command or Image target.
	Env []string
	// DSN is the database handed to a Command or Image target (idemcheck
	// creates nothing in it: the target makes its own tables); empty
	// provides a throwaway one. EffectSQL counts there; DB stays unset.
	DSN string
	// Method defaults to POST.
	Method string
	// Path, Body and Header values may hold {{key}}, {{intent}} and {{seq}}.
	Path   string
	Body   string
	Header map[string]string
	// OtherPath is a second endpoint (same method) for cross-endpoint;
	// empty skips that check.
	OtherPath string
	// Policy defaults to the IETF draft's (idemcheck.IETF).
	Policy *idemcheck.Policy
	// DB and EffectSQL count each intent's effects; EffectArgs default to
	// ["{{intent}}"]. For a Command or Image target EffectSQL runs on the
	// database idemcheck handed it, and DB stays unset.
	DB         *pgxpool.Pool
	EffectSQL  string
	EffectArgs []string
	// Checks default to every check with a scenario.
	Checks []string
	// Options default to scenarios.Defaults.
	Options *scenarios.Options
	// Seed defaults to 1, so a failing test runs the same way again.
	Seed int64
}

// Check certifies the target and returns its report. The error is an
// *idemcheck.Error for a target or configuration that could not run;
// anomalies are in the report, not in the error.
func Check(ctx context.Context, t Target) (idemcheck.Report, error) {
	cfg, stop, err := t.config(ctx)
	if err != nil {
		return idemcheck.Report{}, err
	}
	defer stop()
	res, err := certify.Run(ctx, cfg)
	if err != nil {
		return idemcheck.Report{}, err
	}
	return res.Report, nil
}

// Run certifies the target inside a test: one subtest per check, named
// after it, that fails with each anomaly's explanation and evidence, or is
// skipped with the reason the check does not apply. A target idemcheck
// starts (Command, Image) is started once for all the checks.
func Run(t *testing.T, target Target) {
	t.Helper()
	checks := target.Checks
	if len(checks) == 0 {
		checks = scenarios.Names()
	}
	cfg, stop, err := target.config(t.Context())
	if err != nil {
		t.Fatalf("idemcheck could not start: %v", err)
	}
	defer stop()
	for _, name := range checks {
		t.Run(name, func(t *testing.T) {
			one := cfg
			one.Checks = []string{name}
			res, err := certify.Run(t.Context(), one)
			if err != nil {
				t.Fatalf("idemcheck could not run %s: %v", name, err)
			}
			rep := res.Report
			for _, c := range rep.Checks {
				if c.Status == idemcheck.Skip {
					t.Skip(c.Reason)
				}
			}
			for _, a := range rep.Anomalies {
				t.Errorf("%s", Describe(a))
			}
		})
	}
}

// Describe renders an anomaly as a test failure message: kind, intent,
// explanation, and the witnessing attempts.
func Describe(a idemcheck.Anomaly) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (intent %s, key %s): %s", a.Kind, a.Intent, a.Key, a.Explanation)
	for _, e := range a.Evidence {
		if e.Error != "" {
			fmt.Fprintf(&b, "\n\tattempt %d (step %d): no reply: %s", e.Attempt, e.Step, e.Error)
		} else {
			fmt.Fprintf(&b, "\n\tattempt %d (step %d): %d %s", e.Attempt, e.Step, e.Status, e.Body)
		}
	}
	return b.String()
}

// config turns a Target into a certification, serving the handler or
// starting the command or image, if any; stop undoes that.
func (t Target) config(ctx context.Context) (certify.Config, func(), error) {
	stop := func() {}
	fail := func(err error) (certify.Config, func(), error) {
		stop()
		return certify.Config{}, func() {}, err
	}
	var given []string
	for name, set := range map[string]bool{"Handler": t.Handler != nil, "URL": t.URL != "", "Command": t.Command != "", "Image": t.Image != ""} {
		if set {
			given = append(given, name)
		}
	}
	if len(given) > 1 {
		slices.Sort(given)
		return fail(idemcheck.Usagef("idemchecktest: give one of Handler, URL, Command and Image, not %s", strings.Join(given, " and ")))
	}
	started := t.Command != "" || t.Image != ""
	if !started && (t.DSN != "" || len(t.Env) > 0) {
		return fail(idemcheck.Usagef("idemchecktest: DSN and Env go with Command or Image, a target idemcheck starts"))
	}
	if started && t.DB != nil {
		return fail(idemcheck.Usagef("idemchecktest: DB goes with Handler or URL; a started target's effects are counted in the database idemcheck hands it (DSN)"))
	}
	raw := t.URL
	var powers targets.Powers
	var replicas int
	var db *pgxpool.Pool
	switch {
	case t.Handler != nil:
		srv := httptest.NewServer(t.Handler)
		raw, stop = srv.URL, srv.Close
	case t.Command != "":
		pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: t.Command, DSN: t.DSN, Env: t.Env})
		if err != nil {
			return fail(err)
		}
		stop = pt.Close
		raw, powers, replicas, db = pt.URL.String(), pt.Powers(), pt.Replicas(), pt.DB.Pool
	case t.Image != "":
		env, err := targets.ParseEnv(t.Env)
		if err != nil {
			return fail(idemcheck.Usagef("idemchecktest: Env: %v", err))
		}
		ct, err := targets.StartContainerTarget(ctx, targets.ContainerOptions{Image: t.Image, DSN: t.DSN, Env: env})
		if err != nil {
			return fail(err)
		}
		stop = func() { _ = ct.Close() }
		raw, powers, replicas, db = ct.URL.String(), ct.Powers(), 1, ct.DB.Pool
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fail(idemcheck.Usagef("idemchecktest: URL %q is not an absolute http:// URL (or give Handler, Command or Image)", raw))
	}
	method := t.Method
	if method == "" {
		method = http.MethodPost
	}
	e := scenarios.Endpoint{Base: &url.URL{Scheme: u.Scheme, Host: u.Host}, Method: method}
	if e.Path, err = idemcheck.ParseTemplate(t.Path); err != nil {
		return fail(idemcheck.Usagef("idemchecktest: Path: %v", err))
	}
	if e.Body, err = idemcheck.ParseTemplate(t.Body); err != nil {
		return fail(idemcheck.Usagef("idemchecktest: Body: %v", err))
	}
	if t.OtherPath != "" {
		op, err := idemcheck.ParseTemplate(t.OtherPath)
		if err != nil {
			return fail(idemcheck.Usagef("idemchecktest: OtherPath: %v", err))
		}
		e.Other = &scenarios.OtherEndpoint{Method: method, Path: op}
	}
	for k, v := range t.Header {
		tv, err := idemcheck.ParseTemplate(v)
		if err != nil {
			return fail(idemcheck.Usagef("idemchecktest: Header %s: %v", k, err))
		}
		e.Header = append(e.Header, scenarios.Header{Name: k, Value: tv})
	}
	cfg := certify.Config{
		Endpoint: e, Policy: idemcheck.IETF(), Checks: t.Checks, Options: scenarios.Defaults,
		Seed: t.Seed, DB: t.DB, EffectSQL: t.EffectSQL, Timeout: 10 * time.Second,
		Powers: powers, Replicas: replicas,
	}
	if started && t.EffectSQL != "" {
		cfg.DB = db
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if t.Policy != nil {
		cfg.Policy = *t.Policy
	}
	if t.Options != nil {
		cfg.Options = *t.Options
	}
	args := t.EffectArgs
	if len(args) == 0 && t.EffectSQL != "" {
		args = []string{"{{intent}}"}
	}
	for _, a := range args {
		ta, err := idemcheck.ParseTemplate(a)
		if err != nil {
			return fail(idemcheck.Usagef("idemchecktest: EffectArgs: %v", err))
		}
		cfg.EffectArgs = append(cfg.EffectArgs, ta)
	}
	return cfg, stop, nil
}
