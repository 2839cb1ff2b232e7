// Command worker is an orders API whose work is done by a background
// worker, as a service on a job queue does: the handler claims the key and
// enqueues a job in one transaction, and answers 202 with the job's id; a
// worker, on its own database connection, later inserts the order and
// marks the job done in one transaction. It is correct: a key's job is
// enqueued once, and a job is executed once. Its worker's COMMIT is slow
// (a deferred trigger sleeps), and the handler answers a while after its
// own commit, so the worker's commit is often in flight, its answer not
// yet back, when the handler's reply leaves: the moment crash-after-commit
// once waited for ever on.
//
// It reads PORT, ADDR and DATABASE_URL as idemcheck hands them, REPLY_DELAY
// (how long the handler waits after its commit, 200ms by default) and
// COMMIT_DELAY (how long the worker's commit takes, 500ms by default).
//
// With WORKER_EFFECT=apart it carries a classic bug of workers: the order
// is inserted and committed, and the job marked done in a second
// transaction after it. A worker that fails between the two (its commit's
// answer lost on a dropped connection) leaves the job to run again, and
// it inserts a second order. Nothing in the worker fails on its own.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type server struct {
	pool       *pgxpool.Pool
	replyDelay time.Duration
	// apart: the order commits apart from its job's done mark (the bug).
	apart bool
}

func duration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

func main() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	commitDelay := duration("COMMIT_DELAY", 500*time.Millisecond)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, customer_id text NOT NULL, total_cents int NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS jobs (id bigserial PRIMARY KEY, customer_id text NOT NULL, total_cents int NOT NULL, done bool NOT NULL DEFAULT false)`,
		`CREATE TABLE IF NOT EXISTS job_keys (key text PRIMARY KEY, fingerprint text NOT NULL, job_id bigint NOT NULL)`,
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(%f); RETURN NULL; END $$`, commitDelay.Seconds()),
		`DROP TRIGGER IF EXISTS slow_commit ON orders`,
		`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON orders DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE FUNCTION slow_commit()`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	s := &server{pool: pool, replyDelay: duration("REPLY_DELAY", 200*time.Millisecond), apart: os.Getenv("WORKER_EFFECT") == "apart"}
	go s.work(ctx)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /orders", s.orders)
	log.Fatal(http.ListenAndServe(net.JoinHostPort(os.Getenv("ADDR"), os.Getenv("PORT")), mux))
}

func (s *server) orders(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		reply(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key required"}, false)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		CustomerID string `json:"customerId"`
		TotalCents *int   `json:"totalCents"`
	}
	if json.Unmarshal(raw, &req) != nil || req.CustomerID == "" || req.TotalCents == nil {
		reply(w, http.StatusBadRequest, map[string]string{"error": "customerId and totalCents required"}, false)
		return
	}
	sum := sha256.Sum256(raw)
	fp := hex.EncodeToString(sum[:])
	ctx := r.Context()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
		return
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// The claim waits for a concurrent claim of the key to commit or roll
	// back, then either wins or finds the key taken.
	tag, err := tx.Exec(ctx, `INSERT INTO job_keys (key, fingerprint, job_id) VALUES ($1, $2, 0) ON CONFLICT (key) DO NOTHING`, key, fp)
	if err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
		return
	}
	if tag.RowsAffected() == 0 {
		var oldFP string
		var job int64
		if err := tx.QueryRow(ctx, `SELECT fingerprint, job_id FROM job_keys WHERE key = $1`, key).Scan(&oldFP, &job); err != nil {
			reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
			return
		}
		if oldFP != fp {
			reply(w, http.StatusUnprocessableEntity, map[string]string{"error": "key reused with another body"}, false)
			return
		}
		reply(w, http.StatusAccepted, map[string]any{"orderId": job, "status": "accepted"}, true)
		return
	}
	var job int64
	if err := tx.QueryRow(ctx, `INSERT INTO jobs (customer_id, total_cents) VALUES ($1, $2) RETURNING id`, req.CustomerID, *req.TotalCents).Scan(&job); err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
		return
	}
	if _, err := tx.Exec(ctx, `UPDATE job_keys SET job_id = $2 WHERE key = $1`, key, job); err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, false)
		return
	}
	time.Sleep(s.replyDelay)
	reply(w, http.StatusAccepted, map[string]any{"orderId": job, "status": "accepted"}, false)
}

// work executes each job on a goroutine of its own, as a pool of workers
// does: the order's insert and the job's done flag commit together, so a
// job runs once whatever dies when.
func (s *server) work(ctx context.Context) {
	var mu sync.Mutex
	running := map[int64]bool{}
	for {
		time.Sleep(5 * time.Millisecond)
		// A plain read finds work: no transaction, so an idle worker sends
		// no COMMIT.
		rows, err := s.pool.Query(ctx, `SELECT id, customer_id, total_cents FROM jobs WHERE NOT done ORDER BY id`)
		if err != nil {
			log.Printf("worker: %v", err)
			continue
		}
		type job struct {
			id       int64
			customer string
			cents    int
		}
		var jobs []job
		for rows.Next() {
			var j job
			if err := rows.Scan(&j.id, &j.customer, &j.cents); err == nil {
				jobs = append(jobs, j)
			}
		}
		rows.Close()
		for _, j := range jobs {
			mu.Lock()
			busy := running[j.id]
			running[j.id] = true
			mu.Unlock()
			if busy {
				continue
			}
			go func() {
				if err := s.run(ctx, j.id, j.customer, j.cents); err != nil {
					log.Printf("worker: job %d: %v", j.id, err)
				}
				mu.Lock()
				delete(running, j.id)
				mu.Unlock()
			}()
		}
	}
}

func (s *server) run(ctx context.Context, id int64, customer string, cents int) error {
	if s.apart {
		// THE BUG: the order's commit and the job's done mark are two
		// transactions; an error after the first leaves the job to run
		// again.
		if _, err := s.pool.Exec(ctx, `INSERT INTO orders (customer_id, total_cents) VALUES ($1, $2)`, customer, cents); err != nil {
			return err
		}
		_, err := s.pool.Exec(ctx, `UPDATE jobs SET done = true WHERE id = $1`, id)
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	tag, err := tx.Exec(ctx, `UPDATE jobs SET done = true WHERE id = $1 AND NOT done`, id)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders (customer_id, total_cents) VALUES ($1, $2)`, customer, cents); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func reply(w http.ResponseWriter, status int, v any, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
