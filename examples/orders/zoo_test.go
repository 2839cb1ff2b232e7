package orders_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// Every variant of the zoo must really carry its bug, or idemcheck proves
// nothing when it flags it; and the reference must not, or idemcheck is
// right to flag the reference. Each test below demonstrates one bug with
// plain HTTP requests and runs the very same demonstration against the
// reference.

// zooRounds bounds the races: the variants show their bug in the first
// round or two; the reference runs them all.
const zooRounds = 8

// zooCase runs show for v and then for the reference, each on a fresh
// database. show returns what it saw of the bug, "" when it did not show.
func zooCase(t *testing.T, v orders.Variant, show func(t *testing.T, v orders.Variant) string) {
	t.Helper()
	for _, variant := range []orders.Variant{v, orders.Reference} {
		t.Run(string(variant), func(t *testing.T) {
			got := show(t, variant)
			if variant == v {
				require.NotEmpty(t, got, "%s must show its bug", v)
				t.Logf("%s: %s", v, got)
			} else {
				require.Empty(t, got, "the reference must not show the bug of %s", v)
			}
		})
	}
}

func TestZooVariants(t *testing.T) {
	vs := orders.Variants()
	require.Len(t, vs, 29)
	require.Equal(t, orders.Reference, vs[0])
	check, anomaly := orders.Expectation(orders.Reference)
	require.Empty(t, check)
	require.Empty(t, anomaly)
	check, anomaly = orders.Expectation("nope")
	require.Empty(t, check+anomaly)

	seen := map[orders.Variant]bool{}
	for _, v := range vs {
		require.False(t, seen[v], "%s listed twice", v)
		seen[v] = true
		got, err := orders.ParseVariant(string(v))
		require.NoError(t, err)
		require.Equal(t, v, got)
		orders.New(nil, orders.Config{Variant: v}).Close()
		if v == orders.Reference {
			continue
		}
		check, anomaly := orders.Expectation(v)
		require.NotEmpty(t, check, v)
		require.NotEmpty(t, anomaly, v)
		// Each bug lives in its own file, named after the variant.
		_, err = os.Stat("bug_" + strings.ReplaceAll(string(v), "-", "_") + ".go")
		require.NoError(t, err, "the file of %s", v)
	}
	_, err := orders.ParseVariant("nope")
	require.ErrorContains(t, err, "in-memory-lock", "the error lists the known variants")
}

func TestZooCheckThenInsert(t *testing.T) {
	zooCase(t, orders.CheckThenInsert, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		for round := range zooRounds {
			key := newKey()
			f.burst(burstSize, key, orderBody)
			if n := f.ordersFor(key); n > 1 {
				return fmt.Sprintf("round %d: %d orders for one key", round, n)
			}
		}
		return ""
	})
}

// The narrow variant's window is one round trip: plain bursts mostly miss
// it, so the demonstration schedules it the way idemcheck does at the
// database link, in the handler's own test hook: each copy that passed the
// check waits (up to 2 s) until another has passed it too. The reference
// lets only one copy past its claim, which waits out the 2 s alone.
func TestZooNarrowCheckThenInsert(t *testing.T) {
	zooCase(t, orders.NarrowCheckThenInsert, func(t *testing.T, v orders.Variant) string {
		var mu sync.Mutex
		passed := map[string]chan struct{}{}
		arrive := func(_ context.Context, key string) {
			mu.Lock()
			ch, ok := passed[key]
			if !ok {
				ch = make(chan struct{})
				passed[key] = ch
				mu.Unlock()
				select {
				case <-ch:
				case <-time.After(2 * time.Second):
				}
				return
			}
			mu.Unlock()
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		f := newFixture(t, orders.Config{Variant: v, AfterClaim: arrive})
		key := newKey()
		f.burst(4, key, orderBody)
		if n := f.ordersFor(key); n > 1 {
			return fmt.Sprintf("%d orders for one key", n)
		}
		return ""
	})
}

func TestZooNoFingerprint(t *testing.T) {
	zooCase(t, orders.NoFingerprint, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		first := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		other := f.post(key, `{"customerId":"cust-42","totalCents":5000}`)
		require.Equal(t, 1, f.ordersFor(key))
		if other.status == http.StatusCreated {
			return fmt.Sprintf("a reused key with totalCents 5000 got %d with the 1999 order: %s", other.status, other.body)
		}
		requireProblem(t, other, http.StatusUnprocessableEntity)
		return ""
	})
}

