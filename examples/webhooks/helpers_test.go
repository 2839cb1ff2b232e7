package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/webhooks"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// fixture is one consumer over real HTTP on loopback, on a fresh database.
type fixture struct {
	t    *testing.T
	pool *pgxpool.Pool
	api  *webhooks.Server
	url  string
}

func newFixture(t *testing.T, cfg webhooks.Config) *fixture {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, webhooks.Migrate(context.Background(), pool))
	api := webhooks.New(pool, cfg)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return &fixture{t: t, pool: pool, api: api, url: ts.URL}
}

type result struct {
	status int
	body   []byte
}

// deliveryStatus is the status member of a 200 reply.
func (r result) deliveryStatus(t *testing.T) string {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var b struct{ Status string }
	require.NoError(t, json.Unmarshal(r.body, &b), string(r.body))
	return b.Status
}

var client = &http.Client{Timeout: 30 * time.Second}

func send(c *http.Client, url, body string) result {
	resp, err := c.Post(url+"/webhooks", "application/json", strings.NewReader(body))
	if err != nil {
		return result{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, b}
}

func (f *fixture) deliver(body string) result {
	f.t.Helper()
	r := send(client, f.url, body)
	require.NotEqual(f.t, -1, r.status, string(r.body))
	return r
}

// burst delivers n copies of one event at once, each on its own
// connection: the connections are opened first, then all goroutines wait
// on a barrier.
func (f *fixture) burst(n int, body string) []result {
	f.t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var warm sync.WaitGroup
	for range n {
		warm.Go(func() {
			resp, err := c.Get(f.url + "/healthz")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	warm.Wait()

	results := make([]result, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			results[i] = send(c, f.url, body)
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	return results
}

// ledgerRows counts the event's effects.
func (f *fixture) ledgerRows(eventID string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM ledger WHERE event_id = $1`, eventID).Scan(&n))
	return n
}

func newEventID() string { return "evt_" + uuid.NewString() }

// eventBody is a payment event for customer cust-42.
func eventBody(id string, failFirst bool) string {
	return fmt.Sprintf(`{"eventId":%q,"type":"payment.succeeded","data":{"customerId":"cust-42","amountCents":2500,"failFirst":%t}}`, id, failFirst)
}

func requireProblem(t *testing.T, r result, status int) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var p struct {
		Title  string
		Status int
	}
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.Equal(t, status, p.Status)
	require.NotEmpty(t, p.Title)
}
