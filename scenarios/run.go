package scenarios

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/provider"
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
	// InvalidBody, when set, is a body the target must reject before doing
	// any work (a validation error): corrected-retry sends it, then the
	// endpoint's body under the same key. By default it is derived from
	// the body by BreakTypes.
	InvalidBody *idemcheck.Template
	// Sign, when set, signs every attempt as a webhook sender does.
	Sign *Signing
}

// clock is the time computed parts are taken from: now, shifted by the
// signing skew.
func (e Endpoint) clock() time.Time {
	if e.Sign != nil {
		return time.Now().Add(e.Sign.Skew)
	}
	return time.Now()
}

// invalidBody is the body corrected-retry sends first: the endpoint's
// invalid body, else its body with every member's type broken.
func (e Endpoint) invalidBody(in idemcheck.Intent) string {
	if e.InvalidBody != nil {
		return e.InvalidBody.Fill(in)
	}
	b, _ := BreakTypes(e.Body.Fill(in))
	return b
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

// Progress is reported after every step of every round.
type Progress struct {
	Check         string
	Round, Rounds int
	// Sent counts the attempts sent so far in the whole run, of Total.
	Sent, Total int
}

// Runner sends scenarios to one endpoint and records every attempt. A step
// with a client-link fault goes through an in-process fault proxy; every
// other step, bursts included, reaches the target directly, so that nothing
// stands between a burst's release and the target.
type Runner struct {
	Endpoint Endpoint
	Policy   idemcheck.Policy
	// Effects, when set, is queried after every round, and every counted
	// intent again after the last check.
	Effects *Effects
	// Settle, when set, bounds the wait for effects that land after the
	// reply: each intent's count is polled until it stays the same for
	// SettleQuiet(Settle), its check's intents together (settle.go).
	Settle time.Duration
	// Timeout bounds each attempt; zero means wire.DefaultTimeout.
	Timeout time.Duration
	// Redactor hides the run's secrets in everything it records; the
	// caller passes the one its own outputs go through, so that what the
	// run learns (a header's value, a Set-Cookie) is hidden there too. Nil
	// means a new one. Redact, Secrets, RedactFields and RedactQuery are
	// taught to it.
	Redactor *idemcheck.Redactor
	// Redact names headers whose values never reach a history or report,
	// beside those idemcheck.Redactor hides by name. Their values are
	// hidden wherever else they appear too.
	Redact []string
	// Secrets are values hidden wherever they appear in a history or
	// report (the expansions of ${NAME} in a suite, say).
	Secrets []string
	// RedactFields are JSON pointers into request and reply bodies, and
	// RedactQuery query parameter names, whose values are hidden wherever
	// they appear (a card number, a token in a query).
	RedactFields, RedactQuery []string
	// Progress, when set, is called after every step.
	Progress func(Progress)
	// Rate caps requests per second over the run; 0 means no cap. A burst
	// is released whole: its attempts wait for tokens together.
	Rate float64
	// Powers are what the harness may do to a target it started; nil for
	// a target reached by URL alone.
	Powers targets.Powers
	// Upstream is the checked address (IP:port) the fault proxy forwards
	// to, from certify's loopback check; empty means Upstream(Endpoint.Base).
	// Handing the proxy the address that was checked, not the name, is
	// what keeps a resolver from moving the run elsewhere (DNS rebinding).
	Upstream string
	// AllowRemote lets the harness's connections leave loopback; without
	// it every connection the harness's client opens refuses an address
	// off loopback (netguard.Control).
	AllowRemote bool
	// MaxBody is how many bytes of each reply body are kept (0 means
	// wire.DefaultMaxBody).
	MaxBody int64
	// Protocol chooses the burst engine: wire.ProtocolAuto (HTTP/2
	// single-packet release where the target speaks h2, else HTTP/1.1
	// last-byte synchronisation), ProtocolHTTP1 or ProtocolH2. Empty means
	// auto.
	Protocol wire.Protocol
	// Timed turns the write barrier off: bursts are timed only, even where
	// Powers could schedule their writes (see targets.Scheduler).
	Timed bool
	// TLS, for an https:// target, is the client's TLS configuration: the
	// roots it trusts, its client certificate, whether verification is
	// skipped. Nil means the system's roots and no client certificate.
	// ServerName and NextProtos are set by the runner.
	TLS *tls.Config
	// Preflight sends one plain request for a fresh intent before the
	// checks, and stops the run with a *RefusedError when the target
	// answers it with a 4xx that no client would retry (see preflight).
	Preflight bool
	// NoDBLinkFaults, when set, says why no database-link fault can act on
	// this target whatever its link shows (a database engine idemcheck
	// cannot fault, say): the scenarios that need one are skipped with it
	// (see DBLinkFaults).
	NoDBLinkFaults string

	// dial, when set, is the wire client's dialer (tests).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// looseSpread, when set, replaces idemcheck.LooseSpread (tests).
	looseSpread func(n int) time.Duration
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

// newClient is the harness's own client for a target at base, as a
// certification and a soak both make it: each attempt bounded by timeout,
// maxBody bytes of each reply kept (zero: wire's defaults), every
// connection refusing an address off loopback unless allowRemote, and, for
// an https:// target, the TLS configuration tlsCfg (ClientTLS) offering
// HTTP/1.1; a burst engine that speaks HTTP/2 sets its own.
func newClient(base *url.URL, timeout time.Duration, maxBody int64, allowRemote bool, tlsCfg *tls.Config) *wire.Client {
	// The run's single attempts measure the round trips its HTTP/1.1
	// bursts wait for between their prefixes and their release.
	client := &wire.Client{Host: base.Host, Timeout: timeout, MaxBody: maxBody, RoundTrips: &wire.RoundTrips{}}
	if !allowRemote {
		client.Control = netguard.Control
	}
	if base.Scheme == "https" {
		client.TLS = ClientTLS(tlsCfg, base)
		client.TLS.NextProtos = []string{"http/1.1"}
	}
	return client
}

// upstream is where the fault proxy forwards: the checked address when
// there is one.
func (r *Runner) upstream() string {
	if r.Upstream != "" {
		return r.Upstream
	}
	return Upstream(r.Endpoint.Base)
}

// Run sends every scenario in order and appends what happened to h. It
// stops at the first harness error (the proxy could not start, the effect
// query failed, ctx was cancelled); what the target does is never an error
// here, it is recorded.
func (r *Runner) Run(ctx context.Context, scs []Scenario, h *idemcheck.History) error {
	link, err := faults.NewLink(r.upstream())
	if err != nil {
		return fmt.Errorf("start the fault proxy: %w", err)
	}
	defer link.Close()

	client := newClient(r.Endpoint.Base, r.Timeout, r.MaxBody, r.AllowRemote, r.TLS)
	client.Protocol, client.Dial = r.Protocol, r.dial
	if client.Protocol == "" {
		client.Protocol = wire.ProtocolAuto
	}
	s := &session{Runner: r, link: link, direct: link.Upstream(), client: client, rec: historyRecorder{h}, run: newRunID(), shifts: map[string]int{}}
	if client.Protocol == wire.ProtocolAuto {
		// Asked once, so that every burst uses the engine the target
		// speaks without probing again.
		if p, err := client.Probe(ctx, s.direct); err == nil {
			client.Protocol = p
		}
	}
	defer func() {
		if s.replies != nil {
			_ = s.replies.Close()
		}
	}()
	// The run's header names the target's path as the user wrote it: its
	// secrets are hidden there too.
	hdr := h.Run
	hdr.Target.Path = s.scrubRequest(wire.Request{Path: hdr.Target.Path})
	hdr.Target.URL = s.scrub(hdr.Target.URL)
	largest := 1
	for _, sc := range scs {
		for _, st := range sc.Steps {
			largest = max(largest, st.Attempts)
		}
	}
	s.pace = newPacer(r.Rate, largest)
	// A run whose every check was skipped sends nothing, not even this.
	if r.Preflight && len(scs) > 0 {
		if err := s.preflight(ctx); err != nil {
			return err
		}
	}
	// Whether the database link carries the target's database traffic is
	// known once it was ready and, with a pre-flight, had answered a
	// request: the header records what was skipped for it.
	ok, why := r.DBLinkFaults()
	if !ok && !r.Preflight && r.NoDBLinkFaults == "" && noDBLink(r.Powers) == "" && len(scs) > 0 {
		// A target may open its database connection on its first request:
		// one plain request, as the pre-flight sends (not recorded, its
		// answer not judged), before the link is judged.
		if err := s.preflight(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		ok, why = r.DBLinkFaults()
	}
	if !ok {
		s.noDBLink = why
		scs = withoutDBLink(scs, h, why)
		hdr.Checks = h.Run.Checks
	}
	for _, sc := range scs {
		s.total += sc.Attempts()
	}
	if err := s.rec.run(hdr); err != nil {
		return err
	}
	for _, sc := range scs {
		for round := 1; round <= sc.Rounds; round++ {
			looseRepeats, refusedRepeats := 0, 0
		repeats:
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				s.refusedWait = 0
				loose, err := s.round(ctx, sc, round)
				if err != nil {
					return s.explain(ctx, err, idemcheck.Event{Check: sc.Check, Round: round})
				}
				// A round whose burst the target refused (fewer than two
				// attempts admitted) raced nothing: it is sent again after
				// the refusals' Retry-After, with a fresh intent and a
				// fresh release, a bounded number of times.
				switch {
				case s.refusedWait > 0 && refusedRepeats < RefusalRepeats:
					refusedRepeats++
					if err := sleep(ctx, s.refusedWait); err != nil {
						return err
					}
				case loose && looseRepeats < LooseRepeats:
					looseRepeats++
				default:
					break repeats
				}
				s.total += sc.Attempts() / sc.Rounds
			}
		}
		if err := s.settlePending(ctx); err != nil {
			return s.explain(ctx, fmt.Errorf("count effects once settled: %w", err), idemcheck.Event{Check: sc.Check})
		}
	}
	// Every counted intent again, for effects that landed after it was
	// judged (late duplicates).
	if err := s.recount(ctx); err != nil {
		return fmt.Errorf("count effects again after the last check: %w", err)
	}
	// Calls that arrived after the last round still belong in the history.
	if n := len(s.intents); n > 0 {
		s.takeCalls(s.intents[n-1])
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
	return s.rec.flush()
}

// LooseRepeats is how many times at most a round whose burst was loose
// (released wider than idemcheck.LooseSpread) is repeated, each time with
// a fresh intent. A machine too busy for a tight burst four times in a row
// is too busy to certify races on: the check is then inconclusive
// (assert.BurstProof). Every burst stays in the history, and the attempts
// of a loose one count like any other's.
const LooseRepeats = 3

// session is the state of one Run.
type session struct {
	*Runner
	// noDBLink says why no database-link fault can act on the target
	// (DBLinkFaults); bursts are then timed, not scheduled.
	noDBLink string
	link     *faults.Link
	// direct is the target's host:port: where steps without a client-link
	// fault go.
	direct string
	client *wire.Client
	// rec is where the run's records go; intents, step and last are
	// what the run looks back at of them: every intent (a provider call
	// is tied to the one it names), the attempts of the step running,
	// and the last attempt recorded.
	rec     recorder
	intents []idemcheck.Intent
	step    []idemcheck.Attempt
	last    idemcheck.Attempt
	run     string
	sent    int
	total   int
	pace    *pacer
	// replies holds replies at their first byte (crash-after-commit),
	// started on first use.
	replies *faults.ReplyHold

	secretsOnce sync.Once
	secrets     *idemcheck.Redactor
	// writes is how many effect writes (COMMITs and autocommitted writes)
	// the first clean attempt answered with success that wrote at all
	// caused; 0 until there was one. shifts counts, per check, the rounds
	// that chose their write from it (nthByRound).
	writes int
	// lastKind is the kind of the last of those writes
	// (idemcheck.LandedCommit, or idemcheck.LandedAutocommitWrite for a
	// handler that never opens a transaction); "" until then.
	lastKind string
	shifts   map[string]int
	// soak: the session runs a soak, whose signatures are not learned
	// one by one (finish).
	soak bool
	// lastStep places the step that ran last (Check, Intent, Round,
	// Step), for the events that happen in its time.
	lastStep idemcheck.Event
	// refusedWait, when not 0, says the running round's burst was refused
	// (burstRefused), and how long its refusals asked to wait.
	refusedWait time.Duration
	// keys are the keys the running round's requests carried, in order:
	// an effect query stated per key counts each (Effects.CountKeys).
	keys []string
	// counted are the intents whose effects were counted, to count again
	// after the last check (recount); pending those of the running check
	// still to be counted once their effects settle (settlePending).
	counted, pending []toCount
	// accepted says an attempt of the running round was answered with
	// one of the policy's accepted statuses (a 202): its effect may land
	// later, and settling awaits it. A soak's senders set it at once.
	accepted atomic.Bool
	// cut says a db-cut or db-cut-after of the running round landed, on cutSQL: the
	// round then ends by asking whether the target recovered (recovered).
	cut    bool
	cutSQL string
	// The running round's accepted operations and the client that reads
	// their status monitors (operations.go).
	operationsState
}

// round sends one round of sc with a fresh intent. It reports whether one
// of its bursts was loose.
func (s *session) round(ctx context.Context, sc Scenario, round int) (loose bool, err error) {
	in := idemcheck.Intent{
		ID:    fmt.Sprintf("ic-%s-%d", s.run, len(s.intents)+1),
		Key:   uuid.NewString(),
		Seq:   len(s.intents) + 1,
		Check: sc.Check,
		Round: round,
	}
	s.intents = append(s.intents, in)
	s.rec.intent(in)
	s.cut = false
	s.keys = nil
	s.accepted.Store(false)
	s.takeOperations()
	// acted: an earlier step of the intent may have taken effect (it was
	// answered with success, or its reply was cut, or its database write
	// was let through before a fault), so a later success may be a replay,
	// which writes less than an execution: its writes are not counted (do).
	acted := false
	for i := 0; i < len(sc.Steps); i++ {
		st := sc.Steps[i]
		s.step = nil
		if st.NthByRound {
			st.DBFault = s.nthByRound(sc.Check, st.DBFault, round, st.OnHold == HoldKillAfterCommit)
		}
		if st.LastWrite {
			st.DBFault = withNth(st.DBFault, max(s.writes, 1))
		}
		if st.AtWork && s.lastKind == idemcheck.LandedAutocommitWrite {
			// A handler that never opens a transaction has no BEGIN to
			// stop at: its work is its last write, which commits on its
			// own.
			st.DBFault = faults.DBHold("", max(s.writes, 1))
		}
		if st.ProviderByRound {
			fs := provider.Faults()
			st.ProviderFault = fs[(round-1)%len(fs)]
		}
		req, key := s.request(in, st.Variant)
		if !slices.Contains(s.keys, key) {
			s.keys = append(s.keys, key)
		}
		addr, err := s.addr(st.Fault)
		if err != nil {
			return false, fmt.Errorf("fault %s: %w", st.Fault.Name, err)
		}
		base := idemcheck.Attempt{
			Intent: in.ID, Key: key, Check: sc.Check, Round: round, Step: i + 1, Variant: st.Variant,
			Fault: stepFault(st), FaultLinks: stepLinks(st),
		}
		s.describe(&base, req, Fingerprint(req))
		if st.DelayBefore > 0 {
			t := time.NewTimer(st.DelayBefore)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, ctx.Err()
			case <-t.C:
			}
		}
		switch {
		case st.OnHold != HoldNone:
			// The held step and the retry that meets it are one piece of
			// choreography: the retry is the next step.
			if i+1 >= len(sc.Steps) {
				return false, fmt.Errorf("scenario %s: a held step needs a retry step after it", sc.Check)
			}
			next := sc.Steps[i+1]
			retry := base
			retry.Step, retry.Fault, retry.FaultLinks, retry.Variant = i+2, stepFault(next), stepLinks(next), next.Variant
			if st.OnHold == HoldKillAfterCommit {
				err = s.killAfterCommit(ctx, in, st, addr, req, base, retry)
			} else {
				err = s.held(ctx, st, addr, req, base, retry)
			}
			if err != nil {
				return false, err
			}
			// A webhook sender redelivers what the retry left
			// unacknowledged, as after any other step.
			if next.RedeliverUntilAck {
				if err := s.redeliver(ctx, req, retry, s.step); err != nil {
					return false, err
				}
			}
			i++
		case st.Together:
			if err := s.pace.wait(ctx, st.Attempts); err != nil {
				return false, err
			}
			disarm, err := s.arm(st.DBFault)
			if err != nil {
				return false, err
			}
			var unbar func() faults.Schedule
			if sch, ok := s.Powers.(targets.Scheduler); ok && !s.Timed && s.noDBLink == "" && st.DBFault.IsNone() {
				if unbar, err = sch.Barrier(st.Attempts, st.InTurn); err != nil {
					disarm()
					return false, fmt.Errorf("write barrier: %w", err)
				}
			}
			reqs := make([]wire.Request, st.Attempts)
			for j := range reqs {
				reqs[j] = req
			}
			br := s.client.SendBurst(ctx, addr, reqs)
			results := br.Results
			s.dbLanding(base, st.DBFault, disarm())
			burst := idemcheck.Burst{Attempts: len(results), Spread: br.Spread,
				Protocol: string(br.Protocol), Fallback: br.Fallback, Intent: in.ID, Check: sc.Check, Round: round,
				Loose:      br.Spread > s.looseAbove(len(results)),
				PrefixWait: br.Link.PrefixWait, PrefixAcked: br.Link.Acked,
				RTT: br.Link.RTT, Jitter: br.Link.Jitter, KernelRTT: br.Link.KernelRTT}
			if unbar != nil {
				sched := unbar()
				burst.Scheduled, burst.Held, burst.Release, burst.InTurn = true, sched.ReleasedTogether(), sched.Reason, sched.InTurn
				s.scheduled(base, sched)
			}
			// A scheduled race does not rest on the spread: its round is
			// not repeated when the spread was loose. A round in turn whose
			// barrier held fewer than two writes (the others had not
			// reached the database when it let the first go, on a busy
			// machine) released nothing in turn: it is repeated, like a
			// loose one, with a fresh intent.
			loose = loose || burst.Loose && !burst.RaceScheduled() || burst.InTurn && !burst.RaceScheduled()
			if again, wait := burstRefused(results); again {
				s.refusedWait = max(s.refusedWait, wait)
			}
			burst = s.rec.burst(burst)
			base.Burst = burst.ID
			for _, res := range results {
				s.record(base, res)
				s.replyLanding(base, st.Fault, res)
			}
		default:
			for range st.Attempts {
				if err := s.pace.wait(ctx, 1); err != nil {
					return false, err
				}
				disarm, err := s.arm(st.DBFault)
				if err != nil {
					return false, err
				}
				pdisarm, err := s.armProvider(st.ProviderFault)
				if err != nil {
					disarm()
					return false, err
				}
				count := st.DBFault.IsNone() && !acted
				if st.RetryInProgress {
					err = s.retryWhileInProgress(ctx, addr, req, base, count)
				} else {
					var res wire.Result
					res, err = s.doRecorded(ctx, addr, req, base, count)
					s.replyLanding(base, st.Fault, res)
				}
				s.dbLanding(base, st.DBFault, disarm())
				s.providerLanding(base, st.ProviderFault, pdisarm())
				if err != nil {
					return false, err
				}
			}
		}
		if st.RedeliverUntilAck && st.OnHold == HoldNone {
			if err := s.redeliver(ctx, req, base, s.step); err != nil {
				return false, err
			}
		}
		if st.KillAfter {
			if err := s.killAndRestart(ctx, base); err != nil {
				return false, err
			}
		}
		answered := true
		for _, a := range s.step {
			answered = answered && a.Outcome == idemcheck.Replied
			acted = acted || a.Outcome == idemcheck.Replied && a.Status >= 200 && a.Status < 300
		}
		acted = acted || !st.Fault.IsNone() || !st.DBFault.IsNone() && st.DBFault.Name != "db-cut"
		if err := s.watch(ctx, idemcheck.Event{Check: sc.Check, Intent: in.ID, Round: round, Step: i + 1}, answered); err != nil {
			return false, err
		}
		if s.Progress != nil {
			s.Progress(Progress{Check: sc.Check, Round: round, Rounds: sc.Rounds, Sent: s.sent, Total: s.total})
		}
	}
	s.takeCalls(in)
	if s.cut {
		placed := idemcheck.Event{Check: sc.Check, Intent: in.ID, Round: round, Step: len(sc.Steps)}
		if err := s.recovered(ctx, placed, s.cutSQL); err != nil {
			return false, err
		}
	}
	return loose, s.observe(ctx, in)
}

// addr is where a step with client-link fault f sends: the target itself
// when f is None, else the fault proxy that applies f. A proxy in the path
// would cost a burst its tight release (each final byte then waits for a
// proxy goroutine pair before it reaches the target), and it adds nothing
// to a step it does not fault.
func (s *session) addr(f faults.Fault) (string, error) {
	if f.IsNone() {
		return s.direct, nil
	}
	return s.link.Addr(f)
}

// looseAbove is the release spread above which a burst of n is loose.
func (s *session) looseAbove(n int) time.Duration {
	if s.looseSpread != nil {
		return s.looseSpread(n)
	}
	return idemcheck.LooseSpread(n)
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
	return fmt.Errorf("%w; the target (instance %d) had exited on its own (%s); its last output:\n%s", err, last.Instance, last.ExitStatus, s.scrub(clipTail(last.LogTail, MaxLogTail)))
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
	_, err := s.watchExits(ctx, placed, answered)
	return err
}

// watchExits is watch, and says whether the target had exited.
func (s *session) watchExits(ctx context.Context, placed idemcheck.Event, answered bool) (bool, error) {
	if s.Powers == nil {
		return false, nil
	}
	s.lastStep = placed
	evs, err := s.Powers.Exits(ctx, !answered)
	if err != nil {
		return false, fmt.Errorf("watch the target: %w", err)
	}
	if len(evs) == 0 {
		return false, nil
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
			return true, fmt.Errorf("the target (instance %d) exited on its own during %s round %d step %d (%s) and could not be restarted: %w; its last output:\n%s",
				ev.Instance, placed.Check, placed.Round, placed.Step, ev.ExitStatus, err, s.scrub(clipTail(ev.LogTail, MaxLogTail)))
		}
		if restarted {
			r := placed
			r.Kind, r.Time, r.Instance = idemcheck.TargetRestarted, time.Now(), ev.Instance
			r.Detail = fmt.Sprintf("the harness restarted instance %d after it exited on its own (%s), so the steps after it meet a live target", ev.Instance, ev.ExitStatus)
			s.rec.event(r)
		}
	}
	return true, nil
}

// recordExits puts exit events in the history, placed at a step; when says
// how they relate to it ("during", or "after" the run's last step).
func (s *session) recordExits(placed idemcheck.Event, evs []idemcheck.Event, when string) {
	for _, ev := range evs {
		ev.Kind = idemcheck.TargetExited
		ev.Check, ev.Intent, ev.Round, ev.Step = placed.Check, placed.Intent, placed.Round, placed.Step
		// The target's output may quote what it was sent: a credential.
		ev.LogTail = s.scrub(clipTail(ev.LogTail, MaxLogTail))
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		where := fmt.Sprintf("%s %s round %d step %d", when, placed.Check, placed.Round, placed.Step)
		if ev.Detail == "" {
			ev.Detail = fmt.Sprintf("instance %d of the target exited on its own (%s) %s", ev.Instance, ev.ExitStatus, where)
		} else {
			ev.Detail += " " + where
		}
		s.rec.event(ev)
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

// faultLinks are the links fs act on, client link first, in the root
// package's words (Attempt.FaultLinks); nil for clean traffic.
func faultLinks(fs ...faults.Fault) []string {
	var client, db bool
	for _, f := range fs {
		switch {
		case f.IsNone():
		case f.Link == faults.LinkDB:
			db = true
		default:
			client = true
		}
	}
	var links []string
	if client {
		links = append(links, idemcheck.LinkClient)
	}
	if db {
		links = append(links, idemcheck.LinkDB)
	}
	return links
}

// noDBLink says why the target's database link cannot be faulted (a
// MySQL-family database: targets.NoDBLink), "" when it can or there are
// no powers.
func noDBLink(p targets.Powers) string {
	if nl, ok := p.(targets.NoDBLink); ok {
		return nl.NoDBLink()
	}
	return ""
}

// arm puts a database-link fault on the target for one step.
func (s *session) arm(f faults.Fault) (func() faults.Landing, error) {
	if f.IsNone() {
		return func() faults.Landing { return faults.Landing{} }, nil
	}
	if s.Powers == nil {
		return nil, fmt.Errorf("fault %s needs the target's database link", f.Name)
	}
	return s.Powers.ArmDB(f)
}

// writeCounter is a db-cut whose nth is never reached: armed, it only
// counts the effect writes that pass.
var writeCounter = faults.DBCut("", 1<<31)

// do sends one attempt. With count, on a target whose database link the
// harness holds, it counts the effect writes the attempt caused, and the
// first attempt answered with success that wrote anything tells the
// session how many writes the handler makes (nthByRound). That first one
// is a fresh intent's: round counts no attempt after one that may have
// taken effect (a success, a cut reply: a replay writes less), and the
// first round of a fault check acts on the first write, the claim, so its
// retry starts afresh. Later attempts may take another path (a takeover
// writes more) and are not counted.
func (s *session) do(ctx context.Context, addr string, req wire.Request, count bool) wire.Result {
	if !count || s.Powers == nil || s.writes > 0 {
		return s.client.Do(ctx, addr, req)
	}
	disarm, err := s.Powers.ArmDB(writeCounter)
	if err != nil {
		return s.client.Do(ctx, addr, req)
	}
	res := s.client.Do(ctx, addr, req)
	l := disarm()
	if res.Err == nil && res.Status >= 200 && res.Status < 300 {
		s.writes, s.lastKind = l.Seen, l.LastKind
	}
	return res
}

// nthByRound chooses the effect write a round's db-cut, db-cut-after or
// db-hold acts on.
// A handler's writes come in order (a key's claim, the work's COMMIT, the
// key's finish), and the moment before each is a window a failure or a
// crash can fall in. The last is tried first, since everything before it
// has committed and it has not, which is where most bugs show; then the
// one before it, and so on, a round each. The number of writes comes from
// clean attempts (do); until one was counted, the first write is tried. A
// fault with an explicit match, or with alternate, alternates its 1st and
// 2nd match.
func (s *session) nthByRound(check string, f faults.Fault, round int, alternate bool) faults.Fault {
	_, explicit := f.Params["match"]
	nth := (round-1)%2 + 1
	if !explicit && !alternate {
		nth = 1
		if k := s.writes; k > 0 {
			nth = k - s.shifts[check]%k
			s.shifts[check]++
		}
	}
	return withNth(f, nth)
}

// withNth is f, a db-cut, db-cut-after or db-hold, acting on its nth match.
func withNth(f faults.Fault, nth int) faults.Fault {
	g := faults.Fault{Name: f.Name, Link: f.Link, Params: maps.Clone(f.Params)}
	if g.Params == nil {
		g.Params = map[string]string{}
	}
	g.Params["nth"] = strconv.Itoa(nth)
	return g
}

// scheduled records what a burst's write barrier did: each held write,
// then their release.
func (s *session) scheduled(a idemcheck.Attempt, sched faults.Schedule) {
	for _, w := range sched.Held {
		s.rec.event(idemcheck.Event{Kind: idemcheck.WriteHeld, Time: w.Held, Check: a.Check, Intent: a.Intent,
			Round: a.Round, Step: a.Step, Landing: w.Kind, SQL: clip(s.scrub(w.SQL), eventSQL), Conn: w.Conn, Order: w.Order,
			Detail: turnDetail(sched, w)})
	}
	s.rec.event(idemcheck.Event{Kind: idemcheck.WritesReleased, Time: sched.Released, Check: a.Check, Intent: a.Intent,
		Round: a.Round, Step: a.Step, Order: sched.ReleasedTogether(), Reason: sched.Reason, Detail: sched.Detail()})
}

// turnDetail says, for a write released in turn, when it went and when
// the database had answered it, relative to the first release: "" for a
// write released together or never released.
func turnDetail(sched faults.Schedule, w faults.HeldWrite) string {
	if !sched.InTurn || w.Order == 0 {
		return ""
	}
	d := fmt.Sprintf("released %s of %d, %s after the first", ordinal(w.Order), sched.ReleasedTogether(), w.Released.Sub(sched.Released).Round(time.Microsecond))
	switch {
	case w.Next == "":
	case w.Finished.IsZero():
		d += fmt.Sprintf("; the next went before the database had answered it, once the target was %s", turnText[w.Next])
	default:
		d += fmt.Sprintf("; the database had answered it %s later, and the next went once the target was %s",
			w.Finished.Sub(w.Released).Round(time.Microsecond), turnText[w.Next])
	}
	return d
}

// turnText words a faults.Turn* value.
var turnText = map[string]string{
	faults.TurnIdle:       "idle (every session of the database idle or waiting on a lock)",
	faults.TurnWaiting:    "waiting on a lock",
	faults.TurnQuiet:      "quiet (nothing reached the database link for a while)",
	faults.TurnBound:      "still busy when the bounded wait passed",
	faults.TurnBurstEnded: "done: the burst had ended",
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// eventSQL bounds the statement text a fault's event keeps.
const eventSQL = 200

// landed records in the history what a step's fault (named fault) did:
// FaultLanded with where it acted (landing, sql, at), or, when landing is
// "", FaultMissed with missed, a sentence saying what the fault waited for
// in vain. a places it in its check, intent, round and step.
func (s *session) landed(a idemcheck.Attempt, fault, landing, sql string, at time.Time, missed string) {
	ev := idemcheck.Event{Kind: idemcheck.FaultLanded, Time: at, Check: a.Check, Intent: a.Intent,
		Round: a.Round, Step: a.Step, Fault: fault, Landing: landing, SQL: clip(sql, eventSQL)}
	if landing == "" {
		ev.Kind, ev.Time, ev.Detail = idemcheck.FaultMissed, time.Now(), missed
	}
	s.rec.event(ev)
}

// dbLanding records where a database-link fault armed for a step landed,
// from its disarm. db-latency, which always acts and has no landing, and
// no fault at all record nothing.
func (s *session) dbLanding(a idemcheck.Attempt, f faults.Fault, l faults.Landing) {
	if f.Name != "db-cut" && f.Name != "db-cut-after" && f.Name != "db-hold" {
		return
	}
	if (f.Name == "db-cut" || f.Name == "db-cut-after") && l.Kind != "" {
		s.cut, s.cutSQL = true, l.SQL
	}
	missed := dbMissed(f)
	if s.last.Intent == a.Intent && s.last.Step == a.Step && s.last.Outcome == idemcheck.Replied {
		missed += failedFirst(s.last.Status)
	}
	s.landed(a, f.String(), l.Kind, l.SQL, l.Time, missed)
}

// failedFirst adds to a database-link fault's miss that the attempt was
// answered with a server error before it: a target that fails before it
// reaches its database (one whose connection is dead) is not one whose
// handler writes nothing.
func failedFirst(status int) string {
	if status < 500 {
		return ""
	}
	return fmt.Sprintf("; it answered %d without one: it failed before it reached its database", status)
}

// dbMissed says what a db-cut or db-hold that did not act waited for.
func dbMissed(f faults.Fault) string {
	nth, _ := strconv.Atoi(f.Params["nth"])
	match, explicit := f.Params["match"]
	switch {
	case !explicit && nth <= 1:
		return "the target sent no COMMIT and no autocommitted write while the attempt ran"
	case !explicit:
		return fmt.Sprintf("the target sent fewer than %d effect writes (a COMMIT or an autocommitted write) while the attempt ran", nth)
	case nth <= 1:
		return fmt.Sprintf("the target sent no statement matching %q while the attempt ran", match)
	}
	return fmt.Sprintf("the target sent fewer than %d statements matching %q while the attempt ran", nth, match)
}

// replyLanding records whether a cut-reply on the client link acted: the
// request was written whole and the reply began to arrive before the
// connection ended. Other client faults record nothing.
func (s *session) replyLanding(a idemcheck.Attempt, f faults.Fault, res wire.Result) {
	if f.Name != faults.CutReply.Name {
		return
	}
	var missed string
	switch {
	case res.ErrKind == wire.KindRefused:
		missed = "the connection was refused: the target was not listening"
	case !res.Written:
		missed = "the request was not written whole: " + errText(res)
	case res.Err == nil:
		missed = "the reply arrived whole: nothing was cut"
	case res.FirstByte.IsZero():
		// Through the proxy a target that is not listening shows here: the
		// proxy accepted the connection, then could not reach the target.
		missed = "no reply byte arrived before the connection ended (the target did not answer, or was not listening): " + errText(res)
	default:
		s.landed(a, f.String(), idemcheck.LandedReply, "", res.FirstByte, "")
		return
	}
	s.landed(a, f.String(), "", "", time.Time{}, missed)
}

func errText(res wire.Result) string {
	if res.Err == nil {
		return "no error"
	}
	return res.Err.Error()
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// LeaseMargin is how long past the policy's lease a retry keeps trying
// before a key still in progress counts as stuck.
const LeaseMargin = 2 * time.Second

// retryWhileInProgress sends the attempt, and again while the answer is the
// policy's in-progress status, honouring Retry-After, until the lease plus
// a margin has passed: a key left running by a dead attempt must become
// retakable within its lease.
func (s *session) retryWhileInProgress(ctx context.Context, addr string, req wire.Request, base idemcheck.Attempt, count bool) error {
	deadline := time.Now().Add(s.Policy.Lease + LeaseMargin)
	for {
		res, err := s.doRecorded(ctx, addr, req, base, count)
		if err != nil {
			return err
		}
		inProgress := res.Err == nil && s.Policy.InProgress(res.Status) && !refusal(res)
		if !inProgress || !time.Now().Before(deadline) {
			return nil
		}
		if err := waitToRetry(ctx, res, deadline); err != nil {
			return err
		}
	}
}

// waitToRetry waits before the next retry of an attempt told the key is
// in progress: its Retry-After, else 200 ms, and never past deadline.
func waitToRetry(ctx context.Context, res wire.Result, deadline time.Time) error {
	wait := 200 * time.Millisecond
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && ra > 0 {
		wait = time.Duration(ra) * time.Second
	}
	wait = min(wait, time.Until(deadline))
	t := time.NewTimer(max(wait, 10*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// takeOver sends the retry of an attempt frozen past the lease, and again
// while it is told the key is in progress, until by: a target whose lease
// ran out lets it take the key over. It returns the answers that told the
// key is in progress (recorded after the frozen attempt, by releaseHeld)
// and the last answer, or nil and the channel of a retry still unanswered
// at by (waiting on the frozen attempt's locks, most likely).
func (s *session) takeOver(ctx context.Context, c *wire.Client, addr string, req wire.Request, by time.Time) (told []wire.Result, last *wire.Result, pending <-chan wire.Result) {
	for {
		done := make(chan wire.Result, 1)
		go func() { done <- c.Do(ctx, addr, req) }()
		t := time.NewTimer(time.Until(by))
		select {
		case r := <-done:
			t.Stop()
			if r.Err != nil || !s.Policy.InProgress(r.Status) || !time.Now().Before(by) {
				return told, &r, done
			}
			if waitToRetry(ctx, r, by) != nil {
				return told, &r, done
			}
			told = append(told, r)
		case <-t.C:
			return told, nil, done
		}
	}
}

// redeliver is a webhook sender's answer to a step none of whose
// deliveries (sent) was acknowledged: it delivers the same request again,
// through the clean link, after the backoff of Redelivery, until a
// delivery is acknowledged or MaxRedeliveries were made. A 5xx, any other
// status outside the policy's successes, and no reply at all (a timeout, a
// reset) are not acknowledgements.
func (s *session) redeliver(ctx context.Context, req wire.Request, base idemcheck.Attempt, sent []idemcheck.Attempt) error {
	acked := func(a idemcheck.Attempt) bool { return a.Outcome == idemcheck.Replied && s.Policy.Replay(a.Status) }
	if slices.ContainsFunc(sent, acked) {
		return nil
	}
	addr, err := s.addr(faults.None)
	if err != nil {
		return fmt.Errorf("redeliver: %w", err)
	}
	base.Fault, base.FaultLinks, base.Burst = "", nil, 0
	for n := 1; n <= MaxRedeliveries; n++ {
		t := time.NewTimer(Redelivery(s.Policy, n))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if err := s.pace.wait(ctx, 1); err != nil {
			return err
		}
		a := base
		a.Redelivery = n
		if acked(s.record(a, s.client.Do(ctx, addr, req))) {
			return nil
		}
	}
	return nil
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
func (s *session) held(ctx context.Context, st Step, addr string, req wire.Request, first, retry idemcheck.Attempt) error {
	if s.Powers == nil {
		return fmt.Errorf("%s needs control of the target", first.Check)
	}
	disarm, err := s.Powers.ArmDB(st.DBFault)
	if err != nil {
		return err
	}
	defer disarm()
	patient := s.patient()
	firstDone := make(chan wire.Result, 1)
	go func() { firstDone <- patient.Do(ctx, addr, req) }()
	var ev faults.HoldEvent
	select {
	case ev = <-s.Powers.Held():
	case res := <-firstDone:
		// The target answered without reaching the held statement: there
		// was no window to break. Recorded as it is, with the fault's miss;
		// the retry still runs, on a clean link.
		missed := dbMissed(st.DBFault)
		if res.Err == nil {
			missed += failedFirst(res.Status)
		}
		if l := disarm(); l.Acted() {
			// It held a statement the attempt did not wait for (a
			// background job's): let that one go, and say so.
			missed = fmt.Sprintf("the target answered while the fault held another of its statements, not this attempt's: %s", clip(l.SQL, eventSQL))
			select {
			case ev := <-s.Powers.Held():
				_ = ev.Release()
			case <-time.After(time.Second):
			}
		}
		s.landed(first, st.DBFault.String(), "", "", time.Time{}, missed)
		s.record(first, res)
		return s.retryWhileInProgress(ctx, addr, req, retry, true)
	case <-time.After(holdTimeout):
		return fmt.Errorf("%s: the target did not reach %q within %v", first.Check, st.DBFault.Params["match"], holdTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.landed(first, st.DBFault.String(), ev.Landing, ev.SQL, time.Now(), "")
	switch st.OnHold {
	case HoldCrash:
		killed, err := s.kill(first, LandedHeldStatement, ev.SQL, "killed while its statement was held on the database link, before it reached the database")
		if err != nil {
			_ = ev.Cut()
			return err
		}
		_ = ev.Cut()
		s.record(first, <-firstDone)
		if !killed {
			return s.retryWhileInProgress(ctx, addr, req, retry, true)
		}
		if err := s.restart(ctx, first); err != nil {
			return err
		}
		return s.retryWhileInProgress(ctx, addr, req, retry, true)
	case HoldInFlight:
		retryDone := make(chan wire.Result, 1)
		go func() { retryDone <- patient.Do(ctx, addr, req) }()
		rres, err := s.awaitInFlight(ctx, retryDone)
		if err != nil {
			_ = ev.Cut()
			return err
		}
		s.releaseHeld(ev, firstDone, retryDone, rres, first, retry)
		return nil
	case HoldStall:
		frozen := time.Now()
		stall := time.NewTimer(s.Policy.Lease + LeaseMargin/4)
		select {
		case <-ctx.Done():
			stall.Stop()
			_ = ev.Cut()
			return ctx.Err()
		case <-stall.C:
		}
		// The retry goes past the lease, and again while it is told the
		// key is in progress (a lease measured a little longer than
		// declared), for up to the margin; one still unanswered then is
		// waiting, on the held attempt's locks most likely: the original
		// resumes and the two race for the key.
		told, rres, retryDone := s.takeOver(ctx, patient, addr, req, frozen.Add(s.Policy.Lease+LeaseMargin+LeaseMargin/4))
		if ctx.Err() != nil {
			_ = ev.Cut()
			return ctx.Err()
		}
		s.releaseHeld(ev, firstDone, retryDone, rres, first, retry, told...)
		return nil
	}
	return fmt.Errorf("unknown hold action %d", st.OnHold)
}

// releaseHeld lets the held first attempt go on, waits for it and for the
// retry sent while it was held (rres, when already answered), and records
// them: the first, the retries told the key was in progress before (told),
// then the last retry.
func (s *session) releaseHeld(ev faults.HoldEvent, firstDone, retryDone <-chan wire.Result, rres *wire.Result, first, retry idemcheck.Attempt, told ...wire.Result) {
	// Recorded before the release, so that a retry answered after it
	// (waiting on the first's locks) is never taken for a takeover.
	s.event(idemcheck.HoldReleased, first, first.Fault, "", "", "the held attempt was let go on")
	_ = ev.Release()
	fres := <-firstDone
	if rres == nil {
		r := <-retryDone
		rres = &r
	}
	s.record(first, fres)
	for _, r := range told {
		s.record(retry, r)
	}
	s.record(retry, *rres)
}

// request fills the endpoint's templates for one intent and applies the
// variant; it returns the request and the key it carries ("" for none).
func (s *session) request(in idemcheck.Intent, v idemcheck.Variant) (wire.Request, string) {
	e := s.Endpoint
	// The id a signature signs is the event's: a request sent without
	// its key (missing-key) is still signed as the sender would sign
	// the event, so that the consumer judges the body, not the signature.
	signID := in.Key
	switch v {
	case idemcheck.OtherKey:
		in.Key = uuid.NewString() // every template sees the new key
	case idemcheck.NoKey, idemcheck.EmptyKey:
		in.Key = ""
	case idemcheck.OverlongKey:
		in.Key = OverlongKey(in.Key)
	case idemcheck.ListKey:
		in.Key = ListKey(in.Key)
	case idemcheck.LongKey:
		in.Key = LongKey(in.Key, 'a')
	case idemcheck.LongKeyTwin:
		in.Key = LongKey(in.Key, 'b')
	}
	// The body and path are computed once per step: every attempt of it,
	// and every redelivery, sends the same bytes, as a sender resends an
	// event. Headers that are computed are computed per attempt (finish).
	sd := idemcheck.Send{Now: e.clock()}
	method, body := e.Method, e.Body.FillAt(in, sd)
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
		method = e.Other.Method
		if e.Other.Body != nil {
			body = e.Other.Body.Fill(in)
		}
	case idemcheck.NoKey:
		if ptr := s.Policy.KeyPointer; ptr != "" {
			body = RemoveMember(body, ptr)
		}
	case idemcheck.Failing:
		body = e.FailingBody.Fill(in)
	case idemcheck.InvalidBody:
		body = e.invalidBody(in)
	}
	sd.Body = []byte(body)
	pathT := e.Path
	if v == idemcheck.OtherEndpoint {
		pathT = e.Other.Path
	}
	path := pathT.FillAt(in, sd)
	hdr := http.Header{}
	var computed []Header
	for _, h := range e.Header {
		if h.Value.Computed() {
			computed = append(computed, h)
			continue
		}
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
	switch {
	case v == idemcheck.EmptyKey:
		hdr.Set(s.Policy.KeyHeader, "") // present, with nothing in it
	case in.Key != "" && s.Policy.KeyPointer == "":
		hdr.Set(s.Policy.KeyHeader, in.Key)
	default:
		hdr.Del(s.Policy.KeyHeader)
	}
	if in.Key != "" {
		signID = in.Key
	}
	return wire.Request{Method: method, Path: path, Header: hdr, Body: []byte(body), Finish: s.finish(in, v, signID, computed)}, in.Key
}

// finish returns what computes a request's per-attempt parts at send time
// (wire.Request.Finish): the computed headers over the exact body sent,
// then the signature, with a fresh timestamp each time; nil when there
// are none. The event id a scheme signs (id) is the intent's key, which a
// redelivery keeps.
func (s *session) finish(in idemcheck.Intent, v idemcheck.Variant, id string, computed []Header) func(wire.Request) wire.Request {
	e := s.Endpoint
	if len(computed) == 0 && e.Sign == nil {
		return nil
	}
	return func(r wire.Request) wire.Request {
		h := r.Header.Clone()
		sd := idemcheck.Send{Now: e.clock(), Body: r.Body}
		for _, c := range computed {
			h.Add(c.Name, c.Value.FillAt(in, sd))
		}
		if e.Sign != nil {
			g := *e.Sign
			switch v {
			case idemcheck.BadSignature:
				g.Secret = forgedSecret
			case idemcheck.StaleSignature:
				sd.Now = sd.Now.Add(-StaleAge)
			}
			g.Sign(h, id, r.Body, sd.Now)
			if !s.soak {
				// A reply that echoes this attempt's signature hides it
				// too. A soak's attempts are too many to learn each.
				s.secret().LearnHeader(e.Sign.SignatureHeader(), h.Get(e.Sign.SignatureHeader()))
			}
		}
		r.Header = h
		return r
	}
}

// record records one of a certification's sends (put) and keeps what the
// run looks back at: the count sent, the step's attempts, the last one.
// It returns the attempt as recorded, numbered.
func (s *session) record(a idemcheck.Attempt, res wire.Result) idemcheck.Attempt {
	s.sent++
	a = s.put(a, res)
	s.step = append(s.step, a)
	s.last = a
	return a
}

// describe records on a the request it sends, as a history keeps it, in
// both modes: the headers redacted, the path and body with every secret
// hidden (those the request itself carries learnt first), and fp, its
// fingerprint.
func (s *session) describe(a *idemcheck.Attempt, req wire.Request, fp string) {
	// Computed headers are described as computed now, the signatures
	// among them hidden; each sent attempt then records its own (fill).
	req = req.Finished()
	a.Method, a.Header, a.Path, a.Body = req.Method, s.redact(req.Header), s.scrubRequest(req), s.scrub(string(req.Body))
	a.Fingerprint = fp
}

// put fills a from res (fill) and hands it to the recorder, which numbers
// it: the one way a send becomes a recorded attempt, in a certification
// and in a soak. A soak's many goroutines call it at once: fill and a
// soak's recorder are safe for that.
func (s *session) put(a idemcheck.Attempt, res wire.Result) idemcheck.Attempt {
	s.fill(&a, res)
	accepted := a.Outcome == idemcheck.Replied && s.Policy.Accepted(a.Status)
	if accepted {
		s.accepted.Store(true)
	}
	a = s.rec.attempt(a)
	if accepted && !s.soak && len(s.intents) > 0 {
		s.noteOperation(a, res, s.intents[len(s.intents)-1])
	}
	return a
}

// fill records a send on a: its times, its outcome and, when it was
// answered, the reply (headers redacted, secrets hidden). It is the one
// way a result becomes an attempt, in a certification and in a soak
// (whose vegeta sends come as wire.Results too: vegetaResult).
func (s *session) fill(a *idemcheck.Attempt, res wire.Result) {
	a.Start, a.FirstByte, a.End = res.Start, res.FirstByte, res.End
	if res.SentHeader != nil {
		// This attempt's own computed headers (its timestamp, its
		// signature hidden), not those described for its step.
		a.Header = s.redact(res.SentHeader)
	}
	switch {
	case res.Err == nil:
		a.Outcome = idemcheck.Replied
	case !res.Written || res.ErrKind == wire.KindRefused:
		a.Outcome = idemcheck.NotSent
	default:
		a.Outcome = idemcheck.Unknown
	}
	if res.Err != nil {
		a.Error = s.scrub(res.Err.Error())
	}
	if a.Outcome == idemcheck.Replied {
		a.Status = res.Status
		s.secret().LearnBody(res.Body)
		a.RespHeader = s.redact(res.Header)
		a.RespBody = s.scrub(string(res.Body))
	}
}

// scrubRequest learns the secrets a request carries in its body and query
// and returns its path with every known secret hidden; its body is then
// scrubbed with them too.
func (s *session) scrubRequest(req wire.Request) string {
	s.secret().LearnBody(req.Body)
	s.secret().LearnQuery(req.Path)
	return s.scrub(req.Path)
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
