package orders

// InMemoryKeyStore: the keys and their saved replies live in the process's
// memory, so a restart forgets every key, and a retry that arrives after
// the restart runs the work again.
//
// How it happens: many idempotency middlewares ship an in-memory store as
// their default ("use Redis in production"), and the default is what gets
// deployed. Every test passes, on one instance: concurrent copies meet the
// in-memory claim and get 409, a replay finds the saved reply. Then the
// process restarts (a deploy, an OOM kill, a node drained) between a
// client's request and its retry. The order is in the database; the key
// that pointed at it is gone; the retry creates a second order. The
// reference keeps the key and the reply in the database, in the order's
// own transaction.
//
// The claim, the fingerprint check, the work and the reply are the
// reference's; only where the key lives differs. idemcheck's
// restart-replay check completes an intent, kills and restarts the target,
// retries, and reports duplicate-effect (and fresh-result-on-replay). With
// two instances behind a balancer the bug also shows without a restart,
// when a retry lands on the other instance.

import (
	"bytes"
	"net/http"
	"sync"
)

// InMemoryKeyStore keeps the keys in a map in the process.
const InMemoryKeyStore Variant = "in-memory-key-store"

// inMemoryKeyStore replaces the whole flow after parsing.
func inMemoryKeyStore(st *steps) { st.create = (*Server).createWithMemoryStore }

func (s *Server) createWithMemoryStore(w http.ResponseWriter, r *http.Request, req request) {
	ctx := r.Context()
	id := string(req.client) + "\x00" + req.key
	// THE BUG: the only record of the key is in this process's memory.
	k, claimed := s.memKeys.claim(id, req.fingerprint)
	if !claimed {
		switch {
		case !bytes.Equal(k.fingerprint, req.fingerprint):
			writeMismatch(w)
		case k.done:
			k.reply.write(w, true)
		default:
			writeConflict(w, 1)
		}
		return
	}
	if s.cfg.AfterClaim != nil {
		s.cfg.AfterClaim(ctx, req.key)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		s.memKeys.release(id)
		writeInternal(w, r, err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rep, created, err := s.execute(ctx, tx, req)
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		s.memKeys.release(id)
		writeInternal(w, r, err)
		return
	}
	if created {
		s.commits.Add(1)
	}
	s.memKeys.finish(id, rep)
	rep.write(w, false)
}

// memoryKeys is the in-memory key store: a claim per key, then its reply.
type memoryKeys struct {
	mu   sync.Mutex
	keys map[string]*memoryKey
}

type memoryKey struct {
	fingerprint []byte
	done        bool
	reply       reply
}

// claim returns true with the key newly claimed, or false with a copy of
// the key someone else holds.
func (m *memoryKeys) claim(id string, fp []byte) (memoryKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[string]*memoryKey{}
	}
	if k, ok := m.keys[id]; ok {
		return *k, false
	}
	m.keys[id] = &memoryKey{fingerprint: fp}
	return memoryKey{}, true
}

func (m *memoryKeys) finish(id string, rep reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[id]; ok {
		k.done, k.reply = true, rep
	}
}

func (m *memoryKeys) release(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, id)
}
