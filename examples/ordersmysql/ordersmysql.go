// Package ordersmysql is the orders reference on MySQL or MariaDB, written
// as a service on those databases is: database/sql and the Go MySQL
// driver, REPEATABLE READ (InnoDB's default), and variants with the
// classic bugs.
//
// POST /orders creates an order under an Idempotency-Key. The reference
// claims the key with an INSERT into a table whose primary key is the
// (client, key) pair, in the same transaction as the order and the saved
// reply: of concurrent copies, InnoDB lets one insert the key and holds
// the others' INSERT on the row lock until it commits, after which they
// read the saved reply and replay it. A key reused for another body gets
// 422; a request without a key 400; an invalid body 400 before the key is
// touched. An attempt whose transaction fails rolls the claim back with
// the order, so its retry runs afresh.
//
// The check-then-insert variant looks the key up with a SELECT and
// inserts the order and the key later, and its key table has no unique
// constraint: copies that all look before any inserts all create an
// order. idemcheck's concurrent-burst reports it (duplicate-effect).
//
// separate-key-store and lease-no-fencing are written in a leased flow
// (leased.go): a claim committed on its own under a lease, then the work.
//
// GET /orders?customerId=ID lists a customer's orders ({"data": [...]}),
// for idemcheck --effect-http; GET /healthz answers once the tables exist.
package ordersmysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// Variants are the implementations: the reference and its bugs, one
// each.
const (
	Reference       = "reference"
	CheckThenInsert = "check-then-insert"
	// NoFingerprint keeps the request's fingerprint but never compares
	// it: a key reused with another body is answered with the first
	// request's saved reply, as if it were a retry.
	NoFingerprint = "no-fingerprint"
)

// variants are the names New takes.
var variants = []string{Reference, CheckThenInsert, NoFingerprint, SeparateKeyStore, LeaseNoFencing}

// Server is the orders API on one database.
type Server struct {
	db      *sql.DB
	variant string
	lease   time.Duration // the leased flow's
	mux     *http.ServeMux
}

// schema creates the tables; check-then-insert's key table has no unique
// constraint, which is its bug. token and locked_until are the leased
// flow's claim.
func schema(variant string) []string {
	keys := `CREATE TABLE IF NOT EXISTS idempotency_keys (
		client VARCHAR(64) NOT NULL, idem_key VARCHAR(255) NOT NULL, fingerprint CHAR(64) NOT NULL,
		status_code INT NOT NULL DEFAULT 0, body TEXT, token CHAR(36) NULL, locked_until DATETIME(6) NULL,
		PRIMARY KEY (client, idem_key)) ENGINE=InnoDB`
	if variant == CheckThenInsert {
		keys = `CREATE TABLE IF NOT EXISTS idempotency_keys (
			client VARCHAR(64) NOT NULL, idem_key VARCHAR(255) NOT NULL, fingerprint CHAR(64) NOT NULL,
			status_code INT NOT NULL DEFAULT 0, body TEXT, KEY (client, idem_key)) ENGINE=InnoDB`
	}
	return []string{keys, `CREATE TABLE IF NOT EXISTS orders (
		id CHAR(36) PRIMARY KEY, customer_id VARCHAR(255) NOT NULL, total_cents BIGINT NOT NULL,
		created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), KEY (customer_id)) ENGINE=InnoDB`}
}

// New opens dsn (the Go driver's form, user:pw@tcp(host:port)/db),
// creates the tables and returns the server, its claims leased for
// DefaultLease.
func New(ctx context.Context, dsn, variant string) (*Server, error) {
	return NewLeased(ctx, dsn, variant, DefaultLease)
}

