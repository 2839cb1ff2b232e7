package ordersmysql_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/ordersmysql"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
)

var bin = testbin.New("github.com/idemcheck/idemcheck/examples/ordersmysql/cmd/ordersmysql")

func TestMain(m *testing.M) { mysqltest.Main(m, bin.Remove) }

// checks are the ones that catch check-then-insert, and two that fault
// the database link (crash-lease, in-flight-retry), which run on MariaDB
// as on PostgreSQL.
var checks = []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply,
	idemcheck.CheckRestartReplay, idemcheck.CheckCrashLease, idemcheck.CheckInFlightRetry}

// certifyCmd certifies the variant started by idemcheck (--cmd) on a
// throwaway MariaDB (--db-engine mysql), effects counted in it in SQL.
func certifyCmd(t *testing.T, variant string, checks []string) *certify.Result {
	t.Helper()
	return certifyLeased(t, variant, checks, 0)
}

// certifyLeased is certifyCmd with the target's claims leased for lease
// (-lease) and the policy saying so (--lease); 0 leaves both unset.
func certifyLeased(t *testing.T, variant string, checks []string, lease time.Duration) *certify.Result {
	t.Helper()
	mysqltest.Server(t) // skips where MariaDB is missing, outside CI
	pol, err := idemcheck.Preset("ietf")
	require.NoError(t, err)
	command := bin.Path(t) + " -variant " + variant
	if lease > 0 {
		command += " -lease " + lease.String()
		pol.Lease = lease
	}
	b, err := config.Build(config.Spec{
		Command: command, DBEngine: "mysql", Instances: 1,
		Method: "POST", Path: "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
		Policy: pol, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = ?", EffectArgs: []string{"{{intent}}"},
		Checks: checks, Options: quick(),
	})
	require.NoError(t, err)
	ctx := context.Background()
	started, err := b.Launch.Start(ctx, io.Discard, io.Discard)
	require.NoError(t, err)
	defer started.Close()
	require.NotNil(t, started.DB)
	assert.Equal(t, targets.EngineMySQL, started.DB.Engine)
	b.Attach(started)
	res, err := certify.Run(ctx, b.Config)
	require.NoError(t, err)
	return res
}

