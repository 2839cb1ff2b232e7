// Package payments is a queue-backed payments API that idemcheck
// certifies, answering 202 Accepted and doing its work later in a
// background worker, and variants of it that each carry one classic bug of
// such services.
//
// POST /payments takes {"customerId", "amountCents"} under an
// Idempotency-Key and answers 202 with the payment's id and "pending", and
// its status monitor, GET /payments/{id}, in Location: the
// payment itself is made by a River job (github.com/riverqueue/river, on
// the same PostgreSQL), whose worker takes 100-500 ms before it writes the
// payments row, so the effect lands after the reply. Like every job queue,
// River runs a job at least once: this worker's follow-up step (sending the
// receipt) fails on each job's first attempt after the payment committed,
// so River retries every job once, 1.5 s later, as a real queue retries a
// worker whose mail server hiccuped.
//
// The reference claims the key and inserts the job in one transaction
// (the key's row and the job commit together or not at all, and a
// concurrent duplicate waits on the key's row and gets the replay), makes
// the job unique per key, and keys the worker's effect by the payment's id
// (payments_made's primary key, claimed in the payment's own transaction),
// so the retried job finds its payment made and writes nothing.
//
// Variants, one bug each (Expectation gives the check and anomaly kind
// that catch it):
//   - enqueue-outside-tx: the key is looked up, the job enqueued and the
//     key saved in three separate statements, none in a transaction:
//     concurrent duplicates each pass the lookup and answer 202 with a
//     payment id of their own, though the job's uniqueness per key keeps
//     River from running more than one job (multiple-created);
//   - no-unique-job: the same, and the job has no uniqueness either: every
//     duplicate that passed the lookup enqueues a job, each making a
//     payment (duplicate-effect);
//   - unkeyed-effect: the worker writes its payment with no key, so the
//     retry of its job after the receipt failed writes a second one, about
//     two seconds after the 202 (duplicate-effect, or late-duplicate-effect
//     when it lands after its check's counts settled).
package payments

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// Variant selects how POST /payments and its worker guard against
// duplicates.
type Variant string

// The variants: the reference, then one bug each.
const (
	Reference        Variant = "reference"
	EnqueueOutsideTx Variant = "enqueue-outside-tx"
	NoUniqueJob      Variant = "no-unique-job"
	UnkeyedEffect    Variant = "unkeyed-effect"
)

// impl is what a variant changes: the handler's enqueue, and the worker's
// write.
type impl struct {
	enqueue func(s *Server, ctx context.Context, p request) (status int, body []byte, replayed bool, err error)
	keyed   bool
}

var variants = apikit.Variants[Variant, impl]{
	{Name: Reference, Impl: impl{enqueue: (*Server).enqueueReference, keyed: true}},
	{Name: EnqueueOutsideTx, Check: "concurrent-burst", Anomaly: "multiple-created", Impl: impl{enqueue: enqueueOutsideTx(true), keyed: true}},
	{Name: NoUniqueJob, Check: "concurrent-burst", Anomaly: "duplicate-effect", Impl: impl{enqueue: enqueueOutsideTx(false), keyed: true}},
	{Name: UnkeyedEffect, Check: "sequential-replay", Anomaly: "duplicate-effect", Impl: impl{enqueue: (*Server).enqueueReference}},
}

// Variants lists the reference and then every buggy variant.
func Variants() []Variant { return variants.Names() }

// ParseVariant turns a flag or environment value into a Variant.
func ParseVariant(s string) (Variant, error) { return variants.Parse("payments", s) }

// Expectation names the idemcheck check that catches v's bug and the
// anomaly kind it reports: ("", "") for the reference.
func Expectation(v Variant) (check, anomaly string) { return variants.Expectation(v) }

// RetryAfter is how long River waits before it runs a failed job again.
const RetryAfter = 1500 * time.Millisecond

// WorkerDelay bounds how long the worker takes before it writes the
// payment: a uniform delay in [WorkerDelay/5, WorkerDelay].
const WorkerDelay = 500 * time.Millisecond

// Config tunes a Server. The zero value is the reference.
type Config struct {
	Variant Variant
}

// Server serves POST /payments and GET /healthz, and runs the payment
// worker.
type Server struct {
	pool   *pgxpool.Pool
	cfg    Config
	impl   impl
	river  *river.Client[pgx.Tx]
	mux    *http.ServeMux
	writes atomic.Int64
}

// New returns a Server on pool, whose tables Migrate has created, with its
// River client started. Close stops it.
func New(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Server, error) {
	x := variants.Must("payments", cfg.Variant)
	cfg.Variant = x.Name
	s := &Server{pool: pool, cfg: cfg, impl: x.Impl, mux: http.NewServeMux()}
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{s: s})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 64}},
		Workers: workers,
		// A retry is due 1.5 s after the failure: within River's
		// scheduler interval, so the job is made available at once and
		// picked up by the next fetch.
		RetryPolicy:       retryAfter{RetryAfter},
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, fmt.Errorf("payments: river: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("payments: river: %w", err)
	}
	s.river = client
	s.mux.HandleFunc("POST /payments", s.handle)
	s.mux.HandleFunc("GET /payments/{id}", s.status)
	s.mux.HandleFunc("GET /healthz", apikit.Healthz)
	return s, nil
}

