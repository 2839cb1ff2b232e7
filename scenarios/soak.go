package scenarios

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/wire"
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
	Endpoint Endpoint
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
	// once, as the intents complete or after the load.
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
	// MaxBody is how many bytes of each reply body are kept (0 means 64
	// KiB, the soak's default: its replies are only compared for status).
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

// soakHit is one intent's first attempt, as sent.
type soakHit struct {
	in    idemcheck.Intent
	req   wire.Request
	fault faults.Fault // the fault it was sent through; None for clean
	fp    string       // the request's fingerprint, once an attempt record needed it
}

// Run sends the soak and returns the load generator's figures: rates,
// latencies, success share and duration. The counts (intents, cuts,
// duplicates, lost effects) are the Counter's, from the history records.
func (sk *Soak) Run(ctx context.Context) (*idemcheck.SoakResult, error) {
	overTLS := sk.Endpoint.Base.Scheme == "https"
	if !overTLS && sk.Endpoint.Base.Scheme != "http" {
		return nil, fmt.Errorf("a soak sends http:// or https://, not %s://", sk.Endpoint.Base.Scheme)
	}
	if err := CheckSoakFaults(sk.Faults, sk.Powers != nil, overTLS); err != nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "%s: %w", idemcheck.Field("Faults"), err)
	}
	if sk.Settle < 0 {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Settle", "%s %v must not be negative", idemcheck.Field("Settle"), sk.Settle)
	}
	single, wholeClient, wholeDB := soakPlan(sk.Faults)
	if why := noDBLink(sk.Powers); why != "" && len(wholeDB) > 0 {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Faults", "%s: %s acts on the target's database link, and %s", idemcheck.Field("Faults"), wholeDB[0].Fault.Name, why)
	}
	s := sk.session()
	upstream := s.upstream()
	// Each fault on the whole client link is a proxy in front of the
	// target (or of the one before it): every attempt goes through the
	// chain, the faulted ones through their own fault's proxy first.
	for _, f := range wholeClient {
		l, err := faults.NewLink(upstream)
		if err != nil {
			return nil, fmt.Errorf("start the fault proxy: %w", err)
		}
		defer l.Close()
		if upstream, err = l.Addr(f.Fault); err != nil {
			return nil, err
		}
	}
	link, err := faults.NewLink(upstream)
	if err != nil {
		return nil, fmt.Errorf("start the fault proxy: %w", err)
	}
	defer link.Close()
	// Clean first attempts go straight to the target (or the chain of
	// whole-link faults): a proxy hop would only cost CPU the target
	// needs. Faulted ones go through their fault's proxy, and retries
	// through the clean one.
	direct := link.Upstream()
	clean, err := link.Addr(faults.None)
	if err != nil {
		return nil, err
	}
	faultAddrs := make([]string, len(single))
	for i, f := range single {
		if faultAddrs[i], err = link.Addr(f.Fault); err != nil {
			return nil, err
		}
	}
	// The faults on the database link act on the target's own traffic
	// for the whole soak, pooled connections included.
	for _, f := range wholeDB {
		disarm, err := sk.Powers.ArmDB(f.Fault)
		if err != nil {
			return nil, fmt.Errorf("arm %s on the target's database link: %w", f.Fault, err)
		}
		defer disarm()
	}
	workers := sk.Workers
	if workers <= 0 {
		workers = 64
	}
	timeout := sk.timeout()
	maxBody := sk.maxBody()
	client, dialer := sk.client()
	scheme, transportTLS := sk.Endpoint.Base.Scheme, (*tls.Config)(nil)
	if client.TLS != nil {
		transportTLS = client.TLS.Clone()
	}

	// The soak records as a certification does, through its session's
	// recorder: one that streams, since a soak's history is kept nowhere
	// but in the file.
	rec := &streamRecorder{enc: sk.History, count: sk.Counter}
	s.rec = rec
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
	if err := s.rec.run(header); err != nil {
		return nil, err
	}
	res := &idemcheck.SoakResult{}
	live := &soakLive{shard: sk.Shard}
	var ids atomic.Int64
	// Shard 0 (and a whole soak) draws from the seed's first stream, so an
	// unsharded seed replays as it always did; each other shard from its own.
	rng := rand.New(rand.NewPCG(uint64(sk.Seed), 0x5eed+uint64(max(sk.Shard.Index, 0))))
	var rngMu sync.Mutex

	// The targeter makes a fresh intent for every hit; which fault it
	// meets, if any, comes from the seed: one draw per intent, in the
	// faults' shares laid end to end, cut-reply's first. The intent
	// travels in the URL's fragment, which is never sent but comes back
	// in vegeta's result.
	pending := sync.Map{} // fragment -> *soakHit, until its result arrives
	targeter := func(t *vegeta.Target) error {
		// The number and the draw are taken together: vegeta's workers
		// call this concurrently, and the nth intent must get the nth
		// draw for a seed to give the same intents the same faults.
		rngMu.Lock()
		n := ids.Add(1)
		draw := rng.Float64()
		rngMu.Unlock()
		if sk.Intents > 0 && n > sk.Intents {
			return vegeta.ErrNoTargets // vegeta stops the attack
		}
		seq := int(sk.Shard.Seq(n))
		in := idemcheck.Intent{ID: fmt.Sprintf("ic-%s-%d", s.run, seq), Key: uuid.NewString(), Seq: seq, Check: idemcheck.CheckSoak, Round: 1}
		// Computed now, as the attempt is sent.
		req, _ := s.request(in, idemcheck.Original)
		req = req.Finished()
		addr, fault := direct, faults.None
		end := 0.0
		for i, f := range single {
			if end += f.Share; draw < end {
				addr, fault = faultAddrs[i], f.Fault
				break
			}
		}
		frag := in.ID
		pending.Store(frag, &soakHit{in: in, req: req, fault: fault})
		t.Method = req.Method
		t.URL = scheme + "://" + addr + req.Path + "#" + frag
		t.Body = req.Body
		t.Header = req.Header.Clone()
		t.Header.Set("Host", sk.Endpoint.Base.Host)
		return nil
	}

	httpClient := &http.Client{
		Timeout: timeout,
		// Go's Transport resends a request that carries an idempotency key
		// when a kept-alive connection dies before the reply: without
		// GetBody it cannot, so every send stays one recorded attempt.
		// Its dialer refuses addresses off loopback unless allowed, and
		// its replies' headers are bounded as the harness's own client's.
		Transport: soakTransport{ctx, &http.Transport{
			MaxIdleConnsPerHost: workers, MaxIdleConns: workers, DisableCompression: true,
			DialContext: dialer.DialContext, MaxResponseHeaderBytes: wire.DefaultMaxHeaderBytes,
			TLSClientConfig: transportTLS,
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	attacker := vegeta.NewAttacker(vegeta.Client(httpClient), vegeta.Workers(uint64(min(workers, 8))), vegeta.MaxWorkers(uint64(workers)), vegeta.MaxBody(maxBody))
	var metrics vegeta.Metrics

	// Completed intents are spooled to a file and counted once the load
	// is over: counting during the load would take the database and the
	// cores from the target being measured, and the file keeps memory flat.
	// With CountDuring they are counted in batches as they complete, and,
	// with Settle, spooled with their counts to be counted again.
	var spool *os.File
	var pool *batchPool
	var judged *spoolWriter // the intents counted during the load, with their counts
	if sk.Effects != nil {
		if !sk.CountDuring || sk.Settle > 0 {
			if spool, err = os.CreateTemp("", "idemcheck-soak-intents-"); err != nil {
				return nil, err
			}
			defer os.Remove(spool.Name())
			defer spool.Close()
		}
		if sk.CountDuring {
			if spool != nil {
				judged = &spoolWriter{w: bufio.NewWriter(spool)}
			}
			pool = newBatchPool(ctx, func(_ int, b []spoolEntry) error {
				obs, err := countBatch(ctx, sk.Effects, b)
				for j, o := range obs {
					s.rec.observation(o)
					b[j].judged, b[j].judgedAt = o.Effects, o.At
				}
				if judged != nil {
					judged.write(b[:len(obs)]...)
				}
				return err
			})
		}
	}
	counts := make(chan spoolEntry, 1024)
	spooled := make(chan error, 1)
	go func() {
		switch {
		case sk.Effects == nil:
			for range counts {
			}
			spooled <- nil
		case pool != nil:
			err := during(counts, pool)
			if err == nil && judged != nil {
				if err = judged.flush(); err != nil {
					err = fmt.Errorf("spool intents: %w", err)
				}
			}
			spooled <- err
		default:
			w := bufio.NewWriter(spool)
			for d := range counts {
				d.write(w)
			}
			spooled <- w.Flush()
		}
	}()
	// accepted says an attempt was answered with an accepted status: its
	// intent's effect may land after the reply.
	accepted := func(a idemcheck.Attempt) bool {
		return a.Outcome == idemcheck.Replied && sk.Policy.Accepted(a.Status)
	}
	// Retries go to the retriers.
	retries := make(chan *soakHit, 1024)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for h := range retries {
				a := s.put(s.attempt(h, 2, "", rec.detailed()), client.Do(ctx, clean, h.req))
				live.retried.Add(1)
				if a.Outcome != idemcheck.Replied || a.Status >= 500 {
					live.errors.Add(1)
				}
				counts <- spoolEntry{in: h.in, accepted: accepted(a)}
			}
		})
	}

	// A cancelled run stops sending at once, even while no result comes in.
	stopOnCancel := context.AfterFunc(ctx, func() { attacker.Stop() })
	defer stopOnCancel()
	start := time.Now()
	if sk.Progress != nil {
		every := sk.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		done := make(chan struct{})
		reported := make(chan struct{})
		go func() {
			defer close(reported)
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					sk.Progress(live.take(start, false))
				case <-done:
					return
				}
			}
		}()
		defer func() {
			close(done)
			<-reported
			sk.Progress(live.take(start, true))
		}()
	}
	var vegetaOut vegeta.Encoder
	var vegetaErr error
	if sk.VegetaResults != nil {
		vegetaOut = vegeta.NewEncoder(sk.VegetaResults)
	}
	for r := range attacker.Attack(targeter, vegeta.ConstantPacer{Freq: sk.Rate, Per: time.Second}, sk.Duration, "idemcheck-soak") {
		_, frag, _ := strings.Cut(r.URL, "#")
		v, ok := pending.LoadAndDelete(frag)
		if !ok {
			continue
		}
		h := v.(*soakHit)
		metrics.Add(r)
		if vegetaOut != nil && vegetaErr == nil {
			out := *r
			out.URL, out.Body, out.Headers = sk.Endpoint.Base.Scheme+"://"+sk.Endpoint.Base.Host+s.scrubRequest(h.req), nil, nil
			out.Error = s.scrub(out.Error)
			vegetaErr = vegetaOut.Encode(&out)
		}
		fault, links := "", []string(nil)
		if !h.fault.IsNone() {
			fault, links = h.fault.String(), faultLinks(h.fault)
		}
		a := s.attempt(h, 1, fault, rec.detailed())
		a.FaultLinks = links
		s.rec.intent(h.in)
		a = s.put(a, vegetaResult(r, rec.detailed()))
		live.sent.Add(1)
		switch {
		case r.Code >= 200 && r.Code < 400:
			live.succeeded.Add(1)
		case r.Code >= 500:
			live.errors.Add(1)
		}
		if a.Outcome != idemcheck.Replied {
			live.cut.Add(1)
			retries <- h
			continue
		}
		counts <- spoolEntry{in: h.in, accepted: accepted(a)}
	}
	close(retries)
	wg.Wait()
	loadEnd := time.Now()
	close(counts)
	if err := <-spooled; err != nil {
		if pool != nil {
			return nil, err
		}
		return nil, fmt.Errorf("spool intents: %w", err)
	}
	metrics.Close()
	res.Duration = time.Since(start)
	if vegetaErr != nil {
		return nil, fmt.Errorf("vegeta results: %w", vegetaErr)
	}
	if sk.Effects != nil {
		var err error
		switch {
		case sk.CountDuring && sk.Settle > 0:
			err = sk.recountSpool(ctx, s.rec, spool, loadEnd)
		case sk.Settle > 0:
			err = sk.settleSpool(ctx, s.rec, spool, loadEnd)
		case !sk.CountDuring:
			err = fromSpool(ctx, spool, func(_ int, b []spoolEntry) error {
				obs, err := countBatch(ctx, sk.Effects, b)
				for _, o := range obs {
					s.rec.observation(o)
				}
				return err
			})
		}
		if err != nil {
			return nil, err
		}
	}
	res.Throughput, res.Rate, res.Success = metrics.Throughput, metrics.Rate, metrics.Success
	res.P50, res.P90, res.P99, res.Max = metrics.Latencies.P50, metrics.Latencies.P90, metrics.Latencies.P99, metrics.Latencies.Max
	if err := s.rec.flush(); err != nil {
		return res, fmt.Errorf("history: %w", err)
	}
	return res, ctx.Err()
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
		RedactFields: sk.RedactFields, RedactQuery: sk.RedactQuery, Upstream: sk.Upstream}
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
		return 64 << 10
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

