package orders_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/targets/provider"
)

func withProvider(t *testing.T, v orders.Variant) (*fixture, *provider.Server) {
	t.Helper()
	p, err := provider.Start(provider.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return newFixture(t, orders.Config{Variant: v, Provider: p.URL()}), p
}

// chargeOf is the provider charge stored with the order created under key.
func (f *fixture) chargeOf(key string) string {
	f.t.Helper()
	var id *string
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT provider_charge_id FROM orders WHERE idempotency_key = $1`, key).Scan(&id))
	if id == nil {
		return ""
	}
	return *id
}

// The reference charges once, under a key derived from the client's, and
// stores the charge with the order; its replay charges nothing.
func TestProviderChargedOnceWithTheOrder(t *testing.T) {
	f, p := withProvider(t, orders.Reference)
	key := newKey()
	require.Equal(t, http.StatusCreated, f.post(key, orderBody).status)
	require.Equal(t, http.StatusCreated, f.post(key, orderBody).status)
	calls := p.Take()
	require.Len(t, calls, 1, "the replay never reaches the provider")
	assert.NotEmpty(t, calls[0].Key)
	assert.NotEqual(t, key, calls[0].Key, "derived from the client's key, not the key itself")
	assert.Contains(t, calls[0].Body, "cust-42", "the charge names its customer")
	assert.Equal(t, calls[0].Charge, f.chargeOf(key))
}

// Each fault on the provider link: the reference retries the call with the
// same key and charges once.
func TestProviderFaultsChargeOnce(t *testing.T) {
	for _, fault := range provider.Faults() {
		t.Run(string(fault.Kind), func(t *testing.T) {
			f, p := withProvider(t, orders.Reference)
			disarm := p.Arm(fault)
			key := newKey()
			r := f.post(key, orderBody)
			require.True(t, disarm(), "the fault acted")
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			assert.Equal(t, 1, p.Charges())
			assert.Equal(t, "ch_000001", f.chargeOf(key))
			keys := map[string]bool{}
			for _, c := range p.Take() {
				keys[c.Key] = true
			}
			assert.Len(t, keys, 1, "every call under one key")
		})
	}
}

// A failed attempt that charged: the reference's retry finds the charge;
// the fresh-key variant charges again.
func TestProviderRetryAfterAFailedAttempt(t *testing.T) {
	for _, c := range []struct {
		v       orders.Variant
		charges int
	}{{orders.Reference, 1}, {orders.FreshProviderKey, 2}, {orders.ProviderKeyPerAttempt, 2}} {
		t.Run(string(c.v), func(t *testing.T) {
			p, err := provider.Start(provider.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			f := newFixture(t, orders.Config{Variant: c.v, Provider: p.URL(), AfterEffect: crashFirst()})
			key := newKey()
			f.postCut(key, orderBody)
			// The crash left the claim running; take it over at once.
			f.exec(`UPDATE idempotency_keys SET locked_until = now() WHERE key = $1`, key)
			require.Equal(t, http.StatusCreated, f.post(key, orderBody).status)
			assert.Equal(t, 1, f.ordersFor(key), "the API's own table shows one order")
			assert.Equal(t, c.charges, p.Charges())
		})
	}
}
