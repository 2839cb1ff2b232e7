// Package provider is a downstream double: a payment provider served on
// loopback for a target idemcheck starts, so that a run sees whether the
// target's own calls carry a key derived from the client's.
//
// It behaves as a careful provider does (Stripe's idempotent requests): a
// POST creates a charge and answers it; a POST under a key already used,
// with the same body, is a replay of the saved answer and creates nothing;
// one under a used key with another body is refused (400, or the status
// Options say). A POST with no key always creates a charge. It records
// every call (key or its absence, body, time, connection), and a run takes
// the records into its history as events.
//
// Faults act on the double's side of the link: it can charge and then cut
// its reply, charge and answer too late, or answer 5xx without charging
// (Fault). A target that retries with the same key, or reconciles, charges
// once through all of them.
//
// It lives under targets because it is started with a target, as the
// database and its fault proxy are, and reached by the runner through the
// target's Powers; it speaks only the root vocabulary.
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Options tune a double. The zero value is a Stripe-like provider named
// idemcheck.DefaultProviderEnv.
type Options struct {
	// Name names the double in the history: the environment variable that
	// hands the target its URL.
	Name string
	// KeyHeader is the header that carries the key (Idempotency-Key).
	KeyHeader string
	// MismatchStatus answers a used key sent with another body (400, as
	// Stripe does; 422 is the IETF draft's).
	MismatchStatus int
	// MaxBody is how many bytes of a call's body are read and kept
	// (64 KiB when 0).
	MaxBody int64
}

// FaultKind names what a fault does to a call.
type FaultKind string

const (
	// CutAfterCharge: the charge is created and saved, and the connection
	// is closed before any reply: the target times out or sees a broken
	// connection, and cannot know the charge exists.
	CutAfterCharge FaultKind = "provider-cut-after-charge"
	// SlowReply: the charge is created and saved, and the answer is held
	// back for Delay, beyond the target's own timeout.
	SlowReply FaultKind = "provider-slow"
	// ServerError: the call is answered 503 and nothing is charged.
	ServerError FaultKind = "provider-5xx"
)

// DefaultSlow is how long SlowReply holds an answer unless told: beyond
// the few seconds a target's client usually waits for a provider, within
// the attempt timeout of idemcheck's own client.
const DefaultSlow = 3 * time.Second

// Faults are the faults the downstream checks go through, one per round
// in this order.
func Faults() []Fault {
	return []Fault{{Kind: CutAfterCharge}, {Kind: SlowReply, Delay: DefaultSlow}, {Kind: ServerError}}
}

// IsNone reports whether f is no fault.
func (f Fault) IsNone() bool { return f.Kind == "" }

// Fault is what the double does to the next call it gets.
type Fault struct {
	Kind FaultKind
	// Delay is how long SlowReply holds the answer.
	Delay time.Duration
}

// Name is the fault as a history shows it.
func (f Fault) Name() string {
	if f.Kind == SlowReply {
		return fmt.Sprintf("%s:ms=%d", f.Kind, f.Delay.Milliseconds())
	}
	return string(f.Kind)
}

// Server is a running double.
type Server struct {
	opts  Options
	ln    net.Listener
	srv   *http.Server
	url   string
	stop  chan struct{}
	close sync.Once

	mu      sync.Mutex
	seq     int
	charges int
	keys    map[string]saved
	byID    map[string]saved
	calls   []idemcheck.ProviderCall
	armed   *Fault
	acted   bool
}

// saved is a key's answer: the body it was first sent with, and the
// charge it created.
type saved struct {
	body   string // canonical
	charge string
	answer []byte
}