// soakLive are the soak's running counts, for its progress.
type soakLive struct {
	sent, succeeded, cut, errors, retried atomic.Int64
	shard                                 idemcheck.Shard
	// last is the time and sent count of the previous take, for the rate.
	lastAt   time.Time
	lastSent int64
}

// take returns the counts now, the rate over the interval since the
// previous take, or over the whole soak for the last one (final), whose
// interval since the last tick is too short to mean anything. It is called
// from one goroutine at a time.
func (l *soakLive) take(start time.Time, final bool) idemcheck.SoakProgress {
	now := time.Now()
	p := idemcheck.SoakProgress{Elapsed: now.Sub(start), Sent: l.sent.Load(), Succeeded: l.succeeded.Load(),
		Cut: l.cut.Load(), Errors: l.errors.Load(), Retried: l.retried.Load()}
	if l.lastAt.IsZero() || final {
		l.lastAt, l.lastSent = start, 0
	}
	if d := now.Sub(l.lastAt).Seconds(); d > 0 {
		p.Rate = float64(p.Sent-l.lastSent) / d
	}
	l.lastAt, l.lastSent = now, p.Sent
	if l.shard.Count > 1 {
		shard := l.shard
		p.Shard = &shard
	}
	return p
}

// attempt starts an Attempt record for a soak hit; IDs are filled by the
// recorder in the order attempts finish. Only a record for a history
// (detailed) carries the request: it costs a fingerprint and copies of
// headers and bodies per hit, and the counter needs none of it.
func (s *session) attempt(h *soakHit, step int, fault string, detailed bool) idemcheck.Attempt {
	a := idemcheck.Attempt{Intent: h.in.ID, Key: h.in.Key, Check: h.in.Check, Round: 1, Step: step, Fault: fault}
	if detailed {
		s.describe(&a, h.req, h.fingerprint())
	}
	return a
}

