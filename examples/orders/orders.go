// Package orders is the reference-correct orders API that idemcheck
// certifies, and a deliberately broken variant of it.
//
// POST /orders creates an order. A client whose request timed out cannot
// know whether the order exists, so it retries with the same
// Idempotency-Key, and the server must answer the retry with the first
// outcome instead of creating a second order. The reference (reference.go)
// does that with three pieces, each closing one hole:
//
//   - an atomic claim (INSERT ... ON CONFLICT DO NOTHING), so that of N
//     concurrent copies of a request exactly one does the work and the
//     others get 409;
//   - the order and the saved reply commit in one transaction, so a key is
//     never finished without its order nor an order left without its reply;
//     an attempt that fails releases its claim so that a retry can succeed;
//   - a lease with a fencing token, so that a key whose owner died can be
//     taken over, and an owner that was merely slow cannot commit after it
//     lost the key.
//
// CheckThenInsert (checkthen.go) is the classic bug, kept so that idemcheck
// has something real to catch.
package orders

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Variant selects how POST /orders guards against duplicates.
type Variant string

const (
	// Reference is the correct implementation (reference.go).
	Reference Variant = "reference"
	// CheckThenInsert is the classic bug: read the key, do the work, then
	// write the key (checkthen.go).
	CheckThenInsert Variant = "check-then-insert"
)

// ParseVariant turns a flag or environment value into a Variant.
func ParseVariant(s string) (Variant, error) {
	switch v := Variant(s); v {
	case Reference, CheckThenInsert:
		return v, nil
	}
	return "", fmt.Errorf("orders: unknown variant %q (want %q or %q)", s, Reference, CheckThenInsert)
}

// Config tunes a Server. The zero value is the production reference.
type Config struct {
	Variant Variant // default Reference
	// Lease is how long a claim is held before a retry may take it over.
	// It must be longer than the work normally takes, or healthy requests
	// get taken over (harmless thanks to fencing, but wasted). Default 30s.
	Lease time.Duration
	// Retention is how long finished keys are kept, which is also how long a
	// retry is recognised as one. Default 24h.
	Retention time.Duration
	// SweepEvery is the period of the background sweeper; 0 runs none
	// (Sweep can still be called).
	SweepEvery time.Duration
	// AfterClaim is a test hook, called after the key is claimed and before
	// the work transaction. Nil in production.
	AfterClaim func(ctx context.Context, key string)
}

// Server serves POST /orders and GET /healthz.
type Server struct {
	pool        *pgxpool.Pool
	cfg         Config
	mux         *http.ServeMux
	commits     atomic.Int64
	stopSweeper context.CancelFunc
	sweeperDone chan struct{}
}

// New returns a Server on pool, whose tables Migrate has created. It panics
// on an unknown Variant, a programming error (use ParseVariant on input).
func New(pool *pgxpool.Pool, cfg Config) *Server {
	if cfg.Variant == "" {
		cfg.Variant = Reference
	}
	if _, err := ParseVariant(string(cfg.Variant)); err != nil {
		panic(err)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 24 * time.Hour
	}
	s := &Server{pool: pool, cfg: cfg, mux: http.NewServeMux(), sweeperDone: make(chan struct{})}

	create := s.createReference
	if cfg.Variant == CheckThenInsert {
		create = s.createCheckThenInsert
	}
	s.mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		if req, ok := parseRequest(w, r); ok {
			create(w, r, req)
		}
	})
	// The process migrates before it listens, so once it answers at all
	// the database was reachable: a readiness probe needs no more.
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})

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

// Commits is the number of order transactions this process committed: the
// server's own count of effects, for fault tests to compare with what
// clients saw.
func (s *Server) Commits() int64 { return s.commits.Load() }

// Close stops the sweeper and waits for it. It does not close the pool.
func (s *Server) Close() {
	s.stopSweeper()
	<-s.sweeperDone
}

// Sweep deletes finished keys older than the retention, and running keys
// whose lease ran out longer than the retention ago (their owner is long
// dead and no retry came). A retry after that creates a new order: that is
// the published expiry policy, not a bug.
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

