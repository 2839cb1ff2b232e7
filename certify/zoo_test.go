package certify_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/internal/testbin"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// ordersProgram is the example orders API's command, built for these tests.
var ordersProgram = testbin.New("github.com/idemcheck/idemcheck/examples/orders/cmd/orders")

func ordersBinary(t *testing.T) string { return ordersProgram.Path(t) }

func removeBinaries() { ordersProgram.Remove(); fileKeysProgram.Remove() }

const testLease = time.Second

// certifyProcess starts the orders binary with a variant as a process
// target (its own database link through the fault proxy) and certifies it.
func certifyProcess(t *testing.T, v orders.Variant, instances int, checks ...string) *certify.Result {
	t.Helper()
	return certifyOrders(t, "-variant "+string(v), instances, checks...)
}

// certifyOrders is certifyProcess with the orders binary's flags as given.
func certifyOrders(t *testing.T, flags string, instances int, checks ...string) *certify.Result {
	t.Helper()
	return certifyOrdersWith(t, flags, instances, nil, checks...)
}

// certifyOrdersWith is certifyOrders with the configuration changed by
// change before the run.
func certifyOrdersWith(t *testing.T, flags string, instances int, change func(*certify.Config), checks ...string) *certify.Result {
	t.Helper()
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{
		Command:   ordersBinary(t) + " -lease " + testLease.String() + " " + flags,
		Instances: instances,
		DSN:       pgtest.DSN(t),
	})
	require.NoError(t, err)
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = checks
	cfg.Endpoint.Other = &scenarios.OtherEndpoint{Method: "POST", Path: idemcheck.MustTemplate("/payments")}
	failing := idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":402}`)
	cfg.Endpoint.FailingBody = &failing
	cfg.Endpoint.Tenants = []scenarios.Header{
		{Name: "Authorization", Value: idemcheck.MustTemplate("Bearer client-a")},
		{Name: "Authorization", Value: idemcheck.MustTemplate("Bearer client-b")},
	}
	if change != nil {
		change(&cfg)
	}
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res
}

func kindsOf(r idemcheck.Report) map[idemcheck.Kind]int {
	k := map[idemcheck.Kind]int{}
	for _, a := range r.Anomalies {
		k[a.Kind]++
	}
	return k
}

// The reference, started as a process and put through every check,
// including the ones that cut its database link, crash it and stall it.
func TestReferenceProcessPassesEveryCheck(t *testing.T) {
	res := certifyProcess(t, orders.Reference, 1, scenarios.Names()...)
	for _, a := range res.Report.Anomalies {
		t.Errorf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
	}
	for _, c := range res.Report.Checks {
		want := idemcheck.Pass
		if c.Name == idemcheck.CheckWebhookRedeliver || c.Name == idemcheck.CheckSignature {
			want = idemcheck.Skip // for consumers (signed ones), not for this API
		}
		assert.Equal(t, want, c.Status, "%s: %s", c.Name, c.Reason)
	}
}

// Each variant whose bug only a fault exposes is caught by its check with
// its anomaly, as the variant itself documents (orders.Expectation).
func TestFaultChecksCatchTheirVariants(t *testing.T) {
	cases := []struct {
		v         orders.Variant
		instances int
	}{
		{orders.NoLease, 1},
		{orders.LeaseNoFencing, 1},
		{orders.SeparateKeyStore, 1},
		{orders.ClaimNeverReleased, 1},
		{orders.ErrorsNotSaved, 1},
		{orders.InMemoryLock, 2},
	}
	for _, c := range cases {
		t.Run(string(c.v), func(t *testing.T) {
			check, anomaly := orders.Expectation(c.v)
			res := certifyProcess(t, c.v, c.instances, check)
			assert.Positive(t, kindsOf(res.Report)[idemcheck.Kind(anomaly)], "%s by %s: got %v", anomaly, check, kindsOf(res.Report))
		})
	}
}

// With one instance the in-memory lock holds: the bug needs replicas.
func TestInMemoryLockHoldsOnOneInstance(t *testing.T) {
	res := certifyProcess(t, orders.InMemoryLock, 1, idemcheck.CheckConcurrentBurst)
	assert.Empty(t, res.Report.Anomalies)
}
