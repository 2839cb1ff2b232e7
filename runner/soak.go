package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Soak is a production-like load: a rate of distinct intents for a
// duration (certify.Soak, the soak's entry point, checks its configuration
// and makes one from a certify.SoakConfig), under the faults of a bad day (Faults: a share of replies cut
// after the server committed, connections reset, requests lost, a slow
// link), the first attempts that got no reply retried with the same key,
// and every intent's effects counted.
// vegeta paces and sends the first attempts; retries go through the
// harness's own client. Nothing of the run is kept in memory beyond what
// is in flight: each attempt and observation is a history record as soon
// as it is made, handed to Counter and streamed to History (the runner's
// streaming recorder), filled as a certification's attempts are.
type Soak struct {
	Endpoint scenarios.Endpoint
	Policy   idemcheck.Policy
	// Effects, when set, counts each intent's effects, in batches
	// (Effects.CountBatch): after the load, or while it runs with
	// CountDuring.
	Effects *Effects
	// CountDuring counts effects while the load runs, a batch at a time as
	// intents complete, instead of after it: the soak ends sooner, but the
	// counting takes database time and cores from the target it measures.
	CountDuring bool
	// Settle, for effects that land after the reply (a 202 Accepted, a
	// background worker, a queue), is the longest to wait, from the end of
	// the load, for them to settle (see soaksettle.go). Counted after the
	// load, every intent is counted in passes until a whole pass counts
	// the same as the one before it, at least a quiet period (SettleQuiet)
	// later, or the bound runs out; its counts carry what settling did
	// (Observation.Settle). With CountDuring, every intent is counted as
	// it completes and again once Settle has passed since the load's end:
	// an effect that appeared in between is a late duplicate. Zero counts
	// once, as the intents complete or after the load. Where the policy
	// names a StatusPointer, the passes also follow each accepted
	// intent's status monitor until it says the operation is over
	// (soakops.go).
	Settle time.Duration
	// Rate is intents per second; Duration how long to send them.
	Rate     int
	Duration time.Duration
	// Intents, when positive, ends the soak after that many intents, even
	// if Duration has not passed.
	Intents int64
	// Faults are the faults the soak runs under (see SoakFault and
	// CheckSoakFaults): those on single attempts each hit their share of
	// first attempts, drawn once per intent from Seed, cut-reply's share
	// first; those on a whole link act on every attempt. The faults on
	// the database link need Powers. No fault: a clean soak.
	Faults []SoakFault
	// Powers are the harness's hold on a target it started: the soak arms
	// its faults of the database link through them. Nil for a target
	// reached by URL alone.
	Powers targets.Powers
	// Seed chooses which intents meet which fault, so a seed replays the
	// schedule.
	Seed int64
	// Shard, when its Count is above 1, makes this soak one part of a
	// soak spread over several processes: its intents are numbered
	// Shard.Seq (no two shards share one), and its faults are drawn from
	// the seed's stream of its own. Rate and Intents are then this shard's
	// part (Shard.Part), which the caller computes.
	Shard idemcheck.Shard
	// Workers bounds vegeta's concurrent requests (default 64).
	Workers int
	Timeout time.Duration
	// Redactor, Redact, Secrets, RedactFields and RedactQuery hide the
	// soak's secrets in its history, its vegeta results and its errors, as
	// a certification's (see Runner).
	Redactor                  *idemcheck.Redactor
	Redact, Secrets           []string
	RedactFields, RedactQuery []string
	// Upstream is the checked address (IP:port) of the target, from
	// certify.ResolveTarget; empty means Upstream(Endpoint.Base). Both the
	// fault proxy and vegeta's direct requests go there, never to a name.
	Upstream string
	// AllowRemote lets connections leave loopback; without it every dialer
	// of the soak refuses an address off loopback when it connects.
	AllowRemote bool
	// TLS, for an https:// target, is the client's TLS configuration, as
	// a certification's (Runner.TLS): every connection of the soak uses
	// it, vegeta's and the retries'. Nil means the system's roots and no
	// client certificate. Over TLS a soak runs only the faults whose
	// meaning TLS leaves intact (CheckSoakFaults).
	TLS *tls.Config
	// MaxBody is how many bytes of each reply body are kept (0 means
	// DefaultMaxBody, 64 KiB).
	MaxBody int64
	// History, when set, receives the soak's history as it happens: Header
	// first, then every intent, attempt and observation.
	History *history.Encoder
	// Header is written as the history's run record, with the soak's
	// faults (Run.SoakFaults) filled in.
	Header idemcheck.Run
	// VegetaResults, when set, receives vegeta's own result of every first
	// attempt, in vegeta's encoding (gob, as `vegeta attack` writes it), so
	// that `vegeta report` and `vegeta plot` read a soak. Reply bodies and
	// headers are left out (they may hold secrets, and neither tool reads
	// them); the URL is the target's, without the soak's routing.
	VegetaResults io.Writer
	// Progress, when set, is given the soak's running count every
	// ProgressEvery (default one second) while it runs, and once at the end.
	Progress      func(idemcheck.SoakProgress)
	ProgressEvery time.Duration
	// Counter, when set, is given every attempt (numbered, in the
	// history's order) and observation as it is recorded, one at a time,
	// whether or not a history is written: assert.SoakTally counts the
	// soak's duplicates and lost effects from them.
	Counter SoakCounter
}