func TestZooRawBytesFingerprint(t *testing.T) {
	zooCase(t, orders.RawBytesFingerprint, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		first := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		again := f.post(key, "{\n  \"totalCents\" : 1999,\n  \"customerId\" : \"cust-42\"\n}")
		require.Equal(t, 1, f.ordersFor(key))
		if again.status == http.StatusUnprocessableEntity {
			return "the same JSON, reordered, got 422"
		}
		require.Equal(t, http.StatusCreated, again.status, string(again.body))
		require.True(t, again.replayed())
		require.Equal(t, string(first.body), string(again.body))
		return ""
	})
}

func TestZooBodyOnlyFingerprint(t *testing.T) {
	zooCase(t, orders.BodyOnlyFingerprint, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		order := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, order.status, string(order.body))
		// The order's body is a valid payment on account.
		pay := f.postAt("/payments", key, orderBody, "")
		require.Zero(t, f.paymentsFor(key))
		if pay.status == http.StatusCreated && string(pay.body) == string(order.body) {
			return "POST /payments was answered with the order: " + string(pay.body)
		}
		requireProblem(t, pay, http.StatusUnprocessableEntity)
		return ""
	})
}

func TestZooDedupeByBody(t *testing.T) {
	zooCase(t, orders.DedupeByBody, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		k1, k2 := newKey(), newKey()
		first := f.post(k1, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		second := f.post(k2, orderBody)
		require.Equal(t, http.StatusCreated, second.status, string(second.body))
		if second.orderID(t) == first.orderID(t) {
			require.Zero(t, f.ordersFor(k2))
			return "a second intent with a new key got the first intent's order " + first.orderID(t)
		}
		require.False(t, second.replayed())
		require.Equal(t, 1, f.ordersFor(k2))
		return ""
	})
}

func TestZooKeyOptional(t *testing.T) {
	zooCase(t, orders.KeyOptional, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		r := f.post("", orderBody)
		if r.status == http.StatusCreated {
			require.Equal(t, int64(1), f.api.Commits())
			return "a request without Idempotency-Key created order " + r.orderID(t)
		}
		requireProblem(t, r, http.StatusBadRequest)
		require.Zero(t, f.api.Commits())
		return ""
	})
}

func TestZooUniqueViolation500(t *testing.T) {
	zooCase(t, orders.UniqueViolation500, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		for round := range zooRounds {
			key := newKey()
			var errs int
			for _, r := range f.burst(burstSize, key, orderBody) {
				if r.status >= 500 {
					errs++
				}
			}
			// The primary key still holds: one order, whatever the replies.
			require.Equal(t, 1, f.ordersFor(key), "round %d", round)
			if errs > 0 {
				return fmt.Sprintf("round %d: %d of %d concurrent copies got 5xx", round, errs, burstSize)
			}
		}
		return ""
	})
}

func TestZooRerenderReplay(t *testing.T) {
	zooCase(t, orders.RerenderReplay, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		first := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		again := f.post(key, orderBody)
		require.Equal(t, 1, f.ordersFor(key))
		require.Equal(t, first.orderID(t), again.orderID(t))
		if again.status != first.status || string(again.body) != string(first.body) {
			return fmt.Sprintf("the replay of a %d came back %d %s", first.status, again.status, again.body)
		}
		require.True(t, again.replayed())
		return ""
	})
}

func TestZooErrorsNotSaved(t *testing.T) {
	zooCase(t, orders.ErrorsNotSaved, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		body := fmt.Sprintf(`{"customerId":"cust-soft","totalCents":%d}`, orders.DeclineOnceCents)
		first := f.post(key, body)
		requireProblem(t, first, http.StatusPaymentRequired)
		retry := f.post(key, body)
		if retry.status == http.StatusCreated {
			require.Equal(t, 1, f.ordersFor(key))
			return "the retry of a declined charge was executed again and created order " + retry.orderID(t)
		}
		require.Equal(t, first.status, retry.status, string(retry.body))
		require.Equal(t, string(first.body), string(retry.body))
		require.True(t, retry.replayed())
		require.Zero(t, f.ordersFor(key))
		return ""
	})
}

