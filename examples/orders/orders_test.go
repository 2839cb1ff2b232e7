package orders_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

const (
	burstSize   = 32
	burstRounds = 20
)

// The central property: of many simultaneous copies of one request, exactly
// one creates the order; the others replay it or get 409, never 5xx, and
// only one reply presents itself as fresh.
func TestReferenceConcurrentBurst(t *testing.T) {
	f := newFixture(t, orders.Config{})
	for round := range burstRounds {
		key := newKey()
		results := f.burst(burstSize, key, orderBody)

		var orderID string
		var fresh, conflicts int
		for _, r := range results {
			switch r.status {
			case http.StatusCreated:
				id := r.orderID(t)
				if orderID == "" {
					orderID = id
				}
				require.Equal(t, orderID, id, "round %d: two different orders returned", round)
				if !r.replayed() {
					fresh++
				}
			case http.StatusConflict:
				conflicts++
				secs, err := strconv.Atoi(r.header.Get("Retry-After"))
				require.NoError(t, err, "round %d: 409 without a valid Retry-After", round)
				require.GreaterOrEqual(t, secs, 1)
			default:
				t.Fatalf("round %d: unexpected reply %d: %s", round, r.status, r.body)
			}
		}
		require.Equal(t, 1, f.ordersFor(key), "round %d", round)
		require.Equal(t, 1, fresh, "round %d: exactly one reply must be the fresh 201", round)
		require.Equal(t, int64(round+1), f.api.Commits(), "round %d", round)
		t.Logf("round %d: 1 order, %d replays, %d conflicts", round, burstSize-conflicts-1, conflicts)
	}
}

func TestReplay(t *testing.T) {
	f := newFixture(t, orders.Config{})
	key := newKey()

	first := f.post(key, orderBody)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.False(t, first.replayed())
	require.Equal(t, "application/json", first.header.Get("Content-Type"))

	again := f.post(key, orderBody)
	require.Equal(t, first.status, again.status)
	require.Equal(t, string(first.body), string(again.body), "the saved bytes, not a re-rendering")
	require.True(t, again.replayed())
	require.Equal(t, "application/json", again.header.Get("Content-Type"))

	// Member order and whitespace are not part of the request's meaning.
	reordered := f.post(key, " {\n \"totalCents\" : 1999,\t\"customerId\":\"cust-42\" }\n")
	require.Equal(t, string(first.body), string(reordered.body))
	require.True(t, reordered.replayed())

	require.Equal(t, 1, f.ordersFor(key))
	require.Equal(t, int64(1), f.api.Commits())
}

func TestKeyReusedWithDifferentRequest(t *testing.T) {
	f := newFixture(t, orders.Config{})
	key := newKey()
	require.Equal(t, http.StatusCreated, f.post(key, orderBody).status)

	requireProblem(t, f.post(key, `{"customerId":"cust-42","totalCents":2000}`), http.StatusUnprocessableEntity)
	requireProblem(t, f.post(key, `{"customerId":"cust-43","totalCents":1999}`), http.StatusUnprocessableEntity)
	require.Equal(t, 1, f.ordersFor(key))
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, orders.Config{})

	requireProblem(t, f.post("", orderBody), http.StatusBadRequest)
	requireProblem(t, f.post(strings.Repeat("k", 256), orderBody), http.StatusBadRequest)
	requireProblem(t, f.post("caf\xe9", orderBody), http.StatusBadRequest) // Latin-1, not UTF-8

	for _, body := range []string{
		``,
		`not json`,
		`[]`,
		`null`,
		`{"customerId":"c"}`,
		`{"customerId":"","totalCents":1}`,
		`{"customerId":7,"totalCents":1}`,
		`{"customerId":"nul\u0000","totalCents":1}`,
		`{"customerId":"c","totalCents":"1"}`,
		`{"customerId":"c","totalCents":1.5}`,
		`{"customerId":"c","totalCents":0}`,
		`{"customerId":"c","totalCents":1,"extra":true}`,
		`{"customerId":"c","totalCents":1} {}`,
	} {
		key := newKey()
		requireProblem(t, f.post(key, body), http.StatusBadRequest)
		// Nothing is stored for an invalid request: the key stays free.
		require.Zero(t, f.keyRows(key), "body %q", body)
	}

	req := newRequest(t, f.url, newKey(), orderBody)
	req.Header.Add("Idempotency-Key", "second")
	requireProblem(t, do(t, client, req), http.StatusBadRequest)

	// A list needs its filter: never the whole table.
	resp, err := client.Get(f.url + "/orders")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	del, err := http.NewRequest(http.MethodDelete, f.url+"/orders", nil)
	require.NoError(t, err)
	resp, err = client.Do(del)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	resp, err = client.Get(f.url + "/nowhere")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, err = client.Get(f.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Zero(t, f.api.Commits())
}