// NewLeased is New with the leased flow's claims held for lease (the
// reference's claim lives in its transaction, which the database rolls
// back when the process dies, so it needs none).
func NewLeased(ctx context.Context, dsn, variant string, lease time.Duration) (*Server, error) {
	if variant == "" {
		variant = Reference
	}
	if !slices.Contains(variants, variant) {
		return nil, fmt.Errorf("unknown variant %q: use one of %s", variant, strings.Join(variants, ", "))
	}
	if lease <= 0 {
		return nil, fmt.Errorf("the lease must be positive, not %v", lease)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(32)
	for _, stmt := range schema(variant) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("creating the tables: %w", err)
		}
	}
	s := &Server{db: db, variant: variant, lease: lease, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /orders", s.create)
	s.mux.HandleFunc("GET /orders", s.list)
	s.mux.HandleFunc("GET /healthz", apikit.Healthz)
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close closes the database.
func (s *Server) Close() error { return s.db.Close() }

type order struct {
	ID         string `json:"id"`
	CustomerID string `json:"customerId"`
	TotalCents int64  `json:"totalCents"`
}

type request struct {
	client, key, fingerprint string
	order                    order
}

// parse validates the request before anything is written: a missing key
// is 400, an invalid body 400.
func parse(w http.ResponseWriter, r *http.Request) (request, bool) {
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) != 1 || keys[0] == "" {
		apikit.WriteProblem(w, http.StatusBadRequest, "exactly one non-empty Idempotency-Key header is required")
		return request{}, false
	}
	key := keys[0]
	if len(key) > 255 || !keySyntax(key) {
		apikit.WriteProblem(w, http.StatusBadRequest, "Idempotency-Key must be one key of at most 255 printable ASCII characters, without commas")
		return request{}, false
	}
	var body struct {
		CustomerID *string `json:"customerId"`
		TotalCents *int64  `json:"totalCents"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(&body); err != nil || body.CustomerID == nil || *body.CustomerID == "" || len(*body.CustomerID) > 255 ||
		(body.TotalCents != nil && *body.TotalCents < 0) {
		apikit.WriteProblem(w, http.StatusBadRequest, "the body must be JSON with a customerId (a string) and, if given, totalCents (a whole number of cents, 0 or more)")
		return request{}, false
	}
	o := order{CustomerID: *body.CustomerID}
	if body.TotalCents != nil {
		o.TotalCents = *body.TotalCents
	}
	client := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	fp := sha256.Sum256([]byte(fmt.Sprintf("%s %s %q %d", r.Method, r.URL.Path, o.CustomerID, o.TotalCents)))
	return request{client: fmt.Sprintf("%x", client[:16]), key: key, fingerprint: fmt.Sprintf("%x", fp), order: o}, true
}

// keySyntax reports whether key is one key as the IETF draft writes it (a
// Structured Field string: printable ASCII); a comma would make the header
// a list of keys.
func keySyntax(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	req, ok := parse(w, r)
	if !ok {
		return
	}
	switch s.variant {
	case CheckThenInsert:
		s.createCheckThenInsert(w, r, req)
		return
	case SeparateKeyStore, LeaseNoFencing:
		s.createLeased(w, r, req)
		return
	}
	for range 3 {
		done, err := s.claimAndCreate(r.Context(), w, req)
		if done {
			return
		}
		if err != nil {
			apikit.WriteProblem(w, http.StatusInternalServerError, "the order could not be saved; retry with the same key")
			return
		}
		// The key was taken by a copy that then rolled back: claim again.
	}
	w.Header().Set("Retry-After", "1")
	apikit.WriteProblem(w, http.StatusConflict, "a request with this key is in progress")
}

// claimAndCreate claims the key, creates the order and saves the reply in
// one transaction. On a key already taken it answers from the saved
// reply (done) or, where the holder rolled back, returns neither done nor
// an error, for the caller to claim again.
func (s *Server) claimAndCreate(ctx context.Context, w http.ResponseWriter, req request) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "INSERT INTO idempotency_keys (client, idem_key, fingerprint) VALUES (?, ?, ?)", req.client, req.key, req.fingerprint)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY: the key is someone else's
		_ = tx.Rollback()
		return s.answerFromKey(ctx, w, req)
	}
	if err != nil {
		return false, err
	}
	o := req.order
	o.ID = uuid.NewString()
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id, customer_id, total_cents) VALUES (?, ?, ?)", o.ID, o.CustomerID, o.TotalCents); err != nil {
		return false, err
	}
	body, _ := json.Marshal(o)
	if _, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET status_code = ?, body = ? WHERE client = ? AND idem_key = ?",
		http.StatusCreated, body, req.client, req.key); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	writeJSON(w, http.StatusCreated, body, false)
	return true, nil
}

// answerFromKey answers a request whose key is taken: 422 for another
// body, the saved reply, or 409 while it has none. With no row (the
// holder rolled back) it answers nothing.
func (s *Server) answerFromKey(ctx context.Context, w http.ResponseWriter, req request) (bool, error) {
	var fp string
	var status int
	var body sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT fingerprint, status_code, body FROM idempotency_keys WHERE client = ? AND idem_key = ? LIMIT 1",
		req.client, req.key).Scan(&fp, &status, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	case fp != req.fingerprint && s.variant != NoFingerprint:
		apikit.WriteProblem(w, http.StatusUnprocessableEntity, "this Idempotency-Key was used with another request")
	case status == 0:
		w.Header().Set("Retry-After", "1")
		apikit.WriteProblem(w, http.StatusConflict, "a request with this key is in progress")
	default:
		writeJSON(w, status, []byte(body.String), true)
	}
	return true, nil
}

// createCheckThenInsert is the variant's bug: it looks before it leaps.
// Between its SELECT and its INSERTs lies the work a real handler does
// there (a price lookup, a fraud check), during which a concurrent copy
// looks too and finds nothing either; without a unique constraint
// nothing stops both from inserting.
func (s *Server) createCheckThenInsert(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	if done, err := s.answerFromKey(ctx, w, req); done || err != nil {
		if err != nil {
			apikit.WriteProblem(w, http.StatusInternalServerError, "the key could not be read")
		}
		return
	}
	time.Sleep(20 * time.Millisecond) // the work between the check and the insert
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		apikit.WriteProblem(w, http.StatusInternalServerError, "the order could not be saved")
		return
	}
	defer func() { _ = tx.Rollback() }()
	o := req.order
	o.ID = uuid.NewString()
	body, _ := json.Marshal(o)
	_, err = tx.ExecContext(ctx, "INSERT INTO orders (id, customer_id, total_cents) VALUES (?, ?, ?)", o.ID, o.CustomerID, o.TotalCents)
	if err == nil {
		_, err = tx.ExecContext(ctx, "INSERT INTO idempotency_keys (client, idem_key, fingerprint, status_code, body) VALUES (?, ?, ?, ?, ?)",
			req.client, req.key, req.fingerprint, http.StatusCreated, body)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		apikit.WriteProblem(w, http.StatusInternalServerError, "the order could not be saved")
		return
	}
	writeJSON(w, http.StatusCreated, body, false)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	rows, err := s.db.QueryContext(r.Context(), "SELECT id, customer_id, total_cents FROM orders WHERE customer_id = ? ORDER BY created_at, id",
		r.URL.Query().Get("customerId"))
	if err != nil {
		apikit.WriteProblem(w, http.StatusInternalServerError, "the orders could not be read")
		return
	}
	defer rows.Close()
	data := []order{}
	for rows.Next() {
		var o order
		if err := rows.Scan(&o.ID, &o.CustomerID, &o.TotalCents); err != nil {
			apikit.WriteProblem(w, http.StatusInternalServerError, "the orders could not be read")
			return
		}
		data = append(data, o)
	}
	body, _ := json.Marshal(map[string]any{"data": data})
	writeJSON(w, http.StatusOK, body, false)
}

func writeJSON(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// GoDSN turns a mysql:// URL into the Go driver's form, so that the
// command takes DATABASE_URL in either.
func GoDSN(dsn string) string {
	rest, ok := strings.CutPrefix(dsn, "mysql://")
	if !ok {
		return dsn
	}
	userinfo, hostpath, ok := strings.Cut(rest, "@")
	if !ok {
		userinfo, hostpath = "", rest
	} else {
		userinfo += "@"
	}
	host, path, _ := strings.Cut(hostpath, "/")
	return userinfo + "tcp(" + host + ")/" + path
}
