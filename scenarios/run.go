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
	"strconv"
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
	// Tenants, when two are given, are the credentials of two clients
	// (such as two Authorization headers): cross-tenant sends one key with
	// each.
	Tenants []Header
	// FailingBody, when set, is a body the target answers with an error
	// (a declined card, say): failed-attempt then also checks that the
	// error is saved and replayed where the policy says so.
	FailingBody *idemcheck.Template
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
	// Powers are what the harness may do to a target it started; nil for
	// a target reached by URL alone.
	Powers Powers
	// Protocol chooses the burst engine: wire.ProtocolAuto (HTTP/2
	// single-packet release where the target speaks h2, else HTTP/1.1
	// last-byte synchronisation), ProtocolHTTP1 or ProtocolH2. Empty means
	// auto.
	Protocol wire.Protocol
}

// Powers are the harness's hold on a target it started: its database link
// and its process (or container).
type Powers interface {
	// ArmDB puts a database-link fault on the target until disarm.
	ArmDB(f faults.Fault) (disarm func(), err error)
	// Held delivers the hold events of armed db-hold faults.
	Held() <-chan faults.HoldEvent
	// Kill crashes the target (SIGKILL, every instance).
	Kill() error
	// Restart starts the target again on the same address and waits until
	// it is ready.
	Restart(ctx context.Context) error
	// Exits returns the target's ends that the harness did not cause (not
	// Kill, Restart or closing it) since the last call, oldest first, as
	// TargetExited events with Time, Instance, ExitStatus, LogTail and
	// Detail set; the runner fills in where in the run they happened.
	// With settle, it first waits (boundedly) for an instance that is
	// dying to be gone, so that an exit that made a step's attempts fail
	// is reported after that step and not after the next.
	Exits(ctx context.Context, settle bool) ([]idemcheck.Event, error)
	// Revive starts instance i (from 0) again if it is down, waits until it
	// is ready, and reports whether it had to; a running instance is left
	// alone.
	Revive(ctx context.Context, instance int) (bool, error)
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

	client := &wire.Client{Host: r.Endpoint.Base.Host, Timeout: r.Timeout, Protocol: r.Protocol}
	if client.Protocol == "" {
		client.Protocol = wire.ProtocolAuto
	}
	if r.Endpoint.Base.Scheme == "https" {
		client.TLS = &tls.Config{ServerName: r.Endpoint.Base.Hostname(), NextProtos: []string{"http/1.1"}}
	}
	if client.Protocol == wire.ProtocolAuto {
		// Asked once, through the clean proxy, so that every burst uses the
		// engine the target speaks without probing again.
		if addr, err := link.Addr(faults.None); err == nil {
			if p, err := client.Probe(ctx, addr); err == nil {
				client.Protocol = p
			}
		}
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
				return s.explain(ctx, err, idemcheck.Event{Check: sc.Check, Round: round})
			}
		}
	}
	// An exit after the last step still belongs in the history; nothing is
	// left to restart the target for.
	if s.Powers != nil && s.lastStep.Check != "" {
		evs, err := s.Powers.Exits(ctx, false)
		if err != nil {
			return fmt.Errorf("watch the target: %w", err)
		}
		s.recordExits(s.lastStep, evs, "after")
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
	// lastStep places the step that ran last (Check, Intent, Round,
	// Step), for the events that happen in its time.
	lastStep idemcheck.Event
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
	for i := 0; i < len(sc.Steps); i++ {
		st := sc.Steps[i]
		before := len(s.h.Attempts)
		if st.HoldNthByRound {
			st.DBFault = faults.DBHold(st.DBFault.Params["match"], (round-1)%2+1)
		}
		req, key := s.request(in, st.Variant)
		addr, err := s.link.Addr(st.Fault)
		if err != nil {
			return fmt.Errorf("fault %s: %w", st.Fault.Name, err)
		}
		base := idemcheck.Attempt{
			Intent: in.ID, Key: key, Check: sc.Check, Round: round, Step: i + 1, Variant: st.Variant,
			Method: req.Method, Path: req.Path, Header: s.redact(req.Header), Body: string(req.Body),
			Fingerprint: Fingerprint(req), Fault: faultNames(st.Fault, st.DBFault),
		}
		if st.DelayBefore > 0 {
			t := time.NewTimer(st.DelayBefore)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		switch {
		case st.OnHold != HoldNone:
			// The held step and the retry that meets it are one piece of
			// choreography: the retry is the next step.
			if i+1 >= len(sc.Steps) {
				return fmt.Errorf("scenario %s: a held step needs a retry step after it", sc.Check)
			}
			next := sc.Steps[i+1]
			retry := base
			retry.Step, retry.Fault, retry.Variant = i+2, faultNames(next.Fault, next.DBFault), next.Variant
			if err := s.held(ctx, st, next, addr, req, base, retry); err != nil {
				return err
			}
			i++
		case st.Together:
			if err := s.pace.wait(ctx, st.Attempts); err != nil {
				return err
			}
			disarm, err := s.arm(st.DBFault)
			if err != nil {
				return err
			}
			reqs := make([]wire.Request, st.Attempts)
			for j := range reqs {
				reqs[j] = req
			}
			br := s.client.SendBurst(ctx, addr, reqs)
			results := br.Results
			disarm()
			burst := idemcheck.Burst{ID: len(s.h.Bursts) + 1, Attempts: len(results), Spread: br.Spread,
				Protocol: string(br.Protocol), Fallback: br.Fallback}
			s.h.Bursts = append(s.h.Bursts, burst)
			base.Burst = burst.ID
			for _, res := range results {
				s.record(base, res)
			}
		default:
			for range st.Attempts {
				if err := s.pace.wait(ctx, 1); err != nil {
					return err
				}
				disarm, err := s.arm(st.DBFault)
				if err != nil {
					return err
				}
				if st.RetryInProgress {
					err = s.retryWhileInProgress(ctx, addr, req, base)
				} else {
					s.record(base, s.client.Do(ctx, addr, req))
				}
				disarm()
				if err != nil {
					return err
				}
			}
		}
		answered := true
		for _, a := range s.h.Attempts[before:] {
			answered = answered && a.Outcome == idemcheck.Replied
		}
		if err := s.watch(ctx, idemcheck.Event{Check: sc.Check, Intent: in.ID, Round: round, Step: i + 1}, answered); err != nil {
			return err
		}
		if s.Progress != nil {
			s.Progress(Progress{Check: sc.Check, Round: round, Rounds: sc.Rounds, Sent: s.sent, Total: s.total})
		}
	}
	return s.observe(ctx, in)
}

// explain adds to an error that stopped the run the target's exits that
// came before it, which are often its cause (a target that died before it
// reached a held statement), and records them.
func (s *session) explain(ctx context.Context, err error, placed idemcheck.Event) error {
	if s.Powers == nil || ctx.Err() != nil {
		return err
	}
	evs, werr := s.Powers.Exits(ctx, true)
	if werr != nil || len(evs) == 0 {
		return err
	}
	s.recordExits(placed, evs, "during")
	last := evs[len(evs)-1]
	return fmt.Errorf("%w; the target (instance %d) had exited on its own (%s); its last output:\n%s", err, last.Instance, last.ExitStatus, clipTail(last.LogTail, MaxLogTail))
}

// MaxLogTail is how many of the target's last output lines an exit event
// keeps.
const MaxLogTail = 20

// watch records the target's exits that happened up to the end of a step
// (at placed's step) and restarts the instances they took down, so that
// the steps after them meet a live target. With answered false (some
// attempt of the step got no reply) it first lets a dying target finish
// dying, so its exit is placed at the step it broke. A target that cannot
// be restarted stops the run.
func (s *session) watch(ctx context.Context, placed idemcheck.Event, answered bool) error {
	if s.Powers == nil {
		return nil
	}
	s.lastStep = placed
	evs, err := s.Powers.Exits(ctx, !answered)
	if err != nil {
		return fmt.Errorf("watch the target: %w", err)
	}
	if len(evs) == 0 {
		return nil
	}
	s.recordExits(placed, evs, "during")
	seen := map[int]bool{}
	for _, ev := range evs {
		if seen[ev.Instance] {
			continue
		}
		seen[ev.Instance] = true
		restarted, err := s.Powers.Revive(ctx, ev.Instance)
		if err != nil {
			return fmt.Errorf("the target (instance %d) exited on its own during %s round %d step %d (%s) and could not be restarted: %w; its last output:\n%s",
				ev.Instance, placed.Check, placed.Round, placed.Step, ev.ExitStatus, err, clipTail(ev.LogTail, MaxLogTail))
		}
		if restarted {
			r := placed
			r.Kind, r.Time, r.Instance = idemcheck.TargetRestarted, time.Now(), ev.Instance
			r.Detail = fmt.Sprintf("the harness restarted instance %d after it exited on its own (%s), so the steps after it meet a live target", ev.Instance, ev.ExitStatus)
			s.h.Events = append(s.h.Events, r)
		}
	}
	return nil
}

// recordExits puts exit events in the history, placed at a step; when says
// how they relate to it ("during", or "after" the run's last step).
func (s *session) recordExits(placed idemcheck.Event, evs []idemcheck.Event, when string) {
	for _, ev := range evs {
		ev.Kind = idemcheck.TargetExited
		ev.Check, ev.Intent, ev.Round, ev.Step = placed.Check, placed.Intent, placed.Round, placed.Step
		ev.LogTail = clipTail(ev.LogTail, MaxLogTail)
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		where := fmt.Sprintf("%s %s round %d step %d", when, placed.Check, placed.Round, placed.Step)
		if ev.Detail == "" {
			ev.Detail = fmt.Sprintf("instance %d of the target exited on its own (%s) %s", ev.Instance, ev.ExitStatus, where)
		} else {
			ev.Detail += " " + where
		}
		s.h.Events = append(s.h.Events, ev)
	}
}

// clipTail keeps the last n lines of a log tail.
func clipTail(tail string, n int) string {
	tail = strings.TrimRight(tail, "\n")
	lines := strings.Split(tail, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// faultNames names the faults an attempt went through, client link first.
func faultNames(client, db faults.Fault) string {
	var names []string
	for _, f := range []faults.Fault{client, db} {
		if !f.IsNone() {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, "+")
}

// arm puts a database-link fault on the target for one step.
func (s *session) arm(f faults.Fault) (func(), error) {
	if f.IsNone() {
		return func() {}, nil
	}
	if s.Powers == nil {
		return nil, fmt.Errorf("fault %s needs the target's database link", f.Name)
	}
	return s.Powers.ArmDB(f)
}

// LeaseMargin is how long past the policy's lease a retry keeps trying
// before a key still in progress counts as stuck.
const LeaseMargin = 2 * time.Second

// retryWhileInProgress sends the attempt, and again while the answer is the
// policy's in-progress status, honouring Retry-After, until the lease plus
// a margin has passed: a key left running by a dead attempt must become
// retakable within its lease.
func (s *session) retryWhileInProgress(ctx context.Context, addr string, req wire.Request, base idemcheck.Attempt) error {
	deadline := time.Now().Add(s.Policy.Lease + LeaseMargin)
	for {
		res := s.client.Do(ctx, addr, req)
		s.record(base, res)
		inProgress := res.Err == nil && s.Policy.InProgressStatus != 0 && res.Status == s.Policy.InProgressStatus
		if !inProgress || !time.Now().Before(deadline) {
			return nil
		}
		wait := 200 * time.Millisecond
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && ra > 0 {
			wait = time.Duration(ra) * time.Second
		}
		wait = min(wait, time.Until(deadline))
		t := time.NewTimer(max(wait, 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// holdTimeout bounds the wait for a target to reach the held statement.
const holdTimeout = 15 * time.Second

// held runs a step whose database fault holds the target's statement
// (db-hold), then does what the step says to the target at that moment,
// and sends the retry step:
//
//   - HoldCrash: the target is killed while its transaction waits at
//     COMMIT, the statement is dropped (the database rolls it back), the
//     target restarts, and the retry keeps trying while the key is in
//     progress, up to the lease plus a margin;
//   - HoldStall: the held attempt stays frozen past the lease, the retry
//     is sent then (and may take the key over), and the held attempt
//     resumes once the retry has answered or a few seconds have passed.
func (s *session) held(ctx context.Context, st, next Step, addr string, req wire.Request, first, retry idemcheck.Attempt) error {
	if s.Powers == nil {
		return fmt.Errorf("%s needs control of the target", first.Check)
	}
	disarm, err := s.Powers.ArmDB(st.DBFault)
	if err != nil {
		return err
	}
	defer disarm()
	// The held attempt must outlive the hold: a client that gave up first
	// would close the connection and kill the work the check is about.
	patient := *s.client
	patient.Timeout = max(s.client.Timeout, s.Policy.Lease+2*LeaseMargin+holdTimeout)
	firstDone := make(chan wire.Result, 1)
	go func() { firstDone <- patient.Do(ctx, addr, req) }()
	var ev faults.HoldEvent
	select {
	case ev = <-s.Powers.Held():
	case res := <-firstDone:
		// The target answered without reaching the held statement: there
		// was no window to break. Recorded as it is; the retry still runs,
		// on a clean link.
		disarm()
		s.record(first, res)
		return s.retryWhileInProgress(ctx, addr, req, retry)
	case <-time.After(holdTimeout):
		return fmt.Errorf("%s: the target did not reach %q within %v", first.Check, st.DBFault.Params["match"], holdTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	switch st.OnHold {
	case HoldCrash:
		if err := s.Powers.Kill(); err != nil {
			_ = ev.Cut()
			return fmt.Errorf("crash the target: %w", err)
		}
		_ = ev.Cut()
		s.record(first, <-firstDone)
		if err := s.Powers.Restart(ctx); err != nil {
			return fmt.Errorf("restart the target after the crash: %w", err)
		}
		return s.retryWhileInProgress(ctx, addr, req, retry)
	case HoldStall:
		stall := time.NewTimer(s.Policy.Lease + LeaseMargin/4)
		select {
		case <-ctx.Done():
			stall.Stop()
			_ = ev.Cut()
			return ctx.Err()
		case <-stall.C:
		}
		retryDone := make(chan wire.Result, 1)
		go func() { retryDone <- patient.Do(ctx, addr, req) }()
		var rres *wire.Result
		select {
		case r := <-retryDone:
			rres = &r
		case <-time.After(LeaseMargin):
			// The retry is waiting, on the held attempt's locks most likely:
			// let the original resume and see who wins.
		}
		_ = ev.Release()
		fres := <-firstDone
		if rres == nil {
			r := <-retryDone
			rres = &r
		}
		s.record(first, fres)
		s.record(retry, *rres)
		return nil
	}
	return fmt.Errorf("unknown hold action %d", st.OnHold)
}

// request fills the endpoint's templates for one intent and applies the
// variant; it returns the request and the key it carries ("" for none).
func (s *session) request(in idemcheck.Intent, v idemcheck.Variant) (wire.Request, string) {
	e := s.Endpoint
	switch v {
	case idemcheck.OtherKey:
		in.Key = uuid.NewString() // every template sees the new key
	case idemcheck.NoKey:
		in.Key = ""
	}
	method, path, body := e.Method, e.Path.Fill(in), e.Body.Fill(in)
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
	case idemcheck.NoKey:
		if ptr := s.Policy.KeyPointer; ptr != "" {
			body = RemoveMember(body, ptr)
		}
	case idemcheck.Failing:
		body = e.FailingBody.Fill(in)
	}
	hdr := http.Header{}
	for _, h := range e.Header {
		hdr.Add(h.Name, h.Value.Fill(in))
	}
	switch {
	case v == idemcheck.TenantA && len(e.Tenants) == 2:
		hdr.Set(e.Tenants[0].Name, e.Tenants[0].Value.Fill(in))
	case v == idemcheck.OtherTenant && len(e.Tenants) == 2:
		hdr.Set(e.Tenants[1].Name, e.Tenants[1].Value.Fill(in))
	}
	if body != "" && hdr.Get("Content-Type") == "" && json.Valid([]byte(body)) {
		hdr.Set("Content-Type", "application/json")
	}
	// A key carried in the body (a webhook's event id) needs no header.
	if in.Key != "" && s.Policy.KeyPointer == "" {
		hdr.Set(s.Policy.KeyHeader, in.Key)
	} else {
		hdr.Del(s.Policy.KeyHeader)
	}
	return wire.Request{Method: method, Path: path, Header: hdr, Body: []byte(body)}, in.Key
}

func (s *session) record(a idemcheck.Attempt, res wire.Result) {
	s.sent++
	a.ID = len(s.h.Attempts) + 1
	s.fill(&a, res)
	s.h.Attempts = append(s.h.Attempts, a)
}

// fill records a harness send on a: its times, its outcome and, when it
// was answered, the reply (headers redacted).
func (s *session) fill(a *idemcheck.Attempt, res wire.Result) {
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
}

// observe counts the intent's effects in the database.
func (s *session) observe(ctx context.Context, in idemcheck.Intent) error {
	if s.Effects == nil {
		return nil
	}
	o, err := s.Effects.Count(ctx, in)
	if err != nil {
		return err
	}
	s.h.Observations = append(s.h.Observations, o)
	return nil
}

// Count runs the effect query for one intent.
func (e *Effects) Count(ctx context.Context, in idemcheck.Intent) (idemcheck.Observation, error) {
	args := make([]any, len(e.Args))
	strs := make([]string, len(e.Args))
	for i, t := range e.Args {
		strs[i] = t.Fill(in)
		args[i] = strs[i]
	}
	var n int64
	if err := e.Pool.QueryRow(ctx, e.SQL, args...).Scan(&n); err != nil {
		return idemcheck.Observation{}, fmt.Errorf("effect query %q: %w", e.SQL, err)
	}
	return idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: n, Query: e.SQL, Args: strs}, nil
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

// Fingerprint hashes method, path and the canonical JSON body (member order
// and white space do not count), as a server's request fingerprint should.
func Fingerprint(r wire.Request) string {
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