// stalls is an AfterClaim hook that holds the first len(claimed) claims:
// claim i closes claimed[i], then waits for resume[i] to be closed (or for
// the test to end, so that a failing test does not hang in cleanup).
type stalls struct {
	claimed, resume []chan struct{}
	calls           atomic.Int32
	ended           chan struct{}
}

func newStalls(n int) *stalls {
	s := &stalls{ended: make(chan struct{})}
	for range n {
		s.claimed = append(s.claimed, make(chan struct{}))
		s.resume = append(s.resume, make(chan struct{}))
	}
	return s
}

func (s *stalls) end() { close(s.ended) }

func (s *stalls) hook(ctx context.Context, _ string) {
	i := int(s.calls.Add(1)) - 1
	if i >= len(s.claimed) {
		return
	}
	close(s.claimed[i])
	select {
	case <-s.resume[i]:
	case <-s.ended:
	case <-ctx.Done():
	}
}

// postAsync sends one request from another goroutine.
func (f *fixture) postAsync(key, body string) <-chan result {
	ch := make(chan result, 1)
	req := newRequest(f.t, f.url, key, body)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			ch <- result{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- result{resp.StatusCode, resp.Header, b}
	}()
	return ch
}

// waitLeaseExpired waits until the key's lease ran out by the database clock.
func (f *fixture) waitLeaseExpired(key string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		var expired bool
		err := f.pool.QueryRow(context.Background(),
			`SELECT locked_until <= now() FROM idempotency_keys WHERE key = $1`, key).Scan(&expired)
		return err == nil && expired
	}, 5*time.Second, 10*time.Millisecond)
}

// An original that stalls past its lease is taken over by a retry; when it
// wakes up after the retry finished, fencing stops it from committing a
// second order and it answers with the retry's result.
func TestFencingOriginalResumesAfterRetryFinished(t *testing.T) {
	st := newStalls(1)
	f := newFixture(t, orders.Config{Lease: 200 * time.Millisecond, AfterClaim: st.hook})
	t.Cleanup(st.end) // before the fixture's cleanups, which wait for handlers
	key := newKey()

	original := f.postAsync(key, orderBody)
	<-st.claimed[0]

	// Within the lease a retry must wait.
	early := f.post(key, orderBody)
	requireProblem(t, early, http.StatusConflict)
	require.NotEmpty(t, early.header.Get("Retry-After"))

	f.waitLeaseExpired(key)
	retry := f.post(key, orderBody)
	require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
	require.False(t, retry.replayed(), "the retry took over and did the work")

	close(st.resume[0])
	resumed := <-original
	require.Equal(t, http.StatusCreated, resumed.status, string(resumed.body))
	require.True(t, resumed.replayed(), "the resumed original must answer with the retry's order")
	require.Equal(t, string(retry.body), string(resumed.body))

	require.Equal(t, 1, f.ordersFor(key))
	require.Equal(t, int64(1), f.api.Commits())
}