func TestZooNotScopedPerClient(t *testing.T) {
	zooCase(t, orders.NotScopedPerClient, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		alice := f.postAt("/orders", key, orderBody, "Bearer alice")
		require.Equal(t, http.StatusCreated, alice.status, string(alice.body))
		bob := f.postAt("/orders", key, orderBody, "Bearer bob")
		require.Equal(t, http.StatusCreated, bob.status, string(bob.body))
		if bob.orderID(t) == alice.orderID(t) {
			return "bob, reusing alice's key, was sent alice's order " + alice.orderID(t)
		}
		require.False(t, bob.replayed())
		require.Equal(t, 2, f.ordersFor(key))
		return ""
	})
}

func TestZooShortTTL(t *testing.T) {
	zooCase(t, orders.ShortTTL, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		key := newKey()
		first := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		// A retry later than the short TTL, by the database clock, which is
		// the clock the sweep reads.
		require.Eventually(t, func() bool {
			var past bool
			err := f.pool.QueryRow(context.Background(),
				`SELECT finished_at < now() - make_interval(secs => $2) FROM idempotency_keys WHERE key = $1`,
				key, orders.ShortTTLRetention.Seconds()).Scan(&past)
			return err == nil && past
		}, 10*time.Second, 50*time.Millisecond)
		again := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, again.status, string(again.body))
		if again.orderID(t) != first.orderID(t) {
			require.Equal(t, 2, f.ordersFor(key))
			return "a retry after the TTL created a second order " + again.orderID(t)
		}
		require.True(t, again.replayed())
		require.Equal(t, 1, f.ordersFor(key))
		return ""
	})
}

func TestZooClaimNeverReleased(t *testing.T) {
	zooCase(t, orders.ClaimNeverReleased, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v})
		// A real database error inside the work transaction, then the
		// cause goes away, as a transient failure does.
		f.exec(`ALTER TABLE orders ADD CONSTRAINT reject_cust_doomed CHECK (customer_id <> 'cust-doomed')`)
		key := newKey()
		body := `{"customerId":"cust-doomed","totalCents":500}`
		requireProblem(t, f.post(key, body), http.StatusInternalServerError)
		f.exec(`ALTER TABLE orders DROP CONSTRAINT reject_cust_doomed`)

		retry := f.post(key, body)
		if retry.status == http.StatusConflict {
			return "the retry of a failed attempt got 409, Retry-After " + retry.header.Get("Retry-After")
		}
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		require.Equal(t, 1, f.ordersFor(key))
		return ""
	})
}

func TestZooNoLease(t *testing.T) {
	zooCase(t, orders.NoLease, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v, Lease: 200 * time.Millisecond, AfterClaim: crashFirst()})
		key := newKey()
		f.postCut(key, orderBody) // dies holding the claim
		f.waitLeaseExpired(key)
		var conflicts int
		for range 2 {
			r := f.post(key, orderBody)
			if r.status != http.StatusConflict {
				require.Equal(t, http.StatusCreated, r.status, string(r.body))
				require.False(t, r.replayed(), "the retry took over and did the work")
				require.Equal(t, 1, f.ordersFor(key))
				return ""
			}
			conflicts++
		}
		require.Zero(t, f.ordersFor(key))
		return fmt.Sprintf("%d retries after the dead owner's lease ran out all got 409", conflicts)
	})
}

func TestZooLeaseNoFencing(t *testing.T) {
	zooCase(t, orders.LeaseNoFencing, func(t *testing.T, v orders.Variant) string {
		st := newStalls(1)
		f := newFixture(t, orders.Config{Variant: v, Lease: 200 * time.Millisecond, AfterClaim: st.hook})
		t.Cleanup(st.end) // before the fixture's cleanups, which wait for handlers
		key := newKey()

		original := f.postAsync(key, orderBody)
		<-st.claimed[0]
		f.waitLeaseExpired(key)
		retry := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		close(st.resume[0])
		resumed := <-original
		require.Equal(t, http.StatusCreated, resumed.status, string(resumed.body))

		if n := f.ordersFor(key); n > 1 {
			return fmt.Sprintf("the paused original resumed after a retry took over and committed too: %d orders", n)
		}
		require.Equal(t, string(retry.body), string(resumed.body))
		return ""
	})
}

