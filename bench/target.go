// Package bench measures idemcheck's burst engines against the ways a
// load tool or a hand-written test would send the same burst, on a
// loopback race target that shows what each way of sending lets a
// check-then-insert race do. `make bench` runs it (cmd/productbench through
// the product path, RunProduct; cmd/burstbench for the engines alone) and
// writes the figures to BENCHMARKS.md; the Go benchmarks of the hot paths
// (templates, history encoding, the checker) sit beside it as
// *_bench_test.go files.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// RaceTarget is an HTTP handler that stands in for an API with the classic
// check-then-insert race, without spending CPU on the race itself.
//
// It records, per idempotency key, when each request had been fully
// received (its whole body read): that is its check. The race is decided
// afterwards from those instants (see Duplicates): the first request's
// insert, recorded at its check, becomes visible a window W later, as a
// database round trip would make it; every request that checks before then
// sees nothing and inserts again. Deciding afterwards costs no CPU, where a
// busy-wait inside the handler would take one of a 2-core machine's cores
// from the requests still arriving and measure the handler, not the burst.
//
// After its check the handler holds its reply for Hold, as a real handler
// waits on its database round trips before it answers. The wait is a timer,
// not work, and it matters: a handler that answered at once would spend the
// next requests' CPU on writing its reply (on HTTP/2, on the very goroutine
// that reads the next requests' frames), which no API with a database
// does. With Hold at least the largest window measured, every window W
// sees exactly what a server holding W would: no reply is written before
// the window closes.
//
// Paths: POST anything records an arrival (key from Idempotency-Key) and
// answers 201; GET /_arrivals?key=K returns K's arrivals as nanosecond
// offsets from the first, sorted, and forgets them; GET /_warm?id=I&n=N
// answers once N requests with id I are in flight (or after 5 s), so a
// client can be made to open N connections before its bursts.
type RaceTarget struct {
	// Hold is how long a handler waits between its check and its reply.
	Hold time.Duration

	mu       sync.Mutex
	arrivals map[string][]time.Time
	gates    map[string]*gate
}

type gate struct {
	n       int
	arrived int
	open    chan struct{}
}

// NewRaceTarget returns an empty RaceTarget whose handlers hold their
// replies for hold.
func NewRaceTarget(hold time.Duration) *RaceTarget {
	return &RaceTarget{Hold: hold, arrivals: map[string][]time.Time{}, gates: map[string]*gate{}}
}

// ServeHTTP implements http.Handler.
func (t *RaceTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_arrivals":
		t.serveArrivals(w, r)
	case "/_warm":
		t.serveWarm(w, r)
	default:
		io.Copy(io.Discard, r.Body)
		now := time.Now()
		key := r.Header.Get("Idempotency-Key")
		t.mu.Lock()
		t.arrivals[key] = append(t.arrivals[key], now)
		seq := len(t.arrivals[key])
		t.mu.Unlock()
		if t.Hold > 0 {
			time.Sleep(t.Hold)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"orderId":"%s-%d","status":"created"}`, key, seq)
	}
}

func (t *RaceTarget) serveArrivals(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	t.mu.Lock()
	at := t.arrivals[key]
	delete(t.arrivals, key)
	t.mu.Unlock()
	json.NewEncoder(w).Encode(Offsets(at))
}

func (t *RaceTarget) serveWarm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	t.mu.Lock()
	g := t.gates[id]
	if g == nil {
		g = &gate{n: n, open: make(chan struct{})}
		t.gates[id] = g
	}
	g.arrived++
	if g.arrived == g.n {
		close(g.open)
		delete(t.gates, id)
	}
	t.mu.Unlock()
	select {
	case <-g.open:
	case <-time.After(5 * time.Second):
	}
	w.WriteHeader(http.StatusNoContent)
}

// Offsets returns arrival instants as nanoseconds after the first, sorted.
func Offsets(at []time.Time) []int64 {
	if len(at) == 0 {
		return []int64{}
	}
	first := slices.MinFunc(at, time.Time.Compare)
	out := make([]int64, len(at))
	for i, a := range at {
		out[i] = int64(a.Sub(first))
	}
	slices.Sort(out)
	return out
}

// Duplicates returns how many inserts beyond the first a check-then-insert
// server with visibility window w makes for these sorted arrival offsets:
// every request that arrived less than w after the first.
func Duplicates(offsets []int64, w time.Duration) int {
	n := 0
	for _, o := range offsets[min(1, len(offsets)):] {
		if o < int64(w) {
			n++
		}
	}
	return n
}

// Serve serves h on ln over HTTP/1.1 and h2c with prior knowledge (the
// burst engines and the other drivers use both), until ln is closed.
func Serve(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv.Serve(ln)
}