// The same, but the original wakes up while the retry still holds the key:
// only the token tells them apart (both see a running key), and the
// original must step aside with 409.
func TestFencingOriginalResumesWhileRetryWorks(t *testing.T) {
	st := newStalls(2)
	f := newFixture(t, orders.Config{Lease: 200 * time.Millisecond, AfterClaim: st.hook})
	t.Cleanup(st.end)
	key := newKey()

	original := f.postAsync(key, orderBody)
	<-st.claimed[0]
	f.waitLeaseExpired(key)
	retry := f.postAsync(key, orderBody)
	<-st.claimed[1]

	close(st.resume[0])
	resumed := <-original
	requireProblem(t, resumed, http.StatusConflict)
	require.Zero(t, f.ordersFor(key), "the fenced original must not commit")

	close(st.resume[1])
	r := <-retry
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.False(t, r.replayed())
	require.Equal(t, 1, f.ordersFor(key))
	require.Equal(t, int64(1), f.api.Commits())
}

// A failed work transaction releases the claim, so the retry does the work.
func TestFailedWorkReleasesClaim(t *testing.T) {
	f := newFixture(t, orders.Config{})
	// A constraint only this test's database has makes the INSERT fail
	// inside the work transaction: a real database error, no test hook.
	f.exec(`ALTER TABLE orders ADD CONSTRAINT reject_cust_doomed CHECK (customer_id <> 'cust-doomed')`)
	key := newKey()
	body := `{"customerId":"cust-doomed","totalCents":500}`

	requireProblem(t, f.post(key, body), http.StatusInternalServerError)
	require.Zero(t, f.keyRows(key), "the claim must be released")
	require.Zero(t, f.ordersFor(key))

	f.exec(`ALTER TABLE orders DROP CONSTRAINT reject_cust_doomed`)
	retry := f.post(key, body)
	require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
	require.False(t, retry.replayed())
	require.Equal(t, 1, f.ordersFor(key))
	require.Equal(t, int64(1), f.api.Commits())
}

// A claim whose owner died (lease long gone, no retry came) is not kept for
// ever either.
func TestSweep(t *testing.T) {
	f := newFixture(t, orders.Config{}) // retention 24h
	old, fresh := newKey(), newKey()
	require.Equal(t, http.StatusCreated, f.post(old, orderBody).status)
	require.Equal(t, http.StatusCreated, f.post(fresh, orderBody).status)
	f.exec(`UPDATE idempotency_keys SET finished_at = now() - interval '25 hours' WHERE key = $1`, old)

	deadOwner, slowOwner := newKey(), newKey()
	for key, expiredAgo := range map[string]string{deadOwner: "25 hours", slowOwner: "1 hour"} {
		f.exec(`INSERT INTO idempotency_keys (key, fingerprint, status, token, locked_until)
			VALUES ($1, '\x00', 'running', gen_random_uuid(), now() - $2::interval)`, key, expiredAgo)
	}

	n, err := f.api.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Zero(t, f.keyRows(old))
	require.Zero(t, f.keyRows(deadOwner))
	require.Equal(t, 1, f.keyRows(fresh))
	require.Equal(t, 1, f.keyRows(slowOwner))

	// Past retention a key is forgotten: that is the published expiry.
	again := f.post(old, orderBody)
	require.Equal(t, http.StatusCreated, again.status)
	require.False(t, again.replayed())
	require.Equal(t, 2, f.ordersFor(old))
}

func TestBackgroundSweeper(t *testing.T) {
	f := newFixture(t, orders.Config{Retention: time.Millisecond, SweepEvery: 20 * time.Millisecond})
	key := newKey()
	require.Equal(t, http.StatusCreated, f.post(key, orderBody).status)
	require.Eventually(t, func() bool { return f.keyRows(key) == 0 }, 5*time.Second, 20*time.Millisecond)
	f.api.Close()
	f.api.Close() // idempotent
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	pool := pgtest.Pool(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- orders.Migrate(context.Background(), pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, orders.Migrate(context.Background(), pool))
}

func TestParseVariant(t *testing.T) {
	for _, s := range []string{"reference", "check-then-insert"} {
		v, err := orders.ParseVariant(s)
		require.NoError(t, err)
		assert.Equal(t, orders.Variant(s), v)
	}
	_, err := orders.ParseVariant("nope")
	require.Error(t, err)
	_, err = orders.ParseVariant("")
	require.Error(t, err)
	require.Panics(t, func() { orders.New(nil, orders.Config{Variant: "nope"}) })
}
