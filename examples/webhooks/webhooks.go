// Package webhooks is a reference-correct webhook consumer that idemcheck
// certifies, and variants of it that each carry one classic bug.
//
// POST /webhooks receives an event ({"eventId", "type", "data"}) and
// applies it: one row in the ledger for the event's data. Webhook senders
// deliver at least once: a delivery whose 2xx was lost, or that got a 5xx,
// is delivered again, sometimes while the first is still running. The
// event id is the idempotency key, and the consumer must apply each event
// exactly once: never twice (a duplicate credit) and never zero times (a
// redelivery skipped although the first delivery failed).
//
// The reference (reference.go) records the event id in processed_events in
// the same transaction as the ledger row, with ON CONFLICT DO NOTHING
// deciding whether to apply: the record and the effect commit together or
// not at all, and the primary key makes concurrent redeliveries wait for
// the first one's outcome. Both the first delivery and a redelivery get
// 200, which is all a sender looks at.
//
// Each bug_*.go file holds one variant and says what its bug is, how it
// arises in real code and which idemcheck check reports it; Expectation
// gives the same in machine form. flaky_reference.go is a second correct
// consumer, one that asks for redelivery of half the events with 503.
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// Variant selects how POST /webhooks guards against redeliveries.
type Variant string

// Reference is the correct consumer (reference.go).
const Reference Variant = "reference"

// deliverFunc is how a consumer applies an event.
type deliverFunc func(s *Server, ctx context.Context, ev event) (applied bool, err error)

// variants lists the consumers: how each delivers an event, and the
// idemcheck check and anomaly kind that catch its bug (empty for the
// references).
var variants = apikit.Variants[Variant, deliverFunc]{
	{Name: Reference, Impl: (*Server).deliverReference},
	{Name: FlakyReference, Impl: (*Server).deliverFlakyReference},
	{Name: DedupeApart, Check: "webhook-redelivery", Anomaly: "lost-effect", Impl: (*Server).deliverDedupeApart},
	// Its race shows when concurrent deliveries' writes meet: held at the
	// database link, always; timed (by URL), in most rounds.
	{Name: CheckThenInsert, Check: "webhook-redelivery", Anomaly: "duplicate-effect", Needs: apikit.NeedsLink, Impl: (*Server).deliverCheckThenInsert},
	{Name: DedupeDelivery, Check: "webhook-redelivery", Anomaly: "duplicate-effect", Impl: (*Server).deliverDedupeDelivery},
	{Name: SignedAfterWork, Check: "signature", Anomaly: "bad-signature-accepted", Impl: (*Server).deliverReference},
}

// Variants lists the references (the reference and the flaky reference)
// and then every buggy variant.
func Variants() []Variant { return variants.Names() }

// ParseVariant turns a flag or environment value into a Variant.
func ParseVariant(s string) (Variant, error) { return variants.Parse("webhooks", s) }

// Expectation names the idemcheck check that catches v's bug and the
// anomaly kind it reports: ("", "") for the references, which must pass,
// and for a name that is not a variant.
func Expectation(v Variant) (check, anomaly string) { return variants.Expectation(v) }

// Needs says what idemcheck must be able to do to the running consumer
// for v's check to reach its bug (apikit.NeedsLink); "" when a run by URL
// reaches it too.
func Needs(v Variant) string { return variants.Needs(v) }

// Config tunes a Server. The zero value is the reference.
type Config struct {
	Variant Variant // default Reference
	// Secret, when set, is the signing secret (for Standard Webhooks,
	// whsec_ and the key in base64): every delivery must then carry a
	// valid signature made with it under Scheme, timestamped within
	// Tolerance of the consumer's clock where the scheme signs a time, or
	// it is refused with 401 before any work (see verify.go).
	Secret string
	// Scheme is how deliveries are signed (with Secret); empty is
	// StandardWebhooks.
	Scheme Scheme
}

// Server serves POST /webhooks and GET /healthz.
type Server struct {
	pool    *pgxpool.Pool
	cfg     Config
	deliver deliverFunc
	mux     *http.ServeMux
	commits atomic.Int64
	// refusals counts the deliveries answered 503 on purpose (FlakyReference).
	refusals atomic.Int64
}