// fingerprint is computed once per hit: a retry sends the same request.
// The first attempt's record is made before the hit goes to a retrier.
func (h *soakHit) fingerprint() string {
	if h.fp == "" {
		h.fp = Fingerprint(h.req.Method, h.req.Path, h.req.Body)
	}
	return h.fp
}

// vegetaResult is one of vegeta's results as the harness's own client
// reports an attempt (wire.Result), so that one fill (session.fill) turns
// both into an Attempt. A status code means a reply came back: vegeta's
// Error then only restates a status outside 2xx and 3xx, and is no
// transport error. No status is a failure vegeta says nothing more of:
// whether the request was written whole is not known, so it counts as
// written and the attempt's outcome is unknown, as for any attempt that
// may have reached the target. vegeta times no first byte. The reply's body
// is kept only with keepBody (a record for a history): the counter needs
// none of it.
func vegetaResult(r *vegeta.Result, keepBody bool) wire.Result {
	res := wire.Result{Start: r.Timestamp, End: r.Timestamp.Add(r.Latency), Written: true}
	if r.Code == 0 {
		res.Err = errors.New(r.Error)
		return res
	}
	res.Status, res.Header = int(r.Code), r.Headers
	if keepBody {
		res.Body = r.Body
	}
	return res
}

// soakTransport sends vegeta's requests on the run's context, so that a
// cancelled run ends the requests in flight (vegeta's Stop only stops new
// ones), and clears GetBody, so that http.Transport cannot resend a
// request by itself.
type soakTransport struct {
	ctx context.Context
	rt  http.RoundTripper
}

func (t soakTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(t.ctx)
	r2.GetBody = nil
	return t.rt.RoundTrip(r2)
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
