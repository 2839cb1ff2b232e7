package orders_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// fixture is one orders server over real HTTP on loopback, on a fresh
// database.
type fixture struct {
	t    *testing.T
	pool *pgxpool.Pool
	api  *orders.Server
	url  string
}

func newFixture(t *testing.T, cfg orders.Config) *fixture {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, orders.Migrate(context.Background(), pool))
	api := orders.New(pool, cfg)
	t.Cleanup(api.Close)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return &fixture{t: t, pool: pool, api: api, url: ts.URL}
}

// newFixtureOnLink is newFixture with the server's database behind a
// database link whose watched proxy the test arms with faults; the
// fixture's own pool, which counts, connects directly.
func newFixtureOnLink(t *testing.T, cfg orders.Config) (*fixture, *faults.Link) {
	t.Helper()
	dsn := pgtest.DSN(t)
	direct, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(direct.Close)
	require.NoError(t, orders.Migrate(context.Background(), direct))
	cfgDSN, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	link, err := faults.NewDBLink(net.JoinHostPort(cfgDSN.ConnConfig.Host, strconv.Itoa(int(cfgDSN.ConnConfig.Port))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	addr, err := link.WatchedAddr()
	require.NoError(t, err)
	linked, err := faults.RewriteDSN(dsn, addr)
	require.NoError(t, err)
	pool, err := pgxpool.New(context.Background(), linked)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	api := orders.New(pool, cfg)
	t.Cleanup(api.Close)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return &fixture{t: t, pool: direct, api: api, url: ts.URL}, link
}

type result struct {
	status int
	header http.Header
	body   []byte
}

// orderID is the orderId of a 201 body.
func (r result) orderID(t *testing.T) string {
	t.Helper()
	var b struct{ OrderID string }
	require.NoError(t, json.Unmarshal(r.body, &b), string(r.body))
	require.NotEmpty(t, b.OrderID)
	return b.OrderID
}

// crashFirst is a hook that kills the first attempt reaching it, as a
// process killed at that point would be: the handler stops there, its open
// transaction rolls back, and the client's connection is cut without a
// reply. Later attempts pass.
func crashFirst() func(context.Context, string) {
	var calls atomic.Int32
	return func(context.Context, string) {
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler)
		}
	}
}

func (r result) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

func newRequest(t *testing.T, url, key, body string) *http.Request {
	t.Helper()
	return newRequestAt(t, url, "/orders", key, body, "")
}

// newRequestAt is newRequest to another path, with an Authorization
// header unless auth is empty.
func newRequestAt(t *testing.T, url, path, key, body, auth string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	// Go's Transport silently resends a request carrying Idempotency-Key
	// when a reused connection dies; without GetBody it cannot, so every
	// send here is exactly one attempt.
	req.GetBody = nil
	return req
}

func do(t *testing.T, c *http.Client, req *http.Request) result {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return result{resp.StatusCode, resp.Header, body}
}

var client = &http.Client{Timeout: 30 * time.Second}

func (f *fixture) post(key, body string) result {
	f.t.Helper()
	return do(f.t, client, newRequest(f.t, f.url, key, body))
}

// postAt sends one request to path, as the client auth ("" for none).
func (f *fixture) postAt(path, key, body, auth string) result {
	f.t.Helper()
	return do(f.t, client, newRequestAt(f.t, f.url, path, key, body, auth))
}

// postCut sends one request whose handler is expected to die (a crash
// hook): the client gets no reply at all.
func (f *fixture) postCut(key, body string) {
	f.t.Helper()
	resp, err := client.Do(newRequest(f.t, f.url, key, body))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.t.Fatalf("a reply came back from an attempt that was to crash: %d %s", resp.StatusCode, b)
	}
}

// burst sends n copies of one request at once, each on its own connection:
// the connections are opened first, then all goroutines wait on a barrier.
func (f *fixture) burst(n int, key, body string) []result {
	f.t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	// Warm up: n concurrent requests open n connections, left idle.
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
		req := newRequest(f.t, f.url, key, body)
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			resp, err := c.Do(req)
			if err != nil {
				results[i] = result{status: -1, body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			results[i] = result{resp.StatusCode, resp.Header, b}
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	return results
}

// ordersFor counts the orders created under key: the effect, as opposed to
// what the replies claim.
func (f *fixture) ordersFor(key string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM orders WHERE idempotency_key = $1`, key).Scan(&n))
	return n
}

// paymentsFor counts the payments created under key.
func (f *fixture) paymentsFor(key string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM payments WHERE idempotency_key = $1`, key).Scan(&n))
	return n
}

func (f *fixture) keyRows(key string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM idempotency_keys WHERE key = $1`, key).Scan(&n))
	return n
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	_, err := f.pool.Exec(context.Background(), sql, args...)
	require.NoError(f.t, err)
}

func newKey() string { return uuid.NewString() }

const orderBody = `{"customerId":"cust-42","totalCents":1999}`

func requireProblem(t *testing.T, r result, status int) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	var p struct {
		Title  string
		Status int
	}
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.Equal(t, status, p.Status)
	require.NotEmpty(t, p.Title)
}