func TestZooSeparateKeyStore(t *testing.T) {
	zooCase(t, orders.SeparateKeyStore, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v, Lease: 200 * time.Millisecond, AfterEffect: crashFirst()})
		key := newKey()
		f.postCut(key, orderBody) // dies after writing the order
		f.waitLeaseExpired(key)
		retry := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		if n := f.ordersFor(key); n > 1 {
			return fmt.Sprintf("a crash between the order's commit and the key's left %d orders after the retry", n)
		}
		require.Equal(t, 1, f.ordersFor(key))
		return ""
	})
}

// replicas serves n instances of the API on one database behind one URL.
func replicas(t *testing.T, cfg orders.Config, n int) *fixture {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, orders.Migrate(context.Background(), pool))
	var hs []http.Handler
	var first *orders.Server
	for range n {
		api := orders.New(pool, cfg)
		t.Cleanup(api.Close)
		hs = append(hs, api)
		if first == nil {
			first = api
		}
	}
	ts := httptest.NewServer(orders.RoundRobin(hs...))
	t.Cleanup(ts.Close)
	return &fixture{t: t, pool: pool, api: first, url: ts.URL}
}

func TestZooInMemoryLock(t *testing.T) {
	zooCase(t, orders.InMemoryLock, func(t *testing.T, v orders.Variant) string {
		f := replicas(t, orders.Config{Variant: v}, 2)
		for round := range zooRounds {
			key := newKey()
			f.burst(burstSize, key, orderBody)
			if n := f.ordersFor(key); n > 1 {
				return fmt.Sprintf("round %d: %d orders for one key across two instances", round, n)
			}
		}
		return ""
	})
}

// With one instance the in-memory lock is correct, which is why it
// survives until the service is scaled out.
func TestInMemoryLockOneInstanceIsCorrect(t *testing.T) {
	f := newFixture(t, orders.Config{Variant: orders.InMemoryLock})
	for round := range 3 {
		key := newKey()
		var fresh int
		for _, r := range f.burst(burstSize, key, orderBody) {
			require.Equal(t, http.StatusCreated, r.status, "round %d: %s", round, r.body)
			if !r.replayed() {
				fresh++
			}
		}
		require.Equal(t, 1, fresh, "round %d", round)
		require.Equal(t, 1, f.ordersFor(key), "round %d", round)
	}
}

func TestZooInMemoryKeyStore(t *testing.T) {
	zooCase(t, orders.InMemoryKeyStore, func(t *testing.T, v orders.Variant) string {
		pool := pgtest.Pool(t)
		require.NoError(t, orders.Migrate(context.Background(), pool))
		serve := func() *fixture {
			api := orders.New(pool, orders.Config{Variant: v})
			t.Cleanup(api.Close)
			ts := httptest.NewServer(api)
			t.Cleanup(ts.Close)
			return &fixture{t: t, pool: pool, api: api, url: ts.URL}
		}
		before := serve()
		key := newKey()
		first := before.post(key, orderBody)
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		again := before.post(key, orderBody)
		require.True(t, again.replayed(), "before the restart the key is known")
		// A restart: a new process on the same database.
		after := serve()
		retry := after.post(key, orderBody)
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		if retry.orderID(t) != first.orderID(t) {
			require.Equal(t, 2, after.ordersFor(key))
			return "after a restart the retry created a second order " + retry.orderID(t)
		}
		require.True(t, retry.replayed())
		require.Equal(t, 1, after.ordersFor(key))
		return ""
	})
}

func TestZooKeySavedAfterCommit(t *testing.T) {
	zooCase(t, orders.KeySavedAfterCommit, func(t *testing.T, v orders.Variant) string {
		f := newFixture(t, orders.Config{Variant: v, Lease: 200 * time.Millisecond, AfterEffect: crashFirst()})
		key := newKey()
		f.postCut(key, orderBody) // dies after writing the order
		f.waitLeaseExpired(key)
		retry := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		if n := f.ordersFor(key); n > 1 {
			return fmt.Sprintf("a crash between the order's commit and the key's UPDATE left %d orders after the retry", n)
		}
		require.Equal(t, 1, f.ordersFor(key))
		return ""
	})
}

