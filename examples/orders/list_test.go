package orders_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
)

// list GETs path and decodes its data array.
func (f *fixture) list(path string) []map[string]any {
	f.t.Helper()
	resp, err := client.Get(f.url + path)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	require.Equal(f.t, http.StatusOK, resp.StatusCode, path)
	require.Equal(f.t, "application/json", resp.Header.Get("Content-Type"))
	var out struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotNil(f.t, out.Data, "an empty list is [], not null")
	return out.Data
}

// The lists read back exactly what was created: one order for a key however
// often it is replayed, two for two keys, none for another customer; and
// payments by order reference and on account apart.
func TestListsCountEffects(t *testing.T) {
	f := newFixture(t, orders.Config{})
	require.Empty(t, f.list("/orders?customerId=nobody"))

	key := newKey()
	first := f.post(key, `{"customerId":"c-list","totalCents":4000}`)
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, http.StatusCreated, f.post(key, `{"customerId":"c-list","totalCents":4000}`).status)
	got := f.list("/orders?customerId=c-list")
	require.Len(t, got, 1)
	require.Equal(t, first.orderID(t), got[0]["orderId"])
	require.Equal(t, "c-list", got[0]["customerId"])
	require.EqualValues(t, 4000, got[0]["totalCents"])

	require.Equal(t, http.StatusCreated, f.post(newKey(), `{"customerId":"c-list","totalCents":4000}`).status)
	require.Len(t, f.list("/orders?customerId=c-list"), 2)
	require.Empty(t, f.list("/orders?customerId=c-other"))

	ref := "o/1 & 2" // escaped in the query, matched exactly
	require.Equal(t, http.StatusCreated, f.postAt("/payments", newKey(), `{"orderRef":"o/1 & 2","amountCents":10}`, "").status)
	require.Equal(t, http.StatusCreated, f.postAt("/payments", newKey(), `{"customerId":"c-list","totalCents":10}`, "").status)
	byRef := f.list("/payments?orderRef=" + url.QueryEscape(ref))
	require.Len(t, byRef, 1)
	require.Equal(t, ref, byRef[0]["orderRef"])
	require.Len(t, f.list("/payments?customerId=c-list"), 1)

	resp, err := client.Get(f.url + "/payments?orderRef=a&customerId=b")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
