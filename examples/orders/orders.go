// Package orders is the reference-correct orders API that idemcheck
// certifies, and a zoo of variants that each carry exactly one classic
// idempotency bug.
//
// POST /orders creates an order and POST /payments a payment. A client
// whose request timed out cannot know whether it took effect, so it retries
// with the same Idempotency-Key, and the server must answer the retry with
// the first outcome instead of acting twice. The reference (reference.go)
// does that with these pieces, each closing one hole:
//
//   - keys belong to a client (the Authorization header, hashed), so one
//     client's key never answers another client's request;
//   - a fingerprint of the method, the path and the body's meaning, so a
//     key reused for a different request, or on the other endpoint, gets
//     422 instead of someone else's answer;
//   - an atomic claim (INSERT ... ON CONFLICT DO NOTHING), so that of N
//     concurrent copies of a request exactly one does the work and the
//     others get 409;
//   - the effect and the saved reply commit in one transaction, so a key is
//     never finished without its effect nor an effect left without its
//     reply; an attempt whose transaction fails releases its claim so that
//     a retry can succeed, while a decided outcome (a declined charge) is
//     saved and replayed like a success;
//   - a lease with a fencing token, so that a key whose owner died can be
//     taken over, and an owner that was merely slow cannot commit after it
//     lost the key.
//
// Each bug_*.go file replaces one of those pieces (see zoo.go) and says in
// its top comment what the bug is, how it arises in real code and which
// idemcheck check reports it; Expectation gives the same in machine form.
package orders

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// Variant selects the implementation: the reference, or one of the zoo's
// variants, each with one bug.
type Variant string

// Reference is the correct implementation (reference.go).
const Reference Variant = "reference"

// Variants lists the reference and then every buggy variant, in the zoo's
// order.
func Variants() []Variant { return zoo.Names() }

// ParseVariant turns a flag or environment value into a Variant.
func ParseVariant(s string) (Variant, error) { return zoo.Parse("orders", s) }

// Expectation names the idemcheck check that catches v's bug and the
// anomaly kind it reports: ("", "") for the reference, which must pass every
// check, and for a name that is not a variant. Some checks need a setup
// beyond the default request; the variant's file and zoo.go say which.
func Expectation(v Variant) (check, anomaly string) { return zoo.Expectation(v) }

// Needs says what idemcheck must be able to do to the running API for
// v's check to reach its bug (apikit.NeedsLink, apikit.NeedsProvider);
// "" when a run by URL reaches it too.
func Needs(v Variant) string { return zoo.Needs(v) }

// Config tunes a Server. The zero value is the production reference.
type Config struct {
	Variant Variant // default Reference
	// Lease is how long a claim is held before a retry may take it over.
	// It must be longer than the work normally takes, or healthy requests
	// get taken over (harmless thanks to fencing, but wasted). Default 30s.
	Lease time.Duration
	// Retention is how long finished keys are kept, which is also how long a
	// retry is recognised as one. Default 24h (ShortTTLRetention for the
	// ShortTTL variant: that is its bug).
	Retention time.Duration
	// SweepEvery is the period of the background sweeper; 0 runs none
	// (Sweep can still be called).
	SweepEvery time.Duration
	// Autocommit does the work in one autocommitted statement instead of a
	// transaction (autocommit.go): no BEGIN or COMMIT on the wire at all.
	// It replaces the work step, a variant's own included.
	Autocommit bool
	// AfterClaim is a test hook, called after the key is claimed and before
	// the work transaction. Nil in production.
	AfterClaim func(ctx context.Context, key string)
	// AfterCheck is a test hook, called by a flow that reads the key
	// before it claims it (upsert-claim), between the two; the reference
	// claims first and never calls it. Nil in production.
	AfterCheck func(ctx context.Context, key string)
	// Provider is the base URL of the payment provider an approved order
	// or payment is charged at (provider.go); empty charges nowhere.
	Provider string
	// ProviderTries is how many calls to the provider one attempt makes
	// before it gives up and fails (a provider 5xx, a timeout, a cut
	// reply, each retried with the same key); 0 means 3. With 1, a
	// provider failure is the client's 500 at once: its own retry, under
	// the same key, is what charges or replays the charge.
	ProviderTries int
	// AfterEffect is a test hook, called once the order or payment is
	// written and before the key is marked done (in the reference that is
	// inside the work transaction, before COMMIT). A hook that panics with
	// http.ErrAbortHandler stands for a process killed at that point. Nil
	// in production.
	AfterEffect func(ctx context.Context, key string)
}