// Close stops the River client, letting running jobs finish for a while.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.river.Stop(ctx)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Writes is how many payments rows this process's worker wrote.
func (s *Server) Writes() int64 { return s.writes.Load() }

// retryAfter retries a failed job after a fixed delay.
type retryAfter struct{ d time.Duration }

func (r retryAfter) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(r.d) }

// PaymentArgs is the payment job: the key (with its tenant) is its
// uniqueness, the payment id what the worker's effect is keyed by.
type PaymentArgs struct {
	Tenant      string `json:"tenant" river:"unique"`
	Key         string `json:"key" river:"unique"`
	PaymentID   string `json:"paymentId"`
	CustomerID  string `json:"customerId"`
	AmountCents int64  `json:"amountCents"`
}

// Kind implements river.JobArgs.
func (PaymentArgs) Kind() string { return "payment" }

// request is a validated POST /payments.
type request struct {
	tenant, key, fingerprint string
	customerID               string
	amountCents              int64
}

const maxBodyLen = 64 << 10

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 255 || strings.Contains(key, ",") || !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
		apikit.WriteProblem(w, http.StatusBadRequest, "an Idempotency-Key header of 1 to 255 characters, not a list, is required")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyLen))
	if err != nil {
		apikit.WriteProblem(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return
	}
	var in struct {
		CustomerID  *string `json:"customerId"`
		AmountCents *int64  `json:"amountCents"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.CustomerID == nil || in.AmountCents == nil ||
		*in.CustomerID == "" || len(*in.CustomerID) > 255 || !utf8.ValidString(*in.CustomerID) || strings.ContainsRune(*in.CustomerID, 0) || *in.AmountCents <= 0 {
		apikit.WriteProblem(w, http.StatusBadRequest, `the body must be {"customerId": a string of 1 to 255 characters, "amountCents": a positive integer}`)
		return
	}
	p := request{tenant: r.Header.Get("Authorization"), key: key, customerID: *in.CustomerID, amountCents: *in.AmountCents}
	p.fingerprint = fingerprint(r.Method, r.URL.Path, p)
	status, body, replayed, err := s.impl.enqueue(s, r.Context(), p)
	if err != nil {
		slog.ErrorContext(r.Context(), "payments: enqueue failed", "err", err)
		apikit.WriteProblem(w, http.StatusInternalServerError, "the payment could not be accepted; retry with the same key")
		return
	}
	if status != http.StatusAccepted {
		apikit.WriteProblem(w, status, string(body))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	var saved struct {
		PaymentID string `json:"paymentId"`
	}
	if json.Unmarshal(body, &saved) == nil && saved.PaymentID != "" {
		// The payment's status monitor (RFC 9110 section 15.3.3).
		w.Header().Set("Location", "/payments/"+saved.PaymentID)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// status answers GET /payments/{id}, the status monitor of an accepted
// payment, to the client whose key it was made under: "pending" until
// the worker wrote it ("queued" while its job waits for a worker,
// "processing" while a worker holds it), then "succeeded"; "failed" once
// its job was discarded or cancelled.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	var tenant string
	err := s.pool.QueryRow(ctx, `SELECT tenant FROM payment_keys WHERE payment_id = $1`, id).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && tenant != r.Header.Get("Authorization") {
		apikit.WriteProblem(w, http.StatusNotFound, "no such payment")
		return
	}
	state := "pending"
	var made bool
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payments WHERE payment_id = $1)`, id).Scan(&made)
	}
	if err == nil && made {
		state = "succeeded"
	} else if err == nil {
		var job string
		err = s.pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE kind = 'payment' AND args->>'paymentId' = $1 ORDER BY id DESC LIMIT 1`, id).Scan(&job)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = nil
		case err == nil && (job == "discarded" || job == "cancelled"):
			state = "failed"
		case err == nil && job == "running":
			state = "processing"
		case err == nil && job != "completed":
			state = "queued"
		}
	}
	if err != nil {
		slog.ErrorContext(ctx, "payments: status failed", "err", err)
		apikit.WriteProblem(w, http.StatusInternalServerError, "the payment's status could not be read")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"paymentId": id, "status": state})
}

// fingerprint is the request's: method, path and its decoded members, so
// that the same JSON reordered is the same request.
func fingerprint(method, path string, p request) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s %s\n%q %d", method, path, p.customerID, p.amountCents))
	return hex.EncodeToString(sum[:])
}

// accepted is the 202's body, saved under the key and replayed as it was.
func accepted(paymentID string, p request) []byte {
	b, _ := json.Marshal(struct {
		PaymentID   string `json:"paymentId"`
		CustomerID  string `json:"customerId"`
		AmountCents int64  `json:"amountCents"`
		Status      string `json:"status"`
	}{paymentID, p.customerID, p.amountCents, "pending"})
	return b
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "pay_" + hex.EncodeToString(b[:])
}

// enqueueReference claims the key and inserts the job in one transaction.
// A concurrent duplicate's INSERT waits on the first one's uncommitted key
// row, then finds it and gets the replay; a duplicate of a key whose
// claim rolled back claims it afresh.
func (s *Server) enqueueReference(ctx context.Context, p request) (int, []byte, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, nil, false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	id := newID()
	body := accepted(id, p)
	tag, err := tx.Exec(ctx, `INSERT INTO payment_keys (tenant, key, fingerprint, payment_id, body) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant, key) DO NOTHING`, p.tenant, p.key, p.fingerprint, id, body)
	if err != nil {
		return 0, nil, false, err
	}
	if tag.RowsAffected() == 0 {
		_ = tx.Rollback(ctx)
		return s.replay(ctx, p)
	}
	if _, err := s.river.InsertTx(ctx, tx, PaymentArgs{Tenant: p.tenant, Key: p.key, PaymentID: id, CustomerID: p.customerID, AmountCents: p.amountCents},
		&river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}); err != nil {
		return 0, nil, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, nil, false, err
	}
	return http.StatusAccepted, body, false, nil
}

// replay answers a key already claimed: its saved 202, or 422 for another
// request under it.
func (s *Server) replay(ctx context.Context, p request) (int, []byte, bool, error) {
	var fp string
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, body FROM payment_keys WHERE tenant = $1 AND key = $2`, p.tenant, p.key).Scan(&fp, &body)
	if err != nil {
		return 0, nil, false, err
	}
	if fp != p.fingerprint {
		return http.StatusUnprocessableEntity, []byte("this Idempotency-Key was used with another request"), false, nil
	}
	return http.StatusAccepted, body, true, nil
}

