package runner

import (
	"net/url"
	"testing"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/stretchr/testify/assert"
)

// Every variant builds the request it names: the key header (or its
// absence) and the body.
func TestNewVariantsRequests(t *testing.T) {
	s := &session{Runner: &Runner{Policy: idemcheck.IETF(), Endpoint: scenarios.Endpoint{
		Base: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
		Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`),
	}}}
	in := idemcheck.Intent{ID: "ic-x-1", Key: "k-1", Seq: 1}
	header := func(v idemcheck.Variant) ([]string, string, string) {
		req, key := s.request(in, v)
		return req.Header.Values("Idempotency-Key"), key, string(req.Body)
	}
	vals, key, body := header(idemcheck.InvalidBody)
	assert.Equal(t, []string{"k-1"}, vals)
	assert.Equal(t, "k-1", key)
	assert.Equal(t, `{"customerId":-1,"totalCents":"not-a-number"}`, body)
	_, _, body = header(idemcheck.Corrected)
	assert.Equal(t, `{"customerId":"ic-x-1","totalCents":4000}`, body)

	vals, key, _ = header(idemcheck.EmptyKey)
	assert.Equal(t, []string{""}, vals, "the header is sent, empty")
	assert.Empty(t, key)
	vals, _, _ = header(idemcheck.OverlongKey)
	assert.Len(t, vals[0], idemcheck.MaxKeyLen+1)
	vals, _, _ = header(idemcheck.ListKey)
	assert.Equal(t, []string{"k-1,k-1-2"}, vals)
	a, _, ab := header(idemcheck.LongKey)
	b, _, bb := header(idemcheck.LongKeyTwin)
	assert.Equal(t, ab, bb, "the same body")
	assert.Len(t, a[0], idemcheck.LongKeyLen)
	assert.NotEqual(t, a[0], b[0])

	given := idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":-5}`)
	s.Endpoint.InvalidBody = &given
	_, _, body = header(idemcheck.InvalidBody)
	assert.Equal(t, `{"customerId":"ic-x-1","totalCents":-5}`, body)
}
