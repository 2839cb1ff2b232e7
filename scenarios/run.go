package scenarios

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// Endpoint is the request every intent sends, with holes filled per intent.
type Endpoint struct {
	// Base is the target's scheme and authority, as the user wrote it.
	Base   *url.URL
	Method string
	Path   idemcheck.Template
	Header []Header
	Body   idemcheck.Template
	// MismatchBody, when set, is the different body payload-mismatch sends
	// under the original's key; by default the body is changed by
	// MutateBody.
	MismatchBody *idemcheck.Template
	// Other is a second endpoint for cross-endpoint; nil skips that check.
	Other *OtherEndpoint
}

// OtherEndpoint is where cross-endpoint sends an intent's key a second time.
type OtherEndpoint struct {
	Method string
	Path   idemcheck.Template
	// Body, when nil, is the original endpoint's body.
	Body *idemcheck.Template
}

// JSONBody reports whether the endpoint's body, filled, is a JSON object.
func (e Endpoint) JSONBody() bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(e.Body.Fill(idemcheck.Intent{ID: "ic-x-1", Key: "k", Seq: 1})), &m) == nil
}

// Header is one request header whose value may hold template holes.
type Header struct {
	Name  string
	Value idemcheck.Template
}

// Effects counts what one intent left in the database: SQL returning one
// number, with arguments filled per intent and bound, never spliced.
type Effects struct {
	Pool *pgxpool.Pool
	SQL  string
	Args []idemcheck.Template
}

// Progress is reported after every step of every round.
type Progress struct {
	Check         string
	Round, Rounds int
	// Sent counts the attempts sent so far in the whole run, of Total.
	Sent, Total int
}

// Runner sends scenarios to one endpoint through an in-process fault proxy
// and records every attempt.
type Runner struct {
	Endpoint Endpoint
	Policy   idemcheck.Policy
	// Effects, when set, is queried after every round.
	Effects *Effects
	// Timeout bounds each attempt; zero means wire.DefaultTimeout.
	Timeout time.Duration
	// Redact names headers whose values never reach a history or report,
	// beside Authorization, Cookie and Proxy-Authorization.
	Redact []string
	// Progress, when set, is called after every step.
	Progress func(Progress)
	// Rate caps requests per second over the run; 0 means no cap. A burst
	// is released whole: its attempts wait for tokens together.
	Rate float64
}

// DefaultRate is the request-rate cap a run has unless told otherwise: far
// above what the default checks need, low enough that pointing idemcheck at
// a shared environment by mistake does not flood it.
const DefaultRate = 1000

// Upstream returns the host:port the fault proxy forwards to.
func Upstream(base *url.URL) string {
	port := base.Port()
	if port == "" {
		port = "80"
		if base.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(base.Hostname(), port)
}

// Run sends every scenario in order and appends what happened to h. It
// stops at the first harness error (the proxy could not start, the effect
// query failed, ctx was cancelled); what the target does is never an error
// here, it is recorded.
func (r *Runner) Run(ctx context.Context, scs []Scenario, h *idemcheck.History) error {
	link, err := faults.NewLink(Upstream(r.Endpoint.Base))
	if err != nil {
		return fmt.Errorf("start the fault proxy: %w", err)
	}
	defer link.Close()

	client := &wire.Client{Host: r.Endpoint.Base.Host, Timeout: r.Timeout}
	if r.Endpoint.Base.Scheme == "https" {
		client.TLS = &tls.Config{ServerName: r.Endpoint.Base.Hostname(), NextProtos: []string{"http/1.1"}}
	}
	s := &session{Runner: r, link: link, client: client, h: h, run: newRunID()}
	largest := 1
	for _, sc := range scs {
		s.total += sc.Attempts()
		for _, st := range sc.Steps {
			largest = max(largest, st.Attempts)
		}
	}
	s.pace = newPacer(r.Rate, largest)
	for _, sc := range scs {
		for round := 1; round <= sc.Rounds; round++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.round(ctx, sc, round); err != nil {
				return err
			}
		}
	}
	return nil
}

// session is the state of one Run.
type session struct {
	*Runner
	link   *faults.Link
	client *wire.Client
	h      *idemcheck.History
	run    string
	sent   int
	total  int
	pace   *pacer
}