// request is a validated POST /orders.
type request struct {
	key         string
	fingerprint []byte
	customerID  string
	totalCents  int64
}

const (
	maxTextLen = 255 // for keys, Stripe's limit; keeps the primary key index small
	maxBodyLen = 64 << 10
)

// storable reports whether PostgreSQL will take s as text. A value it would
// refuse must be a 400 here, not a 500 from the database later.
func storable(s string) bool {
	return len(s) <= maxTextLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// parseRequest validates the request, or answers 400 and returns false.
// Nothing is stored for an invalid request, so fixing it and retrying with
// the same key works.
func parseRequest(w http.ResponseWriter, r *http.Request) (request, bool) {
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) != 1 || keys[0] == "" {
		writeProblem(w, http.StatusBadRequest, "exactly one non-empty Idempotency-Key header is required")
		return request{}, false
	}
	if !storable(keys[0]) {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("Idempotency-Key must be UTF-8 text of at most %d bytes", maxTextLen))
		return request{}, false
	}

	// Read the whole body before touching the database: a request cut
	// short by the network must leave no trace.
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyLen))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return request{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as written, for the fingerprint
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil || fields == nil {
		writeProblem(w, http.StatusBadRequest, "the body must be a JSON object")
		return request{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeProblem(w, http.StatusBadRequest, "the body must hold exactly one JSON value")
		return request{}, false
	}
	for name := range fields {
		if name != "customerId" && name != "totalCents" {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("unknown field %q", name))
			return request{}, false
		}
	}
	customerID, ok := fields["customerId"].(string)
	if !ok || customerID == "" || !storable(customerID) {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("customerId must be a non-empty string of at most %d bytes", maxTextLen))
		return request{}, false
	}
	n, _ := fields["totalCents"].(json.Number)
	totalCents, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || totalCents <= 0 {
		writeProblem(w, http.StatusBadRequest, "totalCents must be a positive integer")
		return request{}, false
	}

	return request{
		key:         keys[0],
		fingerprint: fingerprint(r.Method, r.URL.Path, fields),
		customerID:  customerID,
		totalCents:  totalCents,
	}, true
}

// fingerprint identifies the intent behind a request, so that a key reused
// for a different request is caught (422) instead of replaying an answer to
// a question that was not asked. It hashes the canonical JSON, so member
// order and whitespace do not matter: encoding/json writes map keys sorted
// and json.Number exactly as it was written.
func fingerprint(method, path string, body map[string]any) []byte {
	canonical, err := json.Marshal(body)
	if err != nil {
		panic(err) // cannot happen: body was just decoded from JSON
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(method), []byte(path), canonical} {
		h.Write(part)
		h.Write([]byte{0}) // a separator, so "a"+"bc" differs from "ab"+"c"
	}
	return h.Sum(nil)
}

// reply is an HTTP answer; a finished key stores the one it gave.
type reply struct {
	status      int
	contentType string
	body        []byte
}

// write sends the reply. A replay is marked so that a client (and
// idemcheck) can tell it apart from a fresh result.
func (rp reply) write(w http.ResponseWriter, replayed bool) {
	w.Header().Set("Content-Type", rp.contentType)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

// writeProblem answers with an RFC 7807 problem document.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{"about:blank", http.StatusText(status), status, detail})
	reply{status, "application/problem+json", body}.write(w, false)
}

// writeConflict answers 409 to a duplicate that arrived while the first
// copy is still being worked on.
func writeConflict(w http.ResponseWriter, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retryAfter, 1)))
	writeProblem(w, http.StatusConflict, "a request with this Idempotency-Key is in progress; retry later")
}

// writeInternal answers 500 without leaking internals to the client.
func writeInternal(w http.ResponseWriter, r *http.Request, err error) {
	slog.ErrorContext(r.Context(), "orders: request failed", "err", err)
	writeProblem(w, http.StatusInternalServerError, "the order could not be processed; retrying with the same Idempotency-Key is safe")
}
