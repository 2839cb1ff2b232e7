package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/webhooks"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

const (
	burstSize   = 16
	burstRounds = 8
)

func TestReferenceRedelivery(t *testing.T) {
	f := newFixture(t, webhooks.Config{})
	id := newEventID()
	require.Equal(t, "processed", f.deliver(eventBody(id, false)).deliveryStatus(t))
	require.Equal(t, "duplicate", f.deliver(eventBody(id, false)).deliveryStatus(t))
	// Unknown members are tolerated: senders add fields over time.
	require.Equal(t, "duplicate", f.deliver(`{"eventId":"`+id+`","type":"payment.succeeded","livemode":false,
		"data":{"customerId":"cust-42","amountCents":2500,"currency":"eur"}}`).deliveryStatus(t))
	require.Equal(t, 1, f.ledgerRows(id))
	require.Equal(t, int64(1), f.api.Commits())

	other := newEventID()
	require.Equal(t, "processed", f.deliver(eventBody(other, false)).deliveryStatus(t))
	require.Equal(t, 1, f.ledgerRows(other))
	require.Equal(t, int64(2), f.api.Commits())
}

func TestReferenceConcurrentRedelivery(t *testing.T) {
	f := newFixture(t, webhooks.Config{})
	for round := range 3 {
		id := newEventID()
		var processed int
		for _, r := range f.burst(burstSize, eventBody(id, false)) {
			if r.deliveryStatus(t) == "processed" {
				processed++
			}
		}
		require.Equal(t, 1, processed, "round %d", round)
		require.Equal(t, 1, f.ledgerRows(id), "round %d", round)
	}
}

func TestBadDeliveries(t *testing.T) {
	f := newFixture(t, webhooks.Config{})
	for _, body := range []string{
		``,
		`not json`,
		`[]`,
		`{}`,
		`{"type":"t","data":{"customerId":"c","amountCents":1}}`,
		`{"eventId":"","type":"t","data":{"customerId":"c","amountCents":1}}`,
		`{"eventId":7,"type":"t","data":{"customerId":"c","amountCents":1}}`,
		`{"eventId":"e","data":{"customerId":"c","amountCents":1}}`,
		`{"eventId":"e","type":"t"}`,
		`{"eventId":"e","type":"t","data":[]}`,
		`{"eventId":"e","type":"t","data":{"amountCents":1}}`,
		`{"eventId":"e","type":"t","data":{"customerId":"c","amountCents":0}}`,
		`{"eventId":"e","type":"t","data":{"customerId":"c","amountCents":1.5}}`,
		`{"eventId":"e","type":"t","data":{"customerId":"c","amountCents":"1"}}`,
		`{"eventId":"nul\u0000","type":"t","data":{"customerId":"c","amountCents":1}}`,
		`{"eventId":"e","type":"t","data":{"customerId":"c","amountCents":1}} {}`,
	} {
		requireProblem(t, f.deliver(body), http.StatusBadRequest)
	}
	var n int
	require.NoError(t, f.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&n))
	require.Zero(t, n, "nothing is recorded for an invalid delivery")

	resp, err := client.Get(f.url + "/webhooks")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Zero(t, f.api.Commits())
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	pool := pgtest.Pool(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- webhooks.Migrate(context.Background(), pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, webhooks.Migrate(context.Background(), pool))
}

func TestVariants(t *testing.T) {
	vs := webhooks.Variants()
	require.Equal(t, []webhooks.Variant{webhooks.Reference, webhooks.FlakyReference, webhooks.DedupeApart, webhooks.CheckThenInsert,
		webhooks.DedupeDelivery, webhooks.SignedAfterWork}, vs)
	for _, v := range vs {
		got, err := webhooks.ParseVariant(string(v))
		require.NoError(t, err)
		require.Equal(t, v, got)
		check, anomaly := webhooks.Expectation(v)
		if v == webhooks.Reference || v == webhooks.FlakyReference {
			require.Empty(t, check+anomaly)
			continue
		}
		if v == webhooks.SignedAfterWork {
			require.Equal(t, "signature", check)
		} else {
			require.Equal(t, "webhook-redelivery", check)
		}
		require.NotEmpty(t, anomaly)
		_, err = os.Stat("bug_" + strings.ReplaceAll(string(v), "-", "_") + ".go")
		require.NoError(t, err, "the file of %s", v)
	}
	for _, bad := range []string{"", "nope"} {
		_, err := webhooks.ParseVariant(bad)
		require.Error(t, err)
	}
	require.Panics(t, func() { webhooks.New(nil, webhooks.Config{Variant: "nope"}) })
}