func (s *session) round(ctx context.Context, sc Scenario, round int) error {
	in := idemcheck.Intent{
		ID:    fmt.Sprintf("ic-%s-%d", s.run, len(s.h.Intents)+1),
		Key:   uuid.NewString(),
		Seq:   len(s.h.Intents) + 1,
		Check: sc.Check,
		Round: round,
	}
	s.h.Intents = append(s.h.Intents, in)
	for i, st := range sc.Steps {
		req, key := s.request(in, st.Variant)
		fp := fingerprint(req)
		addr, err := s.link.Addr(st.Fault)
		if err != nil {
			return fmt.Errorf("fault %s: %w", st.Fault.Name, err)
		}
		base := idemcheck.Attempt{
			Intent: in.ID, Key: key, Check: sc.Check, Round: round, Step: i + 1, Variant: st.Variant,
			Method: req.Method, Path: req.Path, Header: s.redact(req.Header), Body: string(req.Body),
			Fingerprint: fp, Fault: st.Fault.Name,
		}
		if st.Together {
			if err := s.pace.wait(ctx, st.Attempts); err != nil {
				return err
			}
			reqs := make([]wire.Request, st.Attempts)
			for j := range reqs {
				reqs[j] = req
			}
			results, spread := s.client.Burst(ctx, addr, reqs)
			burst := idemcheck.Burst{ID: len(s.h.Bursts) + 1, Attempts: len(results), Spread: spread}
			s.h.Bursts = append(s.h.Bursts, burst)
			base.Burst = burst.ID
			for _, res := range results {
				s.record(base, res)
			}
		} else {
			for range st.Attempts {
				if err := s.pace.wait(ctx, 1); err != nil {
					return err
				}
				s.record(base, s.client.Do(ctx, addr, req))
			}
		}
		if s.Progress != nil {
			s.Progress(Progress{Check: sc.Check, Round: round, Rounds: sc.Rounds, Sent: s.sent, Total: s.total})
		}
	}
	return s.observe(ctx, in)
}

// request fills the endpoint's templates for one intent and applies the
// variant; it returns the request and the key it carries ("" for none).
func (s *session) request(in idemcheck.Intent, v idemcheck.Variant) (wire.Request, string) {
	e := s.Endpoint
	method, path, body := e.Method, e.Path.Fill(in), e.Body.Fill(in)
	key := in.Key
	switch v {
	case idemcheck.OtherBody:
		if e.MismatchBody != nil {
			body = e.MismatchBody.Fill(in)
		} else {
			body = MutateBody(body, in)
		}
	case idemcheck.Reordered:
		body = ReorderBody(body)
	case idemcheck.OtherEndpoint:
		method, path = e.Other.Method, e.Other.Path.Fill(in)
		if e.Other.Body != nil {
			body = e.Other.Body.Fill(in)
		}
	case idemcheck.OtherKey:
		key = uuid.NewString()
	case idemcheck.NoKey:
		key = ""
	}
	hdr := http.Header{}
	for _, h := range e.Header {
		hdr.Add(h.Name, h.Value.Fill(in))
	}
	if body != "" && hdr.Get("Content-Type") == "" && json.Valid([]byte(body)) {
		hdr.Set("Content-Type", "application/json")
	}
	if key != "" {
		hdr.Set(s.Policy.KeyHeader, key)
	} else {
		hdr.Del(s.Policy.KeyHeader)
	}
	return wire.Request{Method: method, Path: path, Header: hdr, Body: []byte(body)}, key
}

func (s *session) record(a idemcheck.Attempt, res wire.Result) {
	s.sent++
	a.ID = len(s.h.Attempts) + 1
	a.Start, a.FirstByte, a.End = res.Start, res.FirstByte, res.End
	switch {
	case res.Err == nil:
		a.Outcome = idemcheck.Replied
	case !res.Written || res.ErrKind == wire.KindRefused:
		a.Outcome = idemcheck.NotSent
	default:
		a.Outcome = idemcheck.Unknown
	}
	if res.Err != nil {
		a.Error = res.Err.Error()
	}
	if a.Outcome == idemcheck.Replied {
		a.Status = res.Status
		a.RespHeader = s.redact(res.Header)
		a.RespBody = string(res.Body)
	}
	s.h.Attempts = append(s.h.Attempts, a)
}

// observe counts the intent's effects in the database.
func (s *session) observe(ctx context.Context, in idemcheck.Intent) error {
	if s.Effects == nil {
		return nil
	}
	args := make([]any, len(s.Effects.Args))
	strs := make([]string, len(s.Effects.Args))
	for i, t := range s.Effects.Args {
		strs[i] = t.Fill(in)
		args[i] = strs[i]
	}
	var n int64
	if err := s.Effects.Pool.QueryRow(ctx, s.Effects.SQL, args...).Scan(&n); err != nil {
		return fmt.Errorf("effect query %q: %w", s.Effects.SQL, err)
	}
	s.h.Observations = append(s.h.Observations, idemcheck.Observation{
		Intent: in.ID, Check: in.Check, Effects: n, Query: s.Effects.SQL, Args: strs,
	})
	return nil
}

// secretHeaders are redacted in every history and report.
var secretHeaders = []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"}

// Redacted replaces a secret header's value.
const Redacted = "[redacted]"

func (s *session) redact(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for _, name := range append(secretHeaders, s.Redact...) {
		if _, ok := out[http.CanonicalHeaderKey(name)]; ok {
			out[http.CanonicalHeaderKey(name)] = []string{Redacted}
		}
	}
	return out
}

// fingerprint hashes method, path and the canonical JSON body (member order
// and white space do not count), as a server's request fingerprint should.
func fingerprint(r wire.Request) string {
	body := r.Body
	if v, ok := decodeJSON(body); ok {
		if b, err := json.Marshal(v); err == nil {
			body = b
		}
	}
	sum := sha256.Sum256([]byte(r.Method + " " + r.Path + "\n" + string(body)))
	return hex.EncodeToString(sum[:8])
}

// newRunID returns a short random id that keeps this run's intents apart
// from every earlier run's rows in a shared database.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(hex.EncodeToString(b[:]))
}