func TestZooCheckInTransaction(t *testing.T) {
	zooCase(t, orders.CheckInTransaction, func(t *testing.T, v orders.Variant) string {
		st := newStalls(1)
		f := newFixture(t, orders.Config{Variant: v, AfterClaim: st.hook})
		t.Cleanup(st.end) // before the fixture's cleanups, which wait for handlers
		key := newKey()
		original := f.postAsync(key, orderBody)
		<-st.claimed[0] // the first attempt is running, its transaction open
		retry := f.post(key, orderBody)
		close(st.resume[0])
		first := <-original
		require.Equal(t, http.StatusCreated, first.status, string(first.body))
		if n := f.ordersFor(key); n > 1 {
			require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
			return fmt.Sprintf("a retry sent while the first attempt was running got %d and left %d orders", retry.status, n)
		}
		requireProblem(t, retry, http.StatusConflict)
		require.Equal(t, 1, f.ordersFor(key))
		return ""
	})
}

// The upsert claim's bug needs one copy to read the key, another to claim
// it and finish, and only then the first to claim: the interleaving
// idemcheck schedules by releasing held writes in turn. The demonstration
// gets it from the handler's own test hook between its check and its
// claim: the first copy past the check waits for a second one, which then
// waits for the first copy's reply before it claims. The reference claims
// first (no check to wait after): its copies race as they come, and the
// claim lets one of them work.
func TestZooUpsertClaim(t *testing.T) {
	zooCase(t, orders.UpsertClaim, func(t *testing.T, v orders.Variant) string {
		var mu sync.Mutex
		type pair struct{ checked, answered chan struct{} }
		pairs := map[string]*pair{}
		get := func(key string) *pair {
			mu.Lock()
			defer mu.Unlock()
			p, ok := pairs[key]
			if !ok {
				p = &pair{checked: make(chan struct{}), answered: make(chan struct{})}
				pairs[key] = p
			}
			return p
		}
		var first sync.Map
		hook := func(_ context.Context, key string) {
			p := get(key)
			if _, loaded := first.LoadOrStore(key, true); !loaded {
				select { // the first copy goes on once a second has read the key
				case <-p.checked:
				case <-time.After(2 * time.Second):
				}
				return
			}
			close(p.checked)
			select { // the second claims once the first was answered
			case <-p.answered:
			case <-time.After(2 * time.Second):
			}
		}
		f := newFixture(t, orders.Config{Variant: v, AfterCheck: hook})
		for round := range zooRounds {
			key := newKey()
			a, b := f.postAsync(key, orderBody), f.postAsync(key, orderBody)
			var got []result
			select {
			case r := <-a:
				got = append(got, r)
				close(get(key).answered)
				got = append(got, <-b)
			case r := <-b:
				got = append(got, r)
				close(get(key).answered)
				got = append(got, <-a)
			}
			if n := f.ordersFor(key); n > 1 {
				return fmt.Sprintf("round %d: %d orders for one key, answered %d and %d", round, n, got[0].status, got[1].status)
			}
		}
		return ""
	})
}

func TestZooReleaseOnError(t *testing.T) {
	zooCase(t, orders.ReleaseOnError, func(t *testing.T, v orders.Variant) string {
		f, link := newFixtureOnLink(t, orders.Config{Variant: v})
		key := newKey()
		require.Equal(t, http.StatusCreated, f.post(newKey(), orderBody).status, "a clean order first")
		// The connection drops after the database committed the work and
		// before its answer reached the server: its COMMIT, the second of
		// the claim's and the work's writes.
		disarm, err := link.Arm(faults.DBCutAfter("", 2))
		require.NoError(t, err)
		first := f.post(key, orderBody)
		landed := disarm()
		require.True(t, landed.Acted(), "the cut landed")
		require.Equal(t, 1, f.ordersFor(key), "the work committed")
		retry := f.post(key, orderBody)
		require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
		if n := f.ordersFor(key); n != 1 {
			return fmt.Sprintf("the first attempt got %d after its COMMIT went through; the retry made order %s: %d orders for one key",
				first.status, retry.orderID(t), n)
		}
		require.True(t, retry.replayed(), "the retry is the replay of the committed order")
		return ""
	})
}