// Start serves a double on a fresh loopback port until Close.
func Start(o Options) (*Server, error) {
	if o.Name == "" {
		o.Name = idemcheck.DefaultProviderEnv
	}
	if o.KeyHeader == "" {
		o.KeyHeader = "Idempotency-Key"
	}
	if o.MismatchStatus == 0 {
		o.MismatchStatus = http.StatusBadRequest
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 64 << 10
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", o.Name, err)
	}
	s := &Server{opts: o, ln: ln, url: "http://" + ln.Addr().String(), stop: make(chan struct{}),
		keys: map[string]saved{}, byID: map[string]saved{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the double's base URL (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.url }

// Name is the double's name (Options.Name).
func (s *Server) Name() string { return s.opts.Name }

// Close stops the double; calls held by a SlowReply end at once.
func (s *Server) Close() error {
	s.close.Do(func() { close(s.stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Take returns the calls recorded since the last Take, in the order they
// arrived (Seq), and forgets them.
func (s *Server) Take() []idemcheck.ProviderCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// Charges is how many charges the double created in all.
func (s *Server) Charges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.charges
}

// Arm applies f to the next POST the double gets, once. disarm stops it
// and reports whether it acted.
func (s *Server) Arm(f Fault) (disarm func() (acted bool)) {
	s.mu.Lock()
	s.armed, s.acted = &f, false
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.armed = nil
		acted := s.acted
		s.acted = false
		return acted
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, _ := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBody))
	if r.Method == http.MethodGet {
		s.retrieve(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST to create a charge, GET /v1/charges/{id} to read one")
		return
	}
	call := idemcheck.ProviderCall{Provider: s.opts.Name, Method: r.Method, Path: r.URL.RequestURI(),
		Key: r.Header.Get(s.opts.KeyHeader), Body: string(body), Conn: r.RemoteAddr, Start: start}

	s.mu.Lock()
	s.seq++
	call.Seq = s.seq
	var fault *Fault
	if s.armed != nil && !s.acted {
		fault, s.acted = s.armed, true
		call.Fault = fault.Name()
	}
	status, answer := 0, []byte(nil)
	switch {
	case fault != nil && fault.Kind == ServerError:
		status, answer = http.StatusServiceUnavailable, errorBody("api_error", "the provider is unavailable; retry with the same key")
	default:
		status, answer = s.charge(&call, body)
	}
	s.mu.Unlock()

	if fault != nil {
		switch fault.Kind {
		case CutAfterCharge:
			s.record(call, 0)
			cut(w)
			return
		case SlowReply:
			t := time.NewTimer(fault.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
			case <-s.stop:
			}
			t.Stop()
		}
	}
	s.record(call, status)
	w.Header().Set("Content-Type", "application/json")
	if call.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// charge creates a charge, replays a key's saved answer, or refuses a
// used key's other body. It runs under s.mu.
func (s *Server) charge(call *idemcheck.ProviderCall, body []byte) (int, []byte) {
	canon := canonical(body)
	if call.Key != "" {
		if k, ok := s.keys[call.Key]; ok {
			if k.body != canon {
				return s.opts.MismatchStatus, errorBody("idempotency_error",
					"Keys for idempotent requests can only be used with the same parameters they were first used with.")
			}
			call.Replayed, call.Charge = true, k.charge
			return http.StatusOK, k.answer
		}
	}
	s.charges++
	id := fmt.Sprintf("ch_%06d", s.charges)
	answer, _ := json.Marshal(map[string]any{"id": id, "object": "charge", "status": "succeeded", "request": json.RawMessage(jsonOrString(body))})
	k := saved{body: canon, charge: id, answer: answer}
	s.byID[id] = k
	if call.Key != "" {
		s.keys[call.Key] = k
	}
	call.Created, call.Charge = true, id
	return http.StatusOK, answer
}

// retrieve answers GET /v1/charges/{id}, and GET /v1/charges?key=K (the
// charge a key created, for a target that reconciles): reads record no
// call.
func (s *Server) retrieve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var k saved
	var ok bool
	if key := r.URL.Query().Get("key"); key != "" {
		k, ok = s.keys[key]
	} else {
		k, ok = s.byID[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "no such charge")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(k.answer)
}

func (s *Server) record(call idemcheck.ProviderCall, status int) {
	call.Status, call.End = status, time.Now()
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
}

// cut closes the call's connection without a reply.
func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// canonical is body with JSON members in a fixed order, so that the same
// parameters sent in another order are the same request, as a provider
// that compares parameters sees them.
func canonical(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return string(body)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonOrString(body []byte) []byte {
	if json.Valid(body) && len(bytes.TrimSpace(body)) > 0 {
		return body
	}
	b, _ := json.Marshal(string(body))
	return b
}

func errorBody(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
	return b
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, msg))
}
