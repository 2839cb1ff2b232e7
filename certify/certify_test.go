package certify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m, removeBinaries) }

// serveOrders serves one variant of the example API over real HTTP on
// loopback, on a fresh database.
func serveOrders(t *testing.T, v orders.Variant) (*url.URL, *pgxpool.Pool, *orders.Server) {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, orders.Migrate(context.Background(), pool))
	api := orders.New(pool, orders.Config{Variant: v})
	t.Cleanup(api.Close)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u, pool, api
}

func ordersConfig(base *url.URL, pool *pgxpool.Pool) certify.Config {
	p := idemcheck.IETF()
	p.ReplayHeader = "Idempotent-Replayed"
	return certify.Config{
		Settings: certify.Settings{
			Endpoint: scenarios.Endpoint{
				Base: base, Method: "POST",
				Path: idemcheck.MustTemplate("/orders"),
				Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`),
			},
			Policy: p,
			DB:     pool, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1",
			EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")},
		},
		Options: scenarios.Defaults,
	}
}

// The acceptance bar: every one of 10 runs catches the check-then-insert
// race, and no run flags the reference. The race is timed, not scheduled,
// so on a machine whose cores are busy a burst can miss it: 12 bursts a
// run (more than the default 5) keep a miss of the whole run out of reach
// (each burst raced about 3 times in 5 on a quiet machine).
func TestCertifyCatchesCheckThenInsertEveryRun(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.CheckThenInsert)
	for run := 1; run <= 10; run++ {
		cfg := ordersConfig(base, pool)
		cfg.Checks, cfg.Options.BurstRounds = []string{idemcheck.CheckConcurrentBurst}, 12
		res, err := certify.Run(context.Background(), cfg)
		require.NoError(t, err)
		kinds := map[idemcheck.Kind]int{}
		for _, a := range res.Report.Anomalies {
			kinds[a.Kind]++
			assert.Equal(t, idemcheck.CheckConcurrentBurst, a.Check, "run %d: %s", run, a.Explanation)
			assert.NotEmpty(t, a.Attempts)
			assert.NotEmpty(t, a.Explanation)
		}
		assert.Equal(t, idemcheck.Fail, res.Report.Verdict, "run %d", run)
		assert.Positive(t, kinds[idemcheck.DuplicateEffect]+kinds[idemcheck.MultipleCreated], "run %d: race not caught: %v", run, kinds)
		t.Logf("run %d: %v, median burst release spread %d us", run, kinds, res.Report.Stats.BurstSpreadMedianUS)
	}
}

func TestCertifyReferencePassesEveryRun(t *testing.T) {
	base, pool, api := serveOrders(t, orders.Reference)
	before := api.Commits()
	for run := 1; run <= 10; run++ {
		res, err := certify.Run(context.Background(), ordersConfig(base, pool))
		require.NoError(t, err)
		for _, a := range res.Report.Anomalies {
			t.Errorf("run %d: %s: %s", run, a.Kind, a.Explanation)
		}
		require.Len(t, res.Report.Checks, len(scenarios.Names()))
		for _, c := range res.Report.Checks {
			want := idemcheck.Pass
			switch c.Name {
			case idemcheck.CheckCrossEndpoint, idemcheck.CheckCrossTenant, idemcheck.CheckWebhookRedeliver,
				idemcheck.CheckFailedAttempt, idemcheck.CheckCrashLease, idemcheck.CheckLeaseFencing,
				idemcheck.CheckRestartReplay, idemcheck.CheckCrashAfterCommit, idemcheck.CheckInFlightRetry, idemcheck.CheckSignature:
				want = idemcheck.Skip // not configured, or needs powers an in-process handler lacks
			}
			assert.Equal(t, want, c.Status, "run %d: %s %s", run, c.Name, c.Reason)
		}
		// Every intent left exactly the effects the contract allows, by the
		// database's own count: one, two for two keys, none without a key.
		want := map[string]int64{idemcheck.CheckDistinctKeys: 2, idemcheck.CheckMissingKey: 0}
		var total int64
		for _, o := range res.History.Observations {
			w, ok := want[o.Check]
			if !ok {
				w = 1
			}
			if o.Check == idemcheck.CheckKeySyntax {
				w = keySyntaxEffects(res.History, o.Intent)
			}
			assert.Equal(t, w, o.Effects, "intent %s of %s", o.Intent, o.Check)
			total += o.Effects
		}
		assert.Len(t, res.History.Observations, len(res.History.Intents))
		assert.Equal(t, total, api.Commits()-before, "one commit per effect")
		before = api.Commits()
	}
}

// lost-reply really loses the reply: the first attempt of every round has
// no reply, and the server still committed it.
func TestLostReplyCutsAfterCommit(t *testing.T) {
	base, pool, api := serveOrders(t, orders.Reference)
	cfg := ordersConfig(base, pool)
	cfg.Checks = []string{idemcheck.CheckLostReply}
	cfg.Options.Rounds = 5
	before := api.Commits()
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Empty(t, res.Report.Anomalies)
	assert.Equal(t, int64(5), api.Commits()-before)
	for _, a := range res.History.Attempts {
		if a.Step == 1 {
			assert.Equal(t, idemcheck.Unknown, a.Outcome, "attempt %d", a.ID)
			assert.Equal(t, "cut-reply", a.Fault)
			assert.Equal(t, []string{idemcheck.LinkClient}, a.FaultLinks)
		} else {
			assert.Equal(t, 201, a.Status, "attempt %d", a.ID)
			assert.Equal(t, "true", a.RespHeader.Get("Idempotent-Replayed"), "the retry is a replay")
		}
	}
	// The history records every rule: the planned check's, and those not asked for.
	require.Len(t, res.Report.Contract, len(scenarios.Names()))
	for _, rr := range res.Report.Contract {
		c, err := scenarios.Lookup(rr.Check)
		require.NoError(t, err)
		assert.Equal(t, c.Rule, rr.Rule)
		if rr.Check != idemcheck.CheckLostReply {
			assert.Equal(t, "not asked for (Checks)", rr.Reason, "Go's words: Config.Words is nil")
		}
	}
}

func TestUnreachableTarget(t *testing.T) {
	cfg := ordersConfig(&url.URL{Scheme: "http", Host: "127.0.0.1:1"}, nil)
	cfg.EffectSQL = ""
	_, err := certify.Run(context.Background(), cfg)
	require.Error(t, err)
	assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.ExitCode(err))
	assert.Contains(t, err.Error(), "127.0.0.1:1")
}

func TestRemoteTargetNeedsAllowRemote(t *testing.T) {
	// The host check alone: no connection is ever attempted off loopback.
	for _, h := range []string{"192.0.2.1", "::ffff:10.255.255.1", "staging.example.com"} {
		err := certify.RequireLoopback("--url", h)
		require.Error(t, err, h)
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
		assert.Contains(t, err.Error(), "set AllowRemote")
		assert.Contains(t, err.Error(), "--url")
		var fe *idemcheck.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Contains(t, fe.Text(map[idemcheck.Field]idemcheck.Word{"AllowRemote": {Name: "--allow-remote", Set: "pass --allow-remote"}}), "pass --allow-remote")
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", "127.3.4.5", "api.localhost", "::ffff:127.0.0.1"} {
		assert.NoError(t, certify.RequireLoopback("--url", h), h)
	}
}

func TestEffectSQLErrorsBeforeTraffic(t *testing.T) {
	base, pool, api := serveOrders(t, orders.Reference)
	cases := map[string]struct {
		sql  string
		args int
		want string
	}{
		"missing table":  {"SELECT count(*) FROM nope WHERE x = $1", 1, `relation "nope" does not exist`},
		"syntax":         {"SELEC count(*)", 0, `syntax error at or near "SELEC"`},
		"argument count": {"SELECT count(*) FROM orders WHERE customer_id = $1", 0, "takes 1 parameters"},
		"two columns":    {"SELECT 1, 2 FROM orders WHERE customer_id = $1", 1, "returns 2 columns"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := ordersConfig(base, pool)
			cfg.EffectSQL = c.sql
			cfg.EffectArgs = cfg.EffectArgs[:c.args]
			before := api.Commits()
			_, err := certify.Run(context.Background(), cfg)
			require.Error(t, err)
			assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, before, api.Commits(), "no traffic before the configuration is known good")
		})
	}
}

func TestInterruptedRunIsAnError(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	cfg := ordersConfig(base, pool)
	cfg.Options.BurstRounds = 10000
	_, err := certify.Run(ctx, cfg)
	require.Error(t, err)
	assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.ExitCode(err))
}

// The target is reached at the address that was checked: a loopback name
// resolves (from the hosts file or RFC 6761, never DNS) to the IP:port that
// answered, which is what the fault proxy is then given.
func TestResolveTargetPinsTheCheckedAddress(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	addr, err := certify.ResolveTarget(context.Background(), &url.URL{Scheme: "http", Host: "localhost:" + u.Port()}, false)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:"+u.Port(), addr)

	_, err = certify.ResolveTarget(context.Background(), &url.URL{Scheme: "http", Host: "staging.example.com:" + u.Port()}, false)
	require.Error(t, err)
	assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err))

	// With --allow-remote the URL's host:port is used as given.
	addr, err = certify.ResolveTarget(context.Background(), &url.URL{Scheme: "http", Host: "localhost:" + u.Port()}, true)
	require.NoError(t, err)
	assert.Equal(t, "localhost:"+u.Port(), addr)
}

// The report names a database as where effects were counted only when an
// effect query ran there: one handed to a target with no query to count
// in it counted nothing.
func TestReportNamesTheDatabaseOnlyWhereEffectsWereCounted(t *testing.T) {
	base, pool, _ := serveOrders(t, orders.Reference)
	cfg := ordersConfig(base, pool)
	cfg.Checks, cfg.Options.Rounds = []string{idemcheck.CheckSequentialReplay}, 1
	cfg.DBName = "postgres://app@127.0.0.1/app"
	res, err := certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, cfg.DBName, res.Report.Target.Database)

	cfg.DB, cfg.EffectSQL, cfg.EffectArgs = nil, "", nil
	res, err = certify.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Empty(t, res.Report.Target.Database, "no effect query, so nothing was counted in it")
	assert.Equal(t, idemcheck.Pass, res.Report.Verdict, "the reference's replies carry their order ids: the wire alone judges them")
}
