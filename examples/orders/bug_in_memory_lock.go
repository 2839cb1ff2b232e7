package orders

// InMemoryLock: the claim is a mutex in the process's memory instead of a
// row in the database, which is correct with one instance and creates
// duplicates as soon as there are two.
//
// How it happens: the first version runs as one process, and a
// map[key]*sync.Mutex is the simplest lock there is: concurrent copies of
// a request queue on it, the first does the work and saves its reply, the
// others find the reply and replay it. Every test passes. Then the service
// is scaled to two replicas behind a load balancer, copies of one request
// land on different instances, each takes its own lock, each finds no
// reply, and each creates an order. (The key row is written with ON
// CONFLICT DO NOTHING, since under the lock a conflict "cannot happen".)
// The reference's claim is a row in the shared database, so the database
// decides for every instance at once.
//
// The replay, the fingerprint check and the saved reply are the
// reference's. idemcheck's concurrent-burst check, with the burst spread
// over two instances on one database (RoundRobin, or the binary's
// -instances 2), reports duplicate-effect.

import (
	"net/http"
	"sync"

	"github.com/google/uuid"
)

// InMemoryLock serialises same-key requests with a per-process mutex.
const InMemoryLock Variant = "in-memory-lock"

// inMemoryLock replaces the whole flow after parsing: without a claim row
// the work has to write the key row itself.
func inMemoryLock(st *steps) { st.create = (*Server).createUnderProcessLock }

func (s *Server) createUnderProcessLock(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	// THE BUG: this lock exists in this process only.
	unlock := s.locks.lock(string(req.client) + "\x00" + req.key)
	defer unlock()

	if s.answerKnownKey(w, r, req) {
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rep, created, err := s.execute(ctx, tx, req)
	if err == nil {
		_, err = tx.Exec(ctx, `
			INSERT INTO idempotency_keys
				(client, key, fingerprint, status, token, locked_until, response_status, content_type, response_body, finished_at)
			VALUES ($1, $2, $3, 'done', $4, now(), $5, $6, $7, now())
			ON CONFLICT (client, key) DO NOTHING`,
			req.client, req.key, req.fingerprint, uuid.NewString(), rep.status, rep.contentType, rep.body)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		writeInternal(w, r, err)
		return
	}
	if created {
		s.commits.Add(1)
	}
	rep.write(w, false)
}

// keyLocks is a mutex per key, in memory. Entries are counted so that the
// map holds only the keys someone is using.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (l *keyLocks) lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*keyLock{}
	}
	e := l.held[key]
	if e == nil {
		e = &keyLock{}
		l.held[key] = e
	}
	e.users++
	l.mu.Unlock()

	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
}