// SoakCounter counts a soak from its history records (assert.SoakTally):
// the run header first, then attempts and observations.
type SoakCounter interface {
	Run(idemcheck.Run)
	Attempt(idemcheck.Attempt)
	Observation(idemcheck.Observation)
}

// Run sends the soak and returns the load generator's figures: rates,
// latencies, success share and duration. The counts (intents, cuts,
// duplicates, lost effects) are the Counter's, from the history records.
func (sk *Soak) Run(ctx context.Context) (*idemcheck.SoakResult, error) {
	if err := sk.check(); err != nil {
		return nil, err
	}
	single, wholeClient, wholeDB := soakPlan(sk.Faults)
	s := sk.session()
	routes, unroute, err := sk.route(s.upstream(), single, wholeClient, wholeDB)
	defer unroute()
	if err != nil {
		return nil, err
	}
	client, dialer := sk.client()

	// The soak records as a certification does, through its session's
	// recorder: one that streams, since a soak's history is kept nowhere
	// but in the file.
	rec := &streamRecorder{enc: sk.History, count: sk.Counter}
	s.rec = rec
	if err := s.rec.run(sk.header(s, single, wholeClient, wholeDB)); err != nil {
		return nil, err
	}
	counting, err := sk.startCounting(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer counting.remove()
	r := &soakRun{sk: sk, s: s, rec: rec, client: client, routes: routes, live: &soakLive{shard: sk.Shard}, counts: counting.counts}
	retries, retried := r.retriers(ctx)
	attacker := sk.attacker(ctx, client, dialer)

	// A cancelled run stops sending at once, even while no result comes in.
	stopOnCancel := context.AfterFunc(ctx, func() { attacker.Stop() })
	defer stopOnCancel()
	start := time.Now()
	defer sk.progress(r.live, start)()
	metrics, vegetaErr := r.attack(attacker, retries)
	close(retries)
	retried()
	loadEnd := time.Now()
	if err := counting.wait(); err != nil {
		return nil, err
	}
	metrics.Close()
	res := &idemcheck.SoakResult{Duration: time.Since(start)}
	if vegetaErr != nil {
		return nil, fmt.Errorf("vegeta results: %w", vegetaErr)
	}
	if err := sk.countAfterLoad(ctx, s, rec, counting.spool, loadEnd); err != nil {
		return nil, err
	}
	res.Throughput, res.Rate, res.Success = metrics.Throughput, metrics.Rate, metrics.Success
	res.P50, res.P90, res.P99, res.Max = metrics.Latencies.P50, metrics.Latencies.P90, metrics.Latencies.P99, metrics.Latencies.Max
	if err := s.rec.flush(); err != nil {
		return res, fmt.Errorf("history: %w", err)
	}
	return res, ctx.Err()
}

// check refuses a soak that cannot run as configured: a scheme other
// than http or https, faults it cannot run, a negative settle bound, a
// fault on the database link of a target whose link it cannot reach.
func (sk *Soak) check() error {
	overTLS := sk.Endpoint.Base.Scheme == "https"
	if !overTLS && sk.Endpoint.Base.Scheme != "http" {
		return fmt.Errorf("a soak sends http:// or https://, not %s://", sk.Endpoint.Base.Scheme)
	}
	if err := CheckSoakFaults(sk.Faults, sk.Powers != nil, overTLS); err != nil {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "%s: %w", idemcheck.Field("Faults"), err)
	}
	if sk.Settle < 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Settle", "%s %v must not be negative", idemcheck.Field("Settle"), sk.Settle)
	}
	_, _, wholeDB := soakPlan(sk.Faults)
	if why := scenarios.NoDBLink(sk.Powers); why != "" && len(wholeDB) > 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "%s: %s acts on the target's database link, and %s", idemcheck.Field("Faults"), wholeDB[0].Fault.Name, why)
	}
	return nil
}