// New returns a Server on pool, whose tables Migrate has created. It panics
// on an unknown Variant or Scheme, a programming error (use ParseVariant
// and ParseScheme on input).
func New(pool *pgxpool.Pool, cfg Config) *Server {
	x := variants.Must("webhooks", cfg.Variant)
	cfg.Variant = x.Name
	scheme, err := ParseScheme(string(cfg.Scheme))
	if err != nil {
		panic(err)
	}
	cfg.Scheme = scheme
	s := &Server{pool: pool, cfg: cfg, deliver: x.Impl, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /webhooks", s.handle)
	s.mux.HandleFunc("GET /healthz", apikit.Healthz)
	return s
}

// ServeHTTP implements http.Handler. Unknown paths get 404 and wrong methods
// 405 (from http.ServeMux).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Commits is the number of ledger rows this process committed: the
// server's own count of effects, for tests to compare with the database.
func (s *Server) Commits() int64 { return s.commits.Load() }

// Refusals is the number of deliveries this process refused with 503 to
// ask for a redelivery (FlakyReference; 0 for the other variants).
func (s *Server) Refusals() int64 { return s.refusals.Load() }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyLen))
	if err != nil {
		apikit.WriteProblem(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return
	}
	// The signature is checked over the exact bytes received, before the
	// body is even parsed (signed-after-work checks it after its work).
	if s.cfg.Secret != "" && s.cfg.Variant != SignedAfterWork {
		if err := verify(s.cfg.Scheme, s.cfg.Secret, r.Header, raw, time.Now()); err != nil {
			apikit.WriteProblem(w, http.StatusUnauthorized, err.Error())
			return
		}
	}
	ev, problem := parseEvent(raw)
	if problem != "" {
		apikit.WriteProblem(w, http.StatusBadRequest, problem)
		return
	}
	ev.delivery = r.Header.Get(DeliveryHeader)
	applied, err := s.deliver(s, r.Context(), ev)
	if errors.Is(err, errTryLater) {
		apikit.WriteProblem(w, http.StatusServiceUnavailable, "the event cannot be processed now; deliver it again")
		return
	}
	if err != nil {
		// A 5xx makes the sender deliver again, which is what a failed
		// delivery needs.
		slog.ErrorContext(r.Context(), "webhooks: delivery failed", "event", ev.id, "err", err)
		apikit.WriteProblem(w, http.StatusInternalServerError, "the event could not be processed; deliver it again")
		return
	}
	if s.cfg.Secret != "" && s.cfg.Variant == SignedAfterWork {
		// THE BUG of signed-after-work (bug_signed_after_work.go).
		if err := verify(s.cfg.Scheme, s.cfg.Secret, r.Header, raw, time.Now()); err != nil {
			apikit.WriteProblem(w, http.StatusUnauthorized, err.Error())
			return
		}
	}
	status := "duplicate"
	if applied {
		status = "processed"
	}
	body, _ := json.Marshal(struct {
		EventID string `json:"eventId"`
		Status  string `json:"status"`
	}{ev.id, status})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// event is a validated delivery.
type event struct {
	id, typ     string
	customerID  string
	amountCents int64
	// failFirst asks for the first delivery's work to fail (see doomed).
	failFirst bool
	// delivery is the sender's id of this delivery (DeliveryHeader), new
	// at each redelivery.
	delivery string
}

const (
	maxTextLen = 255
	maxBodyLen = 64 << 10
)

// storable reports whether PostgreSQL will take s as text. A value it would
// refuse must be a 400 here, not a 500 from the database later.
func storable(s string) bool {
	return s != "" && len(s) <= maxTextLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// parseEvent validates the delivery, or returns the problem to answer 400
// with. Members it does not know are ignored: senders add fields to their
// events over time, and a consumer that refused them would break on the
// sender's schedule.
func parseEvent(raw []byte) (event, string) {
	var in struct {
		EventID *string `json:"eventId"`
		Type    *string `json:"type"`
		Data    *struct {
			CustomerID  *string         `json:"customerId"`
			AmountCents json.RawMessage `json:"amountCents"` // a JSON integer, not a string of one
			FailFirst   bool            `json:"failFirst"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return event{}, "the body must be a JSON event: " + err.Error()
	}
	switch {
	case in.EventID == nil || !storable(*in.EventID):
		return event{}, fmt.Sprintf("eventId must be a non-empty string of at most %d bytes", maxTextLen)
	case in.Type == nil || !storable(*in.Type):
		return event{}, fmt.Sprintf("type must be a non-empty string of at most %d bytes", maxTextLen)
	case in.Data == nil:
		return event{}, "data must be an object"
	case in.Data.CustomerID == nil || !storable(*in.Data.CustomerID):
		return event{}, fmt.Sprintf("data.customerId must be a non-empty string of at most %d bytes", maxTextLen)
	}
	cents, err := strconv.ParseInt(string(in.Data.AmountCents), 10, 64)
	if err != nil || cents <= 0 {
		return event{}, "data.amountCents must be a positive integer"
	}
	return event{
		id: *in.EventID, typ: *in.Type,
		customerID: *in.Data.CustomerID, amountCents: cents, failFirst: in.Data.FailFirst,
	}, ""
}

// db is what a step needs to run SQL: a transaction, or the pool (each
// statement its own transaction).
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// errDownstream is the failure of a doomed first delivery.
var errDownstream = errors.New("webhooks: the ledger refused the event's first application")

// doomed reports whether this delivery's work is to fail: data.failFirst
// asks for the first delivery of an event to fail inside its work, the
// example's deterministic stand-in for a transient failure (a downstream
// call that times out once). The refusal is recorded in failed_first, on
// its own, before any work starts: it must outlive the rollback of the work
// it fails, and it happens once per event, across deliveries and
// processes.
func doomed(ctx context.Context, q db, ev event) (bool, error) {
	if !ev.failFirst {
		return false, nil
	}
	tag, err := q.Exec(ctx, `INSERT INTO failed_first (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.id)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// apply is the event's work: its row in the ledger. A doomed delivery
// fails here, where the work is, after whatever the variant did before it.
func apply(ctx context.Context, q db, ev event, doomed bool) error {
	if doomed {
		return errDownstream
	}
	_, err := q.Exec(ctx, `
		INSERT INTO ledger (event_id, event_type, customer_id, amount_cents)
		VALUES ($1, $2, $3, $4)`,
		ev.id, ev.typ, ev.customerID, ev.amountCents)
	return err
}
