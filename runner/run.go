package runner

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Progress is reported after every step of every round.
type Progress struct {
	Check         string
	Round, Rounds int
	// Sent counts the attempts sent so far in the whole run, of Total.
	Sent, Total int
}

// Defaults of a run whose settings leave a limit zero, a certification's
// and a soak's: the command, suite files and idemchecktest use the same.
const (
	// DefaultTimeout bounds each attempt when Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBody is how many bytes of each reply body are kept when
	// MaxBody is zero, in a certification and a soak, from Go and from
	// the command alike. Every attempt keeps its reply body for the whole
	// run (the checks compare them, the history holds them), so the kept
	// part is what a hostile or merely verbose target costs per attempt:
	// measured against a target answering 50 MB of NUL bytes, a default
	// run (190 attempts) kept 1 MiB each, peaked at 494 MiB and wrote a
	// 1.1 GB history. Replies that idempotency checks compare are small;
	// a longer one is compared on its first 64 KiB and marked truncated.
	DefaultMaxBody int64 = 64 << 10
)

// Runner sends scenarios to one endpoint and records every attempt. A step
// with a client-link fault goes through an in-process fault proxy; every
// other step, bursts included, reaches the target directly, so that nothing
// stands between a burst's release and the target.
type Runner struct {
	Endpoint scenarios.Endpoint
	Policy   idemcheck.Policy
	// Effects, when set, is queried after every round, and every counted
	// intent again after the last check.
	Effects *Effects
	// Settle, when set, bounds the wait for effects that land after the
	// reply: each intent's count is polled until it stays the same for
	// SettleQuiet(Settle), its check's intents together (settle.go).
	Settle time.Duration
	// Timeout bounds each attempt; zero means DefaultTimeout.
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
	// off loopback when it connects, whatever a name resolved to.
	AllowRemote bool
	// MaxBody is how many bytes of each reply body are kept (0 means
	// DefaultMaxBody).
	MaxBody int64
	// Protocol chooses the burst engine: idemcheck.ProtocolAuto (HTTP/2
	// single-packet release where the target speaks h2, else HTTP/1.1
	// last-byte synchronisation), ProtocolHTTP1 or ProtocolH2. Empty means
	// auto.
	Protocol idemcheck.Protocol
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
// maxBody bytes of each reply kept (zero: this package's defaults), every
// connection refusing an address off loopback unless allowRemote, and, for
// an https:// target, the TLS configuration tlsCfg (ClientTLS) offering
// HTTP/1.1; a burst engine that speaks HTTP/2 sets its own.
func newClient(base *url.URL, timeout time.Duration, maxBody int64, allowRemote bool, tlsCfg *tls.Config) *wire.Client {
	// The run's single attempts measure the round trips its HTTP/1.1
	// bursts wait for between their prefixes and their release.
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
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
func (r *Runner) Run(ctx context.Context, scs []scenarios.Scenario, h *idemcheck.History) error {
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
	// Where effects land after the reply, on a target whose database link
	// the harness holds, the pre-flight is sent even when not asked for:
	// the writes it makes are the handler's own, before any worker's, and
	// a kill after the handler's last write needs to know which that is
	// (nthByRound). Its answer then stops nothing.
	preflighted := false
	if (r.Preflight || r.Settle > 0 && r.Powers != nil) && len(scs) > 0 {
		if err := s.preflight(ctx); err != nil && (r.Preflight || ctx.Err() != nil) {
			return err
		}
		preflighted = true
	}
	// Whether the database link carries the target's database traffic is
	// known once it was ready and, with a pre-flight, had answered a
	// request: the header records what was skipped for it.
	ok, why := r.DBLinkFaults()
	if !ok && !preflighted && r.NoDBLinkFaults == "" && scenarios.NoDBLink(r.Powers) == "" && len(scs) > 0 {
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
	for i, sc := range scs {
		if err := s.scenario(ctx, sc); err != nil {
			return err
		}
		// A check's effects are counted once they settled, after its
		// last scenario: one settling wait per check, however many
		// variations it sends. Its faults meet only each round's own
		// intent's writes (marks.go), and a round that kills first lets
		// the earlier intents' work land (round), so the variations need
		// no wait between them.
		if i+1 == len(scs) || scs[i+1].Check != sc.Check {
			if err := s.settlePending(ctx); err != nil {
				return s.explain(ctx, fmt.Errorf("count effects once settled: %w", err), idemcheck.Event{Check: sc.Check})
			}
		}
	}
	return s.end(ctx)
}

// scenario sends every round of sc, each again while its burst was
// refused or loose. Its intents' effects are counted with its check's
// (settlePending).
func (s *session) scenario(ctx context.Context, sc scenarios.Scenario) error {
	for round := 1; round <= sc.Rounds; round++ {
		looseRepeats, refusedRepeats := 0, 0
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
			if s.refusedWait > 0 && refusedRepeats < RefusalRepeats {
				refusedRepeats++
				if err := sleep(ctx, s.refusedWait); err != nil {
					return err
				}
			} else if loose && looseRepeats < LooseRepeats {
				looseRepeats++
			} else {
				break
			}
			s.total += sc.Attempts() / sc.Rounds
		}
	}
	return nil
}

// end records what belongs in the history after the last check: late
// effects, late provider calls, late exits of the target.
func (s *session) end(ctx context.Context) error {
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
	// acceptedKeys are the keys the running round's attempts were
	// answered accepted under (a certification's, not a soak's): its
	// settle awaits an effect for each.
	acceptedKeys []string
	// cut says a db-cut or db-cut-after of the running round landed, on cutSQL: the
	// round then ends by asking whether the target recovered (recovered).
	cut    bool
	cutSQL string
	// The running round's accepted operations and the client that reads
	// their status monitors (operations.go).
	operationsState
}

// looseAbove is the release spread above which a burst of n is loose.
func (s *session) looseAbove(n int) time.Duration {
	if s.looseSpread != nil {
		return s.looseSpread(n)
	}
	return idemcheck.LooseSpread(n)
}

// newRunID returns a short random id that keeps this run's intents apart
// from every earlier run's rows in a shared database.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(hex.EncodeToString(b[:]))
}