// quick is a smaller run than the default, enough for the race: ten
// copies a burst, five bursts.
func quick() scenarios.Options {
	o := scenarios.Defaults
	o.BurstSize = 10
	return o
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// The checks that fault the database link run on MariaDB: the link reads
// the MySQL protocol, so the reference passes every one of them.
func TestReferenceOnMariaDBPasses(t *testing.T) {
	r := certifyCmd(t, ordersmysql.Reference, nil).Report // every check
	assert.Equal(t, idemcheck.Pass, r.Verdict, "%+v", r.Anomalies)
	linkChecks := map[string]bool{idemcheck.CheckFailedAttempt: true, idemcheck.CheckCrashLease: true, idemcheck.CheckCrashAfterCommit: true,
		idemcheck.CheckInFlightRetry: true}
	ran := 0
	for _, c := range r.Checks {
		if linkChecks[c.Name] {
			assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", c.Name, c.Reason)
			delete(linkChecks, c.Name)
		}
		if c.Status != idemcheck.Skip {
			ran++
			assert.Equal(t, idemcheck.Pass, c.Status, "%s: %s", c.Name, c.Reason)
		}
	}
	assert.Empty(t, linkChecks, "the checks that fault the database link ran")
	assert.GreaterOrEqual(t, ran, 13, "the link checks, concurrent-burst, restart-replay and the wire checks ran")
}

// check-then-insert is caught, its race scheduled at the database link
// (the write barrier held every attempt's INSERT until each had read),
// not left to timing.
func TestCheckThenInsertOnMariaDBFails(t *testing.T) {
	res := certifyCmd(t, ordersmysql.CheckThenInsert, checks)
	r := res.Report
	assert.Equal(t, idemcheck.Fail, r.Verdict)
	scheduled := 0
	for _, b := range res.History.Bursts {
		if b.RaceScheduled() {
			scheduled++
		}
	}
	assert.Positive(t, scheduled, "a burst's race was scheduled at the database link")
	kinds := map[idemcheck.Kind]bool{}
	for _, a := range r.Anomalies {
		kinds[a.Kind] = true
	}
	assert.True(t, kinds[idemcheck.DuplicateEffect], "%+v", r.Anomalies)
}

// The leased variants are caught by the check that breaks their half of
// the flow, with duplicate-effect: separate-key-store killed between its
// order's COMMIT and its key's, lease-no-fencing frozen past its lease at
// its work's START TRANSACTION. The reference, leased for the policy,
// passes lease-fencing (it ran: neither skipped nor inconclusive).
func TestLeasedVariantsOnMariaDB(t *testing.T) {
	for _, tc := range []struct{ variant, check string }{
		{ordersmysql.SeparateKeyStore, idemcheck.CheckCrashLease},
		{ordersmysql.LeaseNoFencing, idemcheck.CheckLeaseFencing},
		{ordersmysql.Reference, idemcheck.CheckLeaseFencing},
	} {
		r := certifyLeased(t, tc.variant, []string{tc.check}, time.Second).Report
		if tc.variant == ordersmysql.Reference {
			require.Len(t, r.Checks, 1)
			assert.Equal(t, idemcheck.Pass, r.Checks[0].Status, "%s: %s: %+v", tc.variant, r.Checks[0].Reason, r.Anomalies)
			continue
		}
		found := false
		for _, a := range r.Anomalies {
			found = found || a.Check == tc.check && a.Kind == idemcheck.DuplicateEffect
		}
		assert.True(t, found, "%s: %s reports duplicate-effect: %+v", tc.variant, tc.check, r.Anomalies)
	}
}

// By URL, effects read back through the API (--effect-http), and counted
// in MariaDB directly (--db mysql://…): the reference passes, the variant
// fails, both ways.
func TestByURLOnMariaDB(t *testing.T) {
	for _, variant := range []string{ordersmysql.Reference, ordersmysql.CheckThenInsert} {
		dsn := mysqltest.DSN(t)
		s, err := ordersmysql.New(context.Background(), ordersmysql.GoDSN(dsn), variant)
		require.NoError(t, err)
		srv := &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
		ln := listen(t)
		go func() { _ = srv.Serve(ln) }()
		base := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		for _, viaHTTP := range []bool{true, false} {
			pol, err := idemcheck.Preset("ietf")
			require.NoError(t, err)
			spec := config.Spec{URL: base.String(), Method: "POST", Path: "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
				Policy: pol, Checks: []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay}, Options: quick()}
			if viaHTTP {
				count := "/data"
				spec.EffectHTTP, spec.EffectCount = "GET /orders?customerId={{intent}}", &count
			} else {
				spec.DSN, spec.EffectSQL, spec.EffectArgs = dsn, "SELECT count(*) FROM orders WHERE customer_id = ?", []string{"{{intent}}"}
			}
			b, err := config.Build(spec)
			require.NoError(t, err)
			if !viaHTTP {
				d, err := config.OpenDB(context.Background(), b.Config.DSN, false)
				require.NoError(t, err)
				config.UseDatabase(&b.Config, d)
				defer d.Close()
			}
			res, err := certify.Run(context.Background(), b.Config)
			require.NoError(t, err)
			want := idemcheck.Pass
			if variant == ordersmysql.CheckThenInsert {
				want = idemcheck.Fail
			}
			assert.Equal(t, want, res.Report.Verdict, fmt.Sprintf("%s, read back over HTTP: %v: %+v", variant, viaHTTP, res.Report.Anomalies))
		}
		_ = srv.Close()
		_ = s.Close()
	}
}
