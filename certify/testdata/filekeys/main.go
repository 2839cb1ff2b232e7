// Command filekeys is an orders API whose idempotency keys live apart from
// its data, where idemcheck's database link cannot see them: in files, as
// a Redis key store keeps them in Redis. It follows the common
// claim-then-insert pattern: claim the key with a lease (a file created
// with O_EXCL, as SET NX EX does), insert the order in PostgreSQL (one
// autocommitted statement), then store the reply under the key. The two
// stores commit apart: a process killed after the order committed and
// before the reply was stored leaves a claim that expires with its lease,
// and the retry then creates a second order.
//
// It reads PORT, ADDR and DATABASE_URL as idemcheck hands them, KEYS_DIR
// (the key store), LEASE (a duration, 1s by default) and TX (1: the order
// is inserted in a transaction, BEGIN … COMMIT, instead of autocommitted).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// entry is what the store keeps under a key: a claim until Until, or the
// saved reply once Done.
type entry struct {
	Done        bool            `json:"done"`
	Until       time.Time       `json:"until"`
	Fingerprint string          `json:"fingerprint"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

type server struct {
	pool  *pgxpool.Pool
	dir   string
	lease time.Duration
	tx    bool
}

func main() {
	lease := time.Second
	if v := os.Getenv("LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			log.Fatalf("LEASE: %v", err)
		}
		lease = d
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (
		id bigserial PRIMARY KEY, customer_id text NOT NULL, total_cents int NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	s := &server{pool: pool, dir: os.Getenv("KEYS_DIR"), lease: lease, tx: os.Getenv("TX") == "1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /orders", s.orders)
	log.Fatal(http.ListenAndServe(net.JoinHostPort(os.Getenv("ADDR"), os.Getenv("PORT")), mux))
}

func (s *server) orders(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		reply(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key required"})
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	sum := sha256.Sum256(raw)
	fp := hex.EncodeToString(sum[:])
	name := sha256.Sum256([]byte(key))
	path := filepath.Join(s.dir, hex.EncodeToString(name[:]))

	// The claim: the file is created only if absent (SET NX), and a claim
	// whose lease ran out is taken over (the key expired, as EX does).
	claim := entry{Until: time.Now().Add(s.lease), Fingerprint: fp}
	if err := create(path, claim); err != nil {
		var old entry
		if b, rerr := os.ReadFile(path); rerr == nil && json.Unmarshal(b, &old) == nil {
			switch {
			case old.Done && old.Fingerprint != fp:
				reply(w, http.StatusUnprocessableEntity, map[string]string{"error": "key reused with another body"})
				return
			case old.Done:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(old.Status)
				_, _ = w.Write(old.Body)
				return
			case time.Now().Before(old.Until):
				reply(w, http.StatusConflict, map[string]string{"error": "in progress"})
				return
			}
		}
		if err := store(path, claim); err != nil {
			reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
	}

	var req struct {
		CustomerID string `json:"customerId"`
		TotalCents *int   `json:"totalCents"`
	}
	if json.Unmarshal(raw, &req) != nil || req.CustomerID == "" || req.TotalCents == nil {
		_ = os.Remove(path)
		reply(w, http.StatusBadRequest, map[string]string{"error": "customerId and totalCents required"})
		return
	}
	id, err := s.insert(r.Context(), req.CustomerID, *req.TotalCents)
	if err != nil {
		_ = os.Remove(path)
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	// The order has committed; the key learns it only now.
	body, _ := json.Marshal(map[string]any{"orderId": id, "customerId": req.CustomerID, "totalCents": *req.TotalCents})
	if err := store(path, entry{Done: true, Fingerprint: fp, Status: http.StatusCreated, Body: body}); err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// insert adds the order, autocommitted or in a transaction of its own.
func (s *server) insert(ctx context.Context, customer string, cents int) (int64, error) {
	const q = `INSERT INTO orders (customer_id, total_cents) VALUES ($1, $2) RETURNING id`
	var id int64
	if !s.tx {
		return id, s.pool.QueryRow(ctx, q, customer, cents).Scan(&id)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.QueryRow(ctx, q, customer, cents).Scan(&id); err != nil {
		return 0, err
	}
	return id, tx.Commit(ctx)
}

// create writes e at path only if nothing is there.
func create(path string, e entry) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(e)
	_, err = f.Write(b)
	return errors.Join(err, f.Sync(), f.Close())
}

// store replaces what is at path with e, at once.
func store(path string, e entry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	b, _ := json.Marshal(e)
	_, err = tmp.Write(b)
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
