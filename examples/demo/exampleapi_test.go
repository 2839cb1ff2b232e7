package main

import (
	"bufio"
	"bytes"
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/render"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// The newcomer's path: the example API started in the background on a
// throwaway PostgreSQL, certified by --url and --db from the lines it
// prints, then stopped with kill, which takes its database with it.
func TestExampleAPIInTheBackground(t *testing.T) {
	code, out, errOut := cli(t, "example-api", "--background")
	require.Equal(t, idemcheck.ExitHeld, code, "%s\n%s", out, errOut)
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok && !strings.HasPrefix(sc.Text(), "#") {
			vars[k] = strings.Trim(v, "'")
		}
	}
	pid, err := strconv.Atoi(vars["EXAMPLE_PID"])
	require.NoError(t, err, out)
	logLine := regexp.MustCompile(`(?m)^# its log: (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, logLine, out)
	require.FileExists(t, logLine[1])
	reaped := false
	t.Cleanup(func() {
		if !reaped { // a failed test leaves no server behind; a reaped pid may be another process's
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_, _ = syscall.Wait4(pid, nil, 0, nil)
		}
	})
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, vars["EXAMPLE_URL"])
	require.Regexp(t, `^postgres://`, vars["EXAMPLE_DB"])

	rep := certifyByURL(t, vars["EXAMPLE_URL"], vars["EXAMPLE_DB"], "concurrent-burst", "sequential-replay", "lost-reply")
	var text bytes.Buffer
	render.WriteText(&text, rep, false)
	requireHeld(t, rep, text.String())
	assert.Contains(t, text.String(), "effects counted in")

	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	// In the test the server is this process's child, released, not
	// waited for: Wait4 reaps it once SIGTERM has stopped it. From a
	// shell, example-api exits and the server belongs to init.
	var ws syscall.WaitStatus
	_, err = syscall.Wait4(pid, &ws, 0, nil)
	require.NoError(t, err)
	reaped = true
	assert.True(t, ws.Exited() && ws.ExitStatus() == 0, "the server stops cleanly on SIGTERM: %v", ws)
	assert.NoFileExists(t, logLine[1], "kill leaves no log behind")
}

// requireHeld requires a certification that held, or whose only doubt is
// the one a busy machine may cause a target given by URL: bursts released
// too loosely, in every repeat of some round, to mean anything (the
// harness cannot schedule the race at a database link it does not hold).
// That check is inconclusive, rightly; any anomaly, or any other check
// not passing, fails the test.
func requireHeld(t *testing.T, rep idemcheck.Report, text string) {
	t.Helper()
	require.Empty(t, rep.Anomalies, text)
	if rep.Verdict == idemcheck.Pass {
		return
	}
	require.Equal(t, idemcheck.Inconclusive, rep.Verdict, text)
	for _, c := range rep.Checks {
		if c.Status != idemcheck.Pass {
			require.True(t, c.Status == idemcheck.Inconclusive && strings.HasPrefix(c.Reason, "its bursts were too loose: "),
				"%s: %s (%s)\n%s", c.Name, c.Status, c.Reason, text)
		}
	}
	t.Logf("the machine was too busy for a tight burst in some round:\n%s", text)
}

// certifyByURL certifies POST /orders of the API at rawURL, its effects
// counted in the database at dsn, as idemcheck certify --url --db does
// (the command's own flags are tested in cmd/idemcheck).
func certifyByURL(t *testing.T, rawURL, dsn string, checks ...string) idemcheck.Report {
	t.Helper()
	ctx := context.Background()
	base, err := url.Parse(rawURL)
	require.NoError(t, err)
	db, err := targets.OpenDatabase(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	cfg := certify.Config{
		Name: "orders", Checks: checks, Options: scenarios.Defaults, Preflight: true,
		Settings: certify.Settings{
			Policy: idemcheck.IETF(), Timeout: 10 * time.Second,
			DB: db.Pool, DBName: targets.RedactDSN(dsn), DSN: dsn,
			EffectSQL:  "SELECT count(*) FROM orders WHERE customer_id = $1",
			EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")},
		},
	}
	cfg.Endpoint.Base = base
	cfg.Endpoint.Method = "POST"
	cfg.Endpoint.Path = idemcheck.MustTemplate("/orders")
	cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`)
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res.Report
}