// zooCase runs show for v and then for the reference, each on a fresh
// database: the variant must show its bug ("" means it did not) and the
// reference must not.
func zooCase(t *testing.T, v webhooks.Variant, show func(t *testing.T, f *fixture) string) {
	t.Helper()
	for _, variant := range []webhooks.Variant{v, webhooks.Reference} {
		t.Run(string(variant), func(t *testing.T) {
			got := show(t, newFixture(t, webhooks.Config{Variant: variant}))
			if variant == v {
				require.NotEmpty(t, got, "%s must show its bug", v)
				t.Logf("%s: %s", v, got)
			} else {
				require.Empty(t, got, "the reference must not show the bug of %s", v)
			}
		})
	}
}

// A first delivery that fails, then its redelivery.
func TestZooDedupeApart(t *testing.T) {
	zooCase(t, webhooks.DedupeApart, func(t *testing.T, f *fixture) string {
		id := newEventID()
		requireProblem(t, f.deliver(eventBody(id, true)), http.StatusInternalServerError)
		require.Zero(t, f.ledgerRows(id))
		again := f.deliver(eventBody(id, true)).deliveryStatus(t)
		if n := f.ledgerRows(id); n == 0 {
			require.Equal(t, "duplicate", again)
			require.Zero(t, f.api.Commits())
			return "the redelivery after a failed first delivery was skipped as a duplicate; the ledger holds nothing"
		}
		require.Equal(t, "processed", again)
		require.Equal(t, 1, f.ledgerRows(id))
		require.Equal(t, int64(1), f.api.Commits())
		return ""
	})
}

// Redeliveries that arrive together.
func TestZooCheckThenInsert(t *testing.T) {
	zooCase(t, webhooks.CheckThenInsert, func(t *testing.T, f *fixture) string {
		for round := range burstRounds {
			id := newEventID()
			for _, r := range f.burst(burstSize, eventBody(id, false)) {
				require.Equal(t, http.StatusOK, r.status, "round %d: %s", round, r.body)
			}
			if n := f.ledgerRows(id); n > 1 {
				return fmt.Sprintf("round %d: %d ledger rows for one event delivered %d times at once", round, n, burstSize)
			}
			require.Equal(t, 1, f.ledgerRows(id), "round %d", round)
		}
		return ""
	})
}

// The check-then-insert consumer survives a failed first delivery: its bug
// is only the race.
func TestCheckThenInsertRedeliveryAfterFailure(t *testing.T) {
	f := newFixture(t, webhooks.Config{Variant: webhooks.CheckThenInsert})
	id := newEventID()
	requireProblem(t, f.deliver(eventBody(id, true)), http.StatusInternalServerError)
	require.Equal(t, "processed", f.deliver(eventBody(id, true)).deliveryStatus(t))
	require.Equal(t, "duplicate", f.deliver(eventBody(id, true)).deliveryStatus(t))
	require.Equal(t, 1, f.ledgerRows(id))
}

// A signed consumer refuses an unsigned or stale delivery with 401 before
// any work, and applies one signed as its sender signs, under each scheme
// (Config.Scheme; a GitHub or Shopify delivery carries no time to be
// stale).
func TestSignedConsumer(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, scheme := range webhooks.Schemes() {
		t.Run(string(scheme), func(t *testing.T) {
			f := newFixture(t, webhooks.Config{Secret: secret, Scheme: scheme})
			g := scenarios.Signing{Scheme: string(scheme), Secret: secret}
			id := "evt_" + uuid.NewString()
			body := fmt.Sprintf(`{"eventId":%q,"type":"payment.succeeded","data":{"customerId":"c-%s","amountCents":500}}`, id, id)
			post := func(skew time.Duration, sign bool) int {
				req, err := http.NewRequest("POST", f.url+"/webhooks", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				if sign {
					g.Sign(req.Header, id, []byte(body), time.Now().Add(skew))
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				_, _ = io.ReadAll(resp.Body)
				return resp.StatusCode
			}
			assert.Equal(t, http.StatusUnauthorized, post(0, false))
			if g.SignsTime() {
				assert.Equal(t, http.StatusUnauthorized, post(-webhooks.Tolerance-time.Minute, true))
			}
			assert.Equal(t, int64(0), f.api.Commits())
			assert.Equal(t, http.StatusOK, post(-time.Minute, true))
			assert.Equal(t, http.StatusOK, post(0, true))
			assert.Equal(t, int64(1), f.api.Commits())
		})
	}
}