// header is the history's run record: the soak's Header, its secrets
// hidden, with its shard and its faults in the order the soak draws them.
func (sk *Soak) header(s *session, single, wholeClient, wholeDB []SoakFault) idemcheck.Run {
	header := sk.Header
	header.SoakFaults = nil
	// The path as the user wrote it may hold a secret query value.
	header.Target.Path = s.scrubRequest(wire.Request{Path: header.Target.Path})
	header.Target.URL = s.scrub(header.Target.URL)
	if sk.Shard.Count > 1 {
		shard := sk.Shard
		header.Shard = &shard
	}
	for _, fs := range [][]SoakFault{single, wholeClient, wholeDB} {
		for _, f := range fs {
			header.SoakFaults = append(header.SoakFaults, f.String())
		}
	}
	return header
}

// Preflight sends one plain request for a fresh intent, straight to the
// target, as a certification's pre-flight does (Runner.Preflight), so a
// soak that could measure nothing stops before it sends its load: a 4xx
// no client would retry is a *RefusedError, a TLS failure (an untrusted
// certificate, a client certificate the target wants) a usage error
// naming the TLS settings. The request is in no history and counts for
// nothing; any other answer, or none, lets the soak go on.
func (sk *Soak) Preflight(ctx context.Context) error {
	s := sk.session()
	s.client, _ = sk.client()
	s.direct, s.pace = s.upstream(), newPacer(0, 1)
	return s.preflight(ctx)
}

// session is the soak's session of the runner: the settings the two
// modes share, read from the soak's.
func (sk *Soak) session() *session {
	r := &Runner{Endpoint: sk.Endpoint, Policy: sk.Policy, Redactor: sk.Redactor, Redact: sk.Redact, Secrets: sk.Secrets,
		RedactFields: sk.RedactFields, RedactQuery: sk.RedactQuery, Upstream: sk.Upstream, AllowRemote: sk.AllowRemote, TLS: sk.TLS}
	return &session{Runner: r, run: newRunID(), soak: true}
}

func (sk *Soak) timeout() time.Duration {
	if sk.Timeout <= 0 {
		return DefaultTimeout
	}
	return sk.Timeout
}

func (sk *Soak) maxBody() int64 {
	if sk.MaxBody <= 0 {
		return DefaultMaxBody
	}
	return sk.MaxBody
}

// client is the harness's own client for the soak's retries (and its
// pre-flight), and the dialer of vegeta's transport: both refuse an
// address off loopback unless allowed, and, for an https:// target, share
// one TLS configuration, as a certification's connections do (HTTP/1.1,
// as the soak's plain traffic is).
func (sk *Soak) client() (*wire.Client, *net.Dialer) {
	client := newClient(sk.Endpoint.Base, sk.timeout(), sk.maxBody(), sk.AllowRemote, sk.TLS)
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: client.Control}
	return client, dialer
}

// SoakLoad measures a soak's load again from its history: its first
// attempts (those vegeta sent) become vegeta's results once more, so a
// history checked offline, or several shards' merged, give the rate,
// success share and latencies as vegeta computes them. Its memory is
// bounded (vegeta's latency quantiles are a digest): no attempt is kept.
type SoakLoad struct {
	m vegeta.Metrics
}

// Attempt adds one attempt; retries are not part of the measured load.
func (l *SoakLoad) Attempt(a idemcheck.Attempt) {
	if a.Step > 1 || a.Start.IsZero() {
		return
	}
	r := vegeta.Result{Timestamp: a.Start, Latency: a.End.Sub(a.Start)}
	if a.Outcome == idemcheck.Replied {
		r.Code = uint16(a.Status)
	}
	l.m.Add(&r)
}

// Result returns the load's figures: duration, rates, success share and
// latencies.
func (l *SoakLoad) Result() idemcheck.SoakResult {
	l.m.Close()
	return idemcheck.SoakResult{
		Duration: l.m.Duration + l.m.Wait, Throughput: l.m.Throughput, Rate: l.m.Rate, Success: l.m.Success,
		P50: l.m.Latencies.P50, P90: l.m.Latencies.P90, P99: l.m.Latencies.P99, Max: l.m.Latencies.Max,
	}
}

// Start is when the first attempt of the load began (zero with none).
func (l *SoakLoad) Start() time.Time { return l.m.Earliest }