// Server serves POST /orders, POST /payments, their lists (GET /orders,
// GET /payments, list.go) and GET /healthz.
type Server struct {
	pool        *pgxpool.Pool
	cfg         Config
	st          steps
	locks       keyLocks   // only the InMemoryLock variant uses it
	memKeys     memoryKeys // only the InMemoryKeyStore variant uses it
	mux         *http.ServeMux
	commits     atomic.Int64
	stopSweeper context.CancelFunc
	sweeperDone chan struct{}
}

// New returns a Server on pool, whose tables Migrate has created. It panics
// on an unknown Variant, a programming error (use ParseVariant on input).
func New(pool *pgxpool.Pool, cfg Config) *Server {
	z := zoo.Must("orders", cfg.Variant)
	cfg.Variant = z.Name
	st := referenceSteps()
	if z.Impl != nil {
		z.Impl(&st)
	}
	if cfg.Autocommit {
		st.work = (*Server).workAutocommit
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = st.retention
	}
	s := &Server{pool: pool, cfg: cfg, st: st, mux: http.NewServeMux(), sweeperDone: make(chan struct{})}

	for _, ep := range endpoints {
		s.mux.HandleFunc("POST "+ep.path, func(w http.ResponseWriter, r *http.Request) {
			r = withRequestID(r)
			if req, ok := s.parseRequest(w, r, ep); ok {
				s.st.create(s, w, r, req)
			}
		})
	}
	s.mux.HandleFunc("GET /orders", s.listOrders)
	s.mux.HandleFunc("GET /payments", s.listPayments)
	s.mux.HandleFunc("GET /healthz", apikit.Healthz)

	ctx, stop := context.WithCancel(context.Background())
	s.stopSweeper = stop
	if cfg.SweepEvery > 0 {
		go s.sweepLoop(ctx)
	} else {
		close(s.sweeperDone)
	}
	return s
}

// ServeHTTP implements http.Handler. Unknown paths get 404 and wrong methods
// 405 (from http.ServeMux).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Commits is the number of orders and payments this process committed: the
// server's own count of effects, for fault tests to compare with what
// clients saw. A saved decline is an answer, not an effect, and is not
// counted.
func (s *Server) Commits() int64 { return s.commits.Load() }

// Close stops the sweeper and waits for it. It does not close the pool.
func (s *Server) Close() {
	s.stopSweeper()
	<-s.sweeperDone
}

// Sweep deletes finished keys older than the retention, and running keys
// whose lease ran out longer than the retention ago (their owner is long
// dead and no retry came). A retry after that executes again: that is
// the published expiry policy, not a bug, as long as the retention is
// longer than any client's retry window.
func (s *Server) Sweep(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM idempotency_keys
		WHERE (status = 'done' AND finished_at < now() - make_interval(secs => $1))
		   OR (status = 'running' AND locked_until < now() - make_interval(secs => $1))`,
		s.cfg.Retention.Seconds())
	if err != nil {
		return 0, fmt.Errorf("orders: sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}

func (s *Server) sweepLoop(ctx context.Context) {
	defer close(s.sweeperDone)
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("orders: sweep failed", "err", err)
			}
		}
	}
}

// RoundRobin deals requests to the handlers in turn, as a load balancer
// deals them to replicas. Servers on one database behind it behave as one
// API run on several instances: they share every table and nothing in
// memory, which is what the InMemoryLock variant gets wrong.
func RoundRobin(handlers ...http.Handler) http.Handler {
	if len(handlers) == 0 {
		panic("orders: RoundRobin needs at least one handler")
	}
	hs := slices.Clone(handlers)
	var next atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs[(next.Add(1)-1)%uint64(len(hs))].ServeHTTP(w, r)
	})
}
