// Package idemchecktest certifies an HTTP API from Go: Check runs the
// checks and returns the Report, and Run does the same inside `go test`,
// one named subtest per check, the way x/net/nettest's TestConn certifies
// a net.Conn. A handler is served on loopback for the run; a running
// service is reached by its URL.
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
package idemchecktest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Target is the endpoint to certify and what it promises.
type Target struct {
	// Handler is served on a loopback port for the run; or give URL.
	Handler http.Handler
	// URL is the base URL of a running service, such as http://127.0.0.1:8080.
	URL string
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
	// ["{{intent}}"].
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
	cfg, stop, err := t.config()
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
// skipped with the reason the check does not apply.
func Run(t *testing.T, target Target) {
	t.Helper()
	checks := target.Checks
	if len(checks) == 0 {
		checks = scenarios.Names()
	}
	for _, name := range checks {
		t.Run(name, func(t *testing.T) {
			one := target
			one.Checks = []string{name}
			rep, err := Check(t.Context(), one)
			if err != nil {
				t.Fatalf("idemcheck could not run %s: %v", name, err)
			}
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

// config turns a Target into a certification, serving the handler if any.
func (t Target) config() (certify.Config, func(), error) {
	stop := func() {}
	raw := t.URL
	if t.Handler != nil {
		if raw != "" {
			return certify.Config{}, stop, idemcheck.Usagef("idemchecktest: give Handler or URL, not both")
		}
		srv := httptest.NewServer(t.Handler)
		raw, stop = srv.URL, srv.Close
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		stop()
		return certify.Config{}, func() {}, idemcheck.Usagef("idemchecktest: URL %q is not an absolute http:// URL (or give Handler)", raw)
	}
	fail := func(err error) (certify.Config, func(), error) {
		stop()
		return certify.Config{}, func() {}, err
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