// enqueueOutsideTx is THE BUG of enqueue-outside-tx and no-unique-job: the
// key is looked up, the job enqueued and the key saved one statement
// after another, with no transaction around them. Two duplicates that
// arrive together both find no key, both enqueue and both answer 202 with
// a payment id of their own; the one whose key row lands second is told
// its own id, which no payment will ever have. With unique jobs River
// inserts the second job as a duplicate of the first (it is skipped), so
// one payment is made; without them every duplicate's job makes one.
func enqueueOutsideTx(unique bool) func(s *Server, ctx context.Context, p request) (int, []byte, bool, error) {
	return func(s *Server, ctx context.Context, p request) (int, []byte, bool, error) {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payment_keys WHERE tenant = $1 AND key = $2`, p.tenant, p.key).Scan(&n); err != nil {
			return 0, nil, false, err
		}
		if n > 0 {
			return s.replay(ctx, p)
		}
		id := newID()
		opts := &river.InsertOpts{}
		if unique {
			opts.UniqueOpts = river.UniqueOpts{ByArgs: true}
		}
		if _, err := s.river.Insert(ctx, PaymentArgs{Tenant: p.tenant, Key: p.key, PaymentID: id, CustomerID: p.customerID, AmountCents: p.amountCents}, opts); err != nil {
			return 0, nil, false, err
		}
		body := accepted(id, p)
		if _, err := s.pool.Exec(ctx, `INSERT INTO payment_keys (tenant, key, fingerprint, payment_id, body) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant, key) DO NOTHING`, p.tenant, p.key, p.fingerprint, id, body); err != nil {
			return 0, nil, false, err
		}
		return http.StatusAccepted, body, false, nil
	}
}

// worker makes the payment.
type worker struct {
	river.WorkerDefaults[PaymentArgs]
	s *Server
}

// errReceipt is the follow-up step's failure on a job's first attempt.
var errReceipt = errors.New("payments: sending the receipt failed (mail server unavailable); the job is retried")

// Work takes 100-500 ms, writes the payment, then sends its receipt, which
// fails on the job's first attempt: River retries the job RetryAfter later.
func (w *worker) Work(ctx context.Context, job *river.Job[PaymentArgs]) error {
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(WorkerDelay*4/5)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(WorkerDelay/5 + time.Duration(n.Int64())):
	}
	a := job.Args
	if err := w.pay(ctx, a); err != nil {
		return err
	}
	if job.Attempt == 1 {
		return errReceipt
	}
	return nil
}

// pay writes the payments row: keyed by the payment id (payments_made's
// primary key, claimed in the row's own transaction) in the reference, so
// a job run again writes nothing; unkeyed in unkeyed-effect (THE BUG).
func (w *worker) pay(ctx context.Context, a PaymentArgs) error {
	tx, err := w.s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if w.s.impl.keyed {
		tag, err := tx.Exec(ctx, `INSERT INTO payments_made (payment_id) VALUES ($1) ON CONFLICT DO NOTHING`, a.PaymentID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // made by an earlier run of this job
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO payments (payment_id, customer_id, amount_cents) VALUES ($1, $2, $3)`,
		a.PaymentID, a.CustomerID, a.AmountCents); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	w.s.writes.Add(1)
	return nil
}
