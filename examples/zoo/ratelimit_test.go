package zoo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	idemassert "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// The orders API behind a rate limiter that refuses a client's requests
// beyond a number in flight with 429 and Retry-After: 1. Its refusals are
// never judged as answers: the references show no anomaly, the checks
// that need two same-key attempts inside the handler at once are
// inconclusive behind a limit of one (naming the rate limit and what to
// do), and pass behind a limit of four, where check-then-insert is still
// caught. `idemcheck check` reaches the same verdict from the history.
func TestRateLimitedServices(t *testing.T) {
	b := bins(t)
	dsn := pgtest.DSN(t)
	for _, e := range zoo.RateLimited() {
		t.Run(e.Name(), func(t *testing.T) {
			cfg := zoo.Config{Options: zoo.Options(), DSN: dsn}
			if !e.Reference() {
				cfg.Checks = []string{e.Check}
			}
			res, err := b.Certify(context.Background(), e, cfg)
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			assert.True(t, row.Caught(), "%s: found %v, inconclusive %v", e.Name(), row.Found, row.Inconclusive)
			for _, a := range res.Report.Anomalies {
				t.Logf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
			}
			refused := 0
			for _, a := range res.History.Attempts {
				if a.Refusal() {
					refused++
				}
			}
			assert.Positive(t, refused, "the limiter refused some attempts")
			for _, c := range res.Report.Checks {
				t.Logf("%s: %s %s%s", c.Name, c.Status, c.Proof, c.Reason)
				if c.Name != idemcheck.CheckConcurrentBurst {
					continue
				}
				switch {
				case len(e.Inconclusive) > 0:
					assert.Contains(t, c.Reason, "rate limit")
					assert.Contains(t, c.Reason, "Options.BurstSize", "the reason says what to do")
				case e.Reference():
					assert.Regexp(t, `\d+ of \d+ rounds admitted two or more same-key attempts`, c.Proof)
				}
			}
			offline := idemassert.Report(res.History)
			assert.Equal(t, res.Report.Verdict, offline.Verdict, "idemcheck check on the history")
			for i, c := range offline.Checks {
				assert.Equal(t, res.Report.Checks[i].Status, c.Status, "%s offline", c.Name)
			}
		})
	}
}

// Declaring 429 an in-progress status does not make a refused burst count
// as concurrency: behind a limit of one in flight, where one attempt of
// each burst executes and every other is refused, concurrent-burst stays
// inconclusive, never passing on "rounds that happened as meant".
func TestRefusedBurstIsNotConcurrencyWhatever429Means(t *testing.T) {
	b := bins(t)
	e, ok := zoo.LookupFlags("orders", "reference", "-rate-limit 1")
	require.True(t, ok)
	res, err := b.Certify(context.Background(), e, zoo.Config{
		Checks: []string{idemcheck.CheckConcurrentBurst}, Options: zoo.Options(), DSN: pgtest.DSN(t),
		Adjust: func(c *certify.Config) { c.Policy.InProgressStatuses = []int{409, 429} },
	})
	require.NoError(t, err)
	assert.Empty(t, res.Report.Anomalies)
	require.Len(t, res.Report.Checks, 1)
	c := res.Report.Checks[0]
	assert.Equal(t, idemcheck.Inconclusive, c.Status, c.Proof)
	assert.True(t, strings.Contains(c.Reason, "rate limit"), c.Reason)
	assert.Equal(t, idemcheck.Inconclusive, res.Report.Verdict)
}
