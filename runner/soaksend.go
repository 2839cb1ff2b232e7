package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// How a soak sends its load: vegeta paces and sends the first attempts,
// each a fresh intent (targeter), through the route its draw gives it;
// each result is recorded as it comes back (attack), and a first attempt
// that got no reply goes to the retriers, which send it again, with the
// same key, through the harness's own client. Every completed intent goes
// to the counting (soakcount.go).

// soakHit is one intent's first attempt, as sent.
type soakHit struct {
	in    idemcheck.Intent
	req   wire.Request
	fault faults.Fault // the fault it was sent through; None for clean
	fp    string       // the request's fingerprint, once an attempt record needed it
}

// soakRun is what one run of a soak shares between its targeter, its
// results and its retriers.
type soakRun struct {
	sk     *Soak
	s      *session
	rec    *streamRecorder
	client *wire.Client // the retries'
	routes soakRoutes
	live   *soakLive
	counts chan<- spoolEntry // completed intents, to be counted
	// pending holds each first attempt sent, by its URL's fragment, until
	// its result arrives.
	pending sync.Map
}

// targeter makes a fresh intent for every hit; which fault it meets, if
// any, comes from the seed: one draw per intent, in the faults' shares
// laid end to end, cut-reply's first. The intent travels in the URL's
// fragment, which is never sent but comes back in vegeta's result.
func (r *soakRun) targeter() vegeta.Targeter {
	sk, s := r.sk, r.s
	var ids atomic.Int64
	// Shard 0 (and a whole soak) draws from the seed's first stream, so an
	// unsharded seed replays as it always did; each other shard from its own.
	rng := rand.New(rand.NewPCG(uint64(sk.Seed), 0x5eed+uint64(max(sk.Shard.Index, 0))))
	var rngMu sync.Mutex
	scheme := sk.Endpoint.Base.Scheme
	return func(t *vegeta.Target) error {
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
		addr, fault := r.routes.first(draw)
		frag := in.ID
		r.pending.Store(frag, &soakHit{in: in, req: req, fault: fault})
		t.Method = req.Method
		t.URL = scheme + "://" + addr + req.Path + "#" + frag
		t.Body = req.Body
		t.Header = req.Header.Clone()
		t.Header.Set("Host", sk.Endpoint.Base.Host)
		return nil
	}
}

// attacker is vegeta's, with Workers (default 64) at most, over a
// transport whose connections are the harness's: dialed by dialer, with
// client's TLS configuration.
func (sk *Soak) attacker(ctx context.Context, client *wire.Client, dialer *net.Dialer) *vegeta.Attacker {
	workers := sk.Workers
	if workers <= 0 {
		workers = 64
	}
	var transportTLS *tls.Config
	if client.TLS != nil {
		transportTLS = client.TLS.Clone()
	}
	httpClient := &http.Client{
		Timeout: sk.timeout(),
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
	return vegeta.NewAttacker(vegeta.Client(httpClient), vegeta.Workers(uint64(min(workers, 8))), vegeta.MaxWorkers(uint64(workers)), vegeta.MaxBody(sk.maxBody()))
}

// attack sends the load at Rate for Duration and records each first
// attempt as its result comes back, written to VegetaResults too when
// set. It returns vegeta's metrics of the load, and the error, if any, of
// writing VegetaResults (which stops writing them, not the load).
func (r *soakRun) attack(attacker *vegeta.Attacker, retries chan<- *soakHit) (*vegeta.Metrics, error) {
	var metrics vegeta.Metrics
	var vegetaOut vegeta.Encoder
	var vegetaErr error
	if r.sk.VegetaResults != nil {
		vegetaOut = vegeta.NewEncoder(r.sk.VegetaResults)
	}
	for res := range attacker.Attack(r.targeter(), vegeta.ConstantPacer{Freq: r.sk.Rate, Per: time.Second}, r.sk.Duration, "idemcheck-soak") {
		_, frag, _ := strings.Cut(res.URL, "#")
		v, ok := r.pending.LoadAndDelete(frag)
		if !ok {
			continue
		}
		h := v.(*soakHit)
		metrics.Add(res)
		if vegetaOut != nil && vegetaErr == nil {
			vegetaErr = vegetaOut.Encode(r.vegetaRecord(h, res))
		}
		r.first(h, res, retries)
	}
	return &metrics, vegetaErr
}

// vegetaRecord is res as VegetaResults gets it: reply bodies and headers
// left out, the URL the target's without the soak's routing, its secrets
// hidden.
func (r *soakRun) vegetaRecord(h *soakHit, res *vegeta.Result) *vegeta.Result {
	out := *res
	base := r.sk.Endpoint.Base
	out.URL, out.Body, out.Headers = base.Scheme+"://"+base.Host+r.s.scrubRequest(h.req), nil, nil
	out.Error = r.s.scrub(out.Error)
	return &out
}

// first records a first attempt from its result, with its intent, and
// counts it in the running counts; one that got no reply goes to the
// retriers, any other completes its intent.
func (r *soakRun) first(h *soakHit, res *vegeta.Result, retries chan<- *soakHit) {
	fault, links := "", []string(nil)
	if !h.fault.IsNone() {
		fault, links = h.fault.String(), faultLinks(h.fault)
	}
	a := r.s.attempt(h, 1, fault, r.rec.detailed())
	a.FaultLinks = links
	r.s.rec.intent(h.in)
	a = r.s.put(a, vegetaResult(res, r.rec.detailed()))
	r.live.sent.Add(1)
	switch {
	case res.Code >= 200 && res.Code < 400:
		r.live.succeeded.Add(1)
	case res.Code >= 500:
		r.live.errors.Add(1)
	}
	if a.Outcome != idemcheck.Replied {
		r.live.cut.Add(1)
		retries <- h
		return
	}
	var op *soakOp
	if r.accepted(a) {
		// The monitor may be in the reply's body, which only a history
		// keeps otherwise.
		op = r.monitor(a, vegetaResult(res, true))
	}
	r.counts <- spoolEntry{in: h.in, accepted: r.accepted(a), op: op}
}

// retriers start the four retriers: each sends a hit that got no reply
// once more, through the clean route, and completes its intent. wait
// returns once retries is closed and every retry is recorded.
func (r *soakRun) retriers(ctx context.Context) (retries chan<- *soakHit, wait func()) {
	hits := make(chan *soakHit, 1024)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for h := range hits {
				res := r.client.Do(ctx, r.routes.clean, h.req)
				a := r.s.put(r.s.attempt(h, 2, "", r.rec.detailed()), res)
				r.live.retried.Add(1)
				if a.Outcome != idemcheck.Replied || a.Status >= 500 {
					r.live.errors.Add(1)
				}
				r.counts <- spoolEntry{in: h.in, accepted: r.accepted(a), op: r.monitor(a, res)}
			}
		})
	}
	return hits, wg.Wait
}

// accepted says an attempt was answered with an accepted status: its
// intent's effect may land after the reply.
func (r *soakRun) accepted(a idemcheck.Attempt) bool {
	return a.Outcome == idemcheck.Replied && r.sk.Policy.Accepted(a.Status)
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
		h.fp = scenarios.Fingerprint(h.req.Method, h.req.Path, h.req.Body)
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
