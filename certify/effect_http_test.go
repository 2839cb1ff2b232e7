package certify_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/history"
)

// httpCounted turns an orders configuration's SQL count into a read-back
// through the API's list endpoint.
func httpCounted(cfg certify.Config) certify.Config {
	cfg.DB, cfg.EffectSQL, cfg.EffectArgs = nil, "", nil
	t := idemcheck.MustTemplate("/orders?customerId={{intent}}")
	cfg.EffectHTTP, cfg.EffectCount = &t, "/data"
	return cfg
}

// outcome is what a verdict is compared on: each check's status and the
// anomaly kinds it found.
func outcome(r idemcheck.Report) string {
	var lines []string
	for _, c := range r.Checks {
		var kinds []string
		for _, i := range c.Anomalies {
			kinds = append(kinds, string(r.Anomalies[i].Kind))
		}
		sort.Strings(kinds)
		lines = append(lines, fmt.Sprintf("%s %s %s", c.Name, c.Status, strings.Join(kinds, ",")))
	}
	return strings.Join(lines, "\n")
}

// Counting effects through the API reaches the verdicts counting them in
// the database reaches, on the reference and on the zoo variants whose
// bug a URL target shows: same statuses, same anomaly kinds, and every
// read-back count equal to what the database holds for the intent.
func TestHTTPCountedVerdictsMatchSQLCounted(t *testing.T) {
	checks := []string{
		idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply, idemcheck.CheckPayloadMismatch,
		idemcheck.CheckDistinctKeys, idemcheck.CheckMissingKey, idemcheck.CheckKeySyntax, idemcheck.CheckCorrectedRetry,
	}
	for _, v := range []orders.Variant{
		orders.Reference, orders.DedupeByBody, orders.TruncatesKeys, orders.NoFingerprint,
		orders.KeyOptional, orders.RerenderReplay, orders.SavesValidationErrors,
	} {
		t.Run(string(v), func(t *testing.T) {
			base, pool, _ := serveOrders(t, v)
			sqlCfg := ordersConfig(base, pool)
			sqlCfg.Checks = checks
			sqlRes, err := certify.Run(context.Background(), sqlCfg)
			require.NoError(t, err)

			httpCfg := httpCounted(ordersConfig(base, pool))
			httpCfg.Checks = checks
			httpRes, err := certify.Run(context.Background(), httpCfg)
			require.NoError(t, err)

			assert.Equal(t, outcome(sqlRes.Report), outcome(httpRes.Report))
			assert.Equal(t, sqlRes.Report.Verdict, httpRes.Report.Verdict)
			if check, _ := orders.Expectation(v); check != "" {
				assert.Equal(t, idemcheck.Fail, httpRes.Report.Verdict, "%s is caught by %s", v, check)
			}

			require.NotEmpty(t, httpRes.History.Observations)
			for _, o := range httpRes.History.Observations {
				assert.Equal(t, idemcheck.ViaHTTP, o.Via)
				var n int64
				require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM orders WHERE customer_id = $1", o.Intent).Scan(&n))
				assert.Equal(t, n, o.Effects, "intent %s: read back %d, database %d", o.Intent, o.Effects, n)
			}
			for _, rr := range httpRes.Report.Contract {
				if rr.Status == idemcheck.RuleHeld || rr.Status == idemcheck.RuleBroken {
					assert.Contains(t, rr.Basis, "read back through the API", rr.Check)
				}
			}
		})
	}
}

// A read-back that cannot count is refused before anything is sent.
func TestHTTPCountRefusedBeforeTraffic(t *testing.T) {
	base, pool, api := serveOrders(t, orders.Reference)
	for _, c := range []struct{ path, count, want string }{
		{"/nowhere?c={{intent}}", "/data", "answered 404"},
		{"/orders?customerId={{intent}}", "/missing", "nothing at /missing"},
		{"/orders?customerId={{intent}}", "/data/0", "nothing at /data/0"},
		{"/orders?customerId={{intent}}", "", "neither an array nor a number"},
	} {
		cfg := httpCounted(ordersConfig(base, pool))
		p := idemcheck.MustTemplate(c.path)
		cfg.EffectHTTP, cfg.EffectCount = &p, c.count
		_, err := certify.Run(context.Background(), cfg)
		require.Error(t, err, c.path)
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
		assert.Contains(t, err.Error(), c.want)
	}
	assert.Zero(t, api.Commits(), "nothing was created")
}

// A secret in the read-back's path (a suite's ${NAME}) reaches neither the
// report nor the history.
func TestHTTPCountHidesSecrets(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	cfg := httpCounted(ordersConfig(base, pool))
	p := idemcheck.MustTemplate("/orders?customerId={{intent}}&token=s3cret-value")
	cfg.EffectHTTP, cfg.Secrets = &p, []string{"s3cret-value"}
	cfg.Checks = []string{idemcheck.CheckSequentialReplay}
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	var buf strings.Builder
	require.NoError(t, res.Report.WriteJSON(&buf))
	require.NoError(t, history.Write(&buf, res.History))
	assert.NotContains(t, buf.String(), "s3cret-value")
	assert.Contains(t, res.Report.Target.ReadBack, "token=[redacted]")
	require.NotEmpty(t, res.History.Observations)
	assert.Contains(t, res.History.Observations[0].Query, "token=[redacted]")
}
