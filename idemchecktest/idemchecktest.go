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
// Its Target is checked by internal/config, the rules the command's flags
// and suite files share. It imports certify and internal/config; nothing
// in the module imports it.
package idemchecktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/scenarios"
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
	// Providers names the variables that hand a Command or Image target
	// the base URLs of payment provider doubles idemcheck serves for it
	// (PROVIDER_URL, say): its calls to them are judged too
	// (docs/provider.md).
	Providers []string
	// DSN is the database handed to a Command or Image target (idemcheck
	// creates nothing in it: the target makes its own tables); empty
	// provides a throwaway one. EffectSQL counts there; DB stays unset.
	// A MySQL-family DSN (mysql://, user:pw@tcp(host)/db) works too, its
	// EffectSQL taking ? placeholders.
	DSN string
	// DBEngine, for a Command or Image target without a DSN, is the
	// engine of the throwaway database: "postgres" (empty) or "mysql", a
	// MariaDB (from the local binaries for a Command; a container of
	// idemcheck/mariadb:local, else the local binaries, for an Image), on
	// which the checks that fault the database link are skipped.
	DBEngine string
	// Method defaults to POST.
	Method string
	// Path, Body and Header values may hold {{key}}, {{intent}} and {{seq}},
	// and computed parts such as {{timestamp}} (docs/webhooks.md).
	Path   string
	Body   string
	Header map[string]string
	// FailingBody is a body the target fails on by its own logic (a
	// charge its processor declines), for failed-attempt's half that
	// needs no fault; empty leaves that half out.
	FailingBody string
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
	// SkipChecks are left out of Checks (of every check, by default).
	SkipChecks []string
	// Options default to scenarios.Defaults.
	Options *scenarios.Options
	// Sign, when set, signs every attempt as a webhook sender does
	// (docs/webhooks.md); its Secret is hidden in the report, with every
	// signature. Read the secret from the environment, never a literal.
	Sign *scenarios.Signing
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
	cfg, stop, err := target.config(t.Context())
	if err != nil {
		t.Fatalf("idemcheck could not start: %v", err)
	}
	defer stop()
	checks := cfg.Checks
	if len(checks) == 0 {
		checks = scenarios.Names()
	}
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
			for _, a := range rep.Remarks {
				// Apart from the verdict: said, never a failure.
				t.Logf("%s finding, apart from the verdict: %s", a.Finding(), Describe(a))
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

// targetWords are idemchecktest's names for the fields config.Build and
// certify name where they differ from Target's own.
var targetWords = map[idemcheck.Field]idemcheck.Word{
	"Headers": {Name: "Header"}, "Endpoint.Header": {Name: "Header"}, "Endpoint.Base": {Name: "URL"}, "Endpoint.Path": {Name: "Path"},
	"DB": {Name: "DB", Set: "set DB (or DSN for a Command or Image)"}, "AllowRemote": {Name: "AllowRemote", Set: "set AllowRemote"},
	"Powers": {Name: "Command", Set: "set Command or Image"}, "Endpoint.Other": {Name: "OtherPath", Set: "set OtherPath"},
	"Endpoint.FailingBody": {Name: "FailingBody", Set: "set FailingBody"},
	"Sign":                 {Name: "Sign.Scheme", Set: "set Sign"}, "SignSecret": {Name: "Sign.Secret"}, "SignHeader": {Name: "Sign.Header"}, "SignSkew": {Name: "Sign.Skew"},
}

// inTargetWords is err with the fields it names said as Target's; it
// wraps err, whose *idemcheck.FieldError names the field.
func inTargetWords(err error) error {
	var fe *idemcheck.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return &idemcheck.Error{Code: idemcheck.ExitCode(err), Err: &worded{"idemchecktest: " + fe.Text(targetWords), err}}
}

// worded is an error said in other words.
type worded struct {
	msg string
	err error
}

func (w *worded) Error() string { return w.msg }
func (w *worded) Unwrap() error { return w.err }

// config turns a Target into a certification (config.Build), serving the
// handler or starting the command or image, if any; stop undoes that.
func (t Target) config(ctx context.Context) (certify.Config, func(), error) {
	if t.DSN != "" && t.Command == "" && t.Image == "" {
		return certify.Config{}, nil, idemcheck.Fieldf(idemcheck.ExitUsage, "DSN", "idemchecktest: DSN goes with Command or Image, a target idemcheck starts (with Handler or URL, set DB)")
	}
	spec := config.Spec{
		Handler: t.Handler, URL: t.URL, Command: t.Command, Instances: 1, Image: t.Image, Env: t.Env, Providers: t.Providers, DSN: t.DSN, DBEngine: t.DBEngine,
		Method: t.Method, Path: t.Path, Body: t.Body, FailingBody: t.FailingBody, OtherPath: t.OtherPath,
		Policy: idemcheck.IETF(), DB: t.DB, EffectSQL: t.EffectSQL, EffectArgs: t.EffectArgs,
		Checks: t.Checks, SkipChecks: t.SkipChecks, Options: scenarios.Defaults, Words: targetWords,
	}
	if len(spec.Checks) == 0 {
		spec.Checks = nil // in Go an empty list is no list: every check
	}
	names := slices.Sorted(maps.Keys(t.Header))
	for _, k := range names {
		spec.Headers = append(spec.Headers, config.Header{Name: k, Value: t.Header[k]})
	}
	if t.Policy != nil {
		spec.Policy = *t.Policy
	}
	if t.Options != nil {
		spec.Options = *t.Options
	}
	if g := t.Sign; g != nil {
		spec.Sign, spec.SignSecret, spec.SignHeader, spec.SignSkew = g.Scheme, g.Secret, g.Header, g.Skew
	}
	if len(spec.EffectArgs) == 0 && t.EffectSQL != "" {
		spec.EffectArgs = []string{"{{intent}}"}
	}
	b, err := config.Build(spec)
	if err != nil {
		return certify.Config{}, nil, inTargetWords(err)
	}
	stop := func() {}
	if b.Launch != nil {
		st, err := b.Launch.Start(ctx, nil, nil)
		if err != nil {
			return certify.Config{}, nil, inTargetWords(err)
		}
		stop = func() { _ = st.Close() }
		b.Attach(st)
	}
	return b.Config, stop, nil
}
