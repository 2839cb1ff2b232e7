package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// Soak is a production-like load: a rate of distinct intents for a
// duration, a share of them with the reply cut after the server committed
// and then retried with the same key, and every intent's effects counted.
// vegeta paces and sends the first attempts; retries go through the
// harness's own client. Nothing of the run is kept in memory beyond what
// is in flight: attempts stream to History as they finish.
type Soak struct {
	Endpoint Endpoint
	Policy   idemcheck.Policy
	// Effects, when set, counts each intent's effects as it completes.
	Effects *Effects
	// Rate is intents per second; Duration how long to send them.
	Rate     int
	Duration time.Duration
	// Intents, when positive, ends the soak after that many intents, even
	// if Duration has not passed.
	Intents int64
	// CutShare is the share of first attempts whose reply is cut (0 to 1).
	CutShare float64
	// Seed chooses which intents are cut, so a seed replays the schedule.
	Seed int64
	// Workers bounds vegeta's concurrent requests (default 64).
	Workers int
	Timeout time.Duration
	Redact  []string
	// Upstream is the checked address (IP:port) of the target, from
	// certify.ResolveTarget; empty means Upstream(Endpoint.Base). Both the
	// fault proxy and vegeta's direct requests go there, never to a name.
	Upstream string
	// AllowRemote lets connections leave loopback; without it every dialer
	// of the soak refuses an address off loopback (netguard.Control).
	AllowRemote bool
	// MaxBody is how many bytes of each reply body are kept (0 means 64
	// KiB, the soak's default: its replies are only compared for status).
	MaxBody int64
	// History, when set, receives every attempt as a JSONL history record.
	History io.Writer
	// Header is written as the history's run record.
	Header idemcheck.Run
}

// SoakResult is what a soak measured.
type SoakResult struct {
	Intents    int64 `json:"intents"`
	Attempts   int64 `json:"attempts"`
	Cut        int64 `json:"cut"`
	Duplicates int64 `json:"duplicates"`
	Lost       int64 `json:"lost"`
	// Unresolved intents never got a reply, even on retry.
	Unresolved int64 `json:"unresolved"`
	// Counted intents had their effects counted.
	Counted int64 `json:"counted"`
	// DuplicatesPerMillion is per million counted intents.
	DuplicatesPerMillion float64 `json:"duplicates_per_million"`
	// Throughput is successful first attempts per second; Rate the
	// achieved request rate (vegeta's own figures).
	Throughput float64       `json:"throughput"`
	Rate       float64       `json:"rate"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	Success    float64       `json:"success"`
	// TimeoutRate is the share of first attempts that got no reply, and
	// SucceededShare the share of those the server had carried out (their
	// retry was answered as a replay): the inputs of the cost arithmetic.
	TimeoutRate    float64 `json:"timeout_rate"`
	SucceededShare float64 `json:"succeeded_share"`
	Duration       time.Duration
}

// soakHit is one intent's first attempt, as sent.
type soakHit struct {
	in  idemcheck.Intent
	req wire.Request
	cut bool
	fp  string // the request's fingerprint, once an attempt record needed it
}

// Run sends the soak and returns its figures.
func (sk *Soak) Run(ctx context.Context) (*SoakResult, error) {
	if sk.Endpoint.Base.Scheme != "http" {
		return nil, fmt.Errorf("a soak sends plain http:// only, not %s://", sk.Endpoint.Base.Scheme)
	}
	upstream := sk.Upstream
	if upstream == "" {
		upstream = Upstream(sk.Endpoint.Base)
	}
	link, err := faults.NewLink(upstream)
	if err != nil {
		return nil, fmt.Errorf("start the fault proxy: %w", err)
	}
	defer link.Close()
	// Clean first attempts go straight to the target: a proxy hop would
	// only cost CPU the target needs. Cut ones and their retries go through
	// the link.
	direct := link.Upstream()
	clean, err := link.Addr(faults.None)
	if err != nil {
		return nil, err
	}
	cutAddr, err := link.Addr(faults.CutReply)
	if err != nil {
		return nil, err
	}
	workers := sk.Workers
	if workers <= 0 {
		workers = 64
	}
	timeout := sk.Timeout
	if timeout <= 0 {
		timeout = wire.DefaultTimeout
	}
	s := &session{Runner: &Runner{Endpoint: sk.Endpoint, Policy: sk.Policy, Redact: sk.Redact}, run: newRunID()}
	maxBody := sk.MaxBody
	if maxBody <= 0 {
		maxBody = 64 << 10
	}
	client := &wire.Client{Host: sk.Endpoint.Base.Host, Timeout: timeout, MaxBody: maxBody}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !sk.AllowRemote {
		client.Control = netguard.Control
		dialer.Control = netguard.Control
	}

	var hist *historyStream
	if sk.History != nil {
		// Buffered: records come one per attempt, from the results loop.
		bw := bufio.NewWriterSize(sk.History, 256<<10)
		hist = &historyStream{buf: bw, enc: json.NewEncoder(bw)}
		if err := hist.write(map[string]any{"run": sk.Header}); err != nil {
			return nil, err
		}
	}
	res := &SoakResult{}
	var ids atomic.Int64
	rng := rand.New(rand.NewPCG(uint64(sk.Seed), 0x5eed))
	var rngMu sync.Mutex

	// The targeter makes a fresh intent for every hit; which are cut comes
	// from the seed. The intent travels in the URL's fragment, which is
	// never sent but comes back in vegeta's result.
	pending := sync.Map{} // fragment -> *soakHit, until its result arrives
	targeter := func(t *vegeta.Target) error {
		n := ids.Add(1)
		if sk.Intents > 0 && n > sk.Intents {
			return vegeta.ErrNoTargets // vegeta stops the attack
		}
		seq := int(n)
		in := idemcheck.Intent{ID: fmt.Sprintf("ic-%s-%d", s.run, seq), Key: uuid.NewString(), Seq: seq, Check: idemcheck.CheckSoak, Round: 1}
		req, _ := s.request(in, idemcheck.Original)
		rngMu.Lock()
		cut := rng.Float64() < sk.CutShare
		rngMu.Unlock()
		addr := direct
		if cut {
			addr = cutAddr
		}
		frag := in.ID
		pending.Store(frag, &soakHit{in: in, req: req, cut: cut})
		t.Method = req.Method
		t.URL = "http://" + addr + req.Path + "#" + frag
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
	var spool *os.File
	if sk.Effects != nil {
		if spool, err = os.CreateTemp("", "idemcheck-soak-intents-"); err != nil {
			return nil, err
		}
		defer os.Remove(spool.Name())
		defer spool.Close()
	}
	counts := make(chan doneIntent, 1024)
	spooled := make(chan error, 1)
	go func() {
		if spool == nil {
			for range counts {
			}
			spooled <- nil
			return
		}
		w := bufio.NewWriter(spool)
		for d := range counts {
			fmt.Fprintf(w, "%s\t%s\t%d\t%t\n", d.in.ID, d.in.Key, d.in.Seq, d.promised)
		}
		spooled <- w.Flush()
	}()
	// Retries go to the retriers.
	retries := make(chan *soakHit, 1024)
	var replayed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for h := range retries {
				r := client.Do(ctx, clean, h.req)
				succeeded := r.Err == nil && sk.Policy.Replay(r.Status)
				switch {
				case r.Err != nil:
					if ctx.Err() == nil {
						atomic.AddInt64(&res.Unresolved, 1)
					}
				case succeeded && (sk.Policy.ReplayHeader == "" || idemcheck.HeaderTrue(r.Header.Get(sk.Policy.ReplayHeader))):
					replayed.Add(1)
				}
				atomic.AddInt64(&res.Attempts, 1)
				if hist != nil {
					a := s.attempt(h, 2, "")
					s.fill(&a, r)
					hist.attempt(a)
				}
				counts <- doneIntent{h.in, succeeded}
			}
		})
	}

	// A cancelled run stops sending at once, even while no result comes in.
	stopOnCancel := context.AfterFunc(ctx, func() { attacker.Stop() })
	defer stopOnCancel()
	start := time.Now()
	for r := range attacker.Attack(targeter, vegeta.ConstantPacer{Freq: sk.Rate, Per: time.Second}, sk.Duration, "idemcheck-soak") {
		_, frag, _ := strings.Cut(r.URL, "#")
		v, ok := pending.LoadAndDelete(frag)
		if !ok {
			continue
		}
		h := v.(*soakHit)
		atomic.AddInt64(&res.Intents, 1)
		atomic.AddInt64(&res.Attempts, 1)
		metrics.Add(r)
		// The attempt record is built only for a history: it costs a
		// fingerprint and copies of headers and bodies per hit.
		if hist != nil {
			fault, links := "", []string(nil)
			if h.cut {
				fault, links = faults.CutReply.String(), faultLinks(faults.CutReply)
			}
			a := s.attempt(h, 1, fault)
			a.FaultLinks = links
			s.fillVegeta(&a, r)
			hist.intent(h.in)
			hist.attempt(a)
		}
		if r.Code == 0 { // no reply: fillVegeta's Unknown
			atomic.AddInt64(&res.Cut, 1)
			retries <- h
			continue
		}
		counts <- doneIntent{h.in, sk.Policy.Replay(int(r.Code))}
	}
	close(retries)
	wg.Wait()
	close(counts)
	if err := <-spooled; err != nil {
		return nil, fmt.Errorf("spool intents: %w", err)
	}
	metrics.Close()
	res.Duration = time.Since(start)
	if err := sk.countAll(ctx, spool, res, hist); err != nil {
		return nil, err
	}
	res.Throughput, res.Rate, res.Success = metrics.Throughput, metrics.Rate, metrics.Success
	res.P50, res.P90, res.P99, res.Max = metrics.Latencies.P50, metrics.Latencies.P90, metrics.Latencies.P99, metrics.Latencies.Max
	if res.Intents > 0 {
		res.TimeoutRate = float64(res.Cut) / float64(res.Intents)
	}
	if res.Cut > 0 {
		res.SucceededShare = float64(replayed.Load()) / float64(res.Cut)
	}
	if res.Counted > 0 {
		res.DuplicatesPerMillion = float64(res.Duplicates) * 1e6 / float64(res.Counted)
	}
	if err := hist.flush(); err != nil {
		return res, fmt.Errorf("history: %w", err)
	}
	return res, ctx.Err()
}

// countAll counts the effects of every spooled intent, eight at a time.
func (sk *Soak) countAll(ctx context.Context, spool *os.File, res *SoakResult, hist *historyStream) error {
	if sk.Effects == nil {
		return nil
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	intents := make(chan doneIntent, 256)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var countErr error
	for range 8 {
		wg.Go(func() {
			for d := range intents {
				o, err := sk.Effects.Count(ctx, d.in)
				if err != nil {
					if ctx.Err() == nil {
						errOnce.Do(func() { countErr = fmt.Errorf("count the effects of intent %s: %w", d.in.ID, err) })
					}
					continue
				}
				n := o.Effects
				atomic.AddInt64(&res.Counted, 1)
				switch {
				case n > 1:
					atomic.AddInt64(&res.Duplicates, 1)
				case n == 0 && d.promised:
					// Lost only when the client was told of a success, as
					// the checker's lost-effect.
					atomic.AddInt64(&res.Lost, 1)
				}
				hist.observe(o)
			}
		})
	}
	sc := bufio.NewScanner(spool)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			continue
		}
		seq, _ := strconv.Atoi(f[2])
		in := idemcheck.Intent{ID: f[0], Key: f[1], Seq: seq, Check: idemcheck.CheckSoak, Round: 1}
		intents <- doneIntent{in: in, promised: f[3] == "true"}
	}
	close(intents)
	wg.Wait()
	if countErr != nil {
		return countErr
	}
	return sc.Err()
}

// doneIntent is an intent whose attempts are over; promised when one of
// them was answered with a success, so its effect must exist.
type doneIntent struct {
	in       idemcheck.Intent
	promised bool
}

// attempt starts an Attempt record for a soak hit; IDs are filled by the
// history stream in the order attempts finish.
func (s *session) attempt(h *soakHit, step int, fault string) idemcheck.Attempt {
	return idemcheck.Attempt{
		Intent: h.in.ID, Key: h.in.Key, Check: h.in.Check, Round: 1, Step: step,
		Method: h.req.Method, Header: s.redact(h.req.Header), Path: s.scrubRequest(h.req), Body: s.scrub(string(h.req.Body)),
		Fingerprint: h.fingerprint(), Fault: fault,
	}
}

// fingerprint is computed once per hit: a retry sends the same request.
// The first attempt's record is made before the hit goes to a retrier.
func (h *soakHit) fingerprint() string {
	if h.fp == "" {
		h.fp = Fingerprint(h.req)
	}
	return h.fp
}

// fillVegeta records one of vegeta's results on a: a status code means a
// reply came back; none means the attempt's outcome is unknown.
func (s *session) fillVegeta(a *idemcheck.Attempt, r *vegeta.Result) {
	a.Start, a.End = r.Timestamp, r.Timestamp.Add(r.Latency)
	if r.Code == 0 {
		a.Outcome, a.Error = idemcheck.Unknown, s.scrub(r.Error)
		return
	}
	s.secret().learnBody(r.Body)
	a.Outcome, a.Status, a.RespHeader, a.RespBody = idemcheck.Replied, int(r.Code), s.redact(r.Headers), s.scrub(string(r.Body))
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

// historyStream writes history records as they happen, numbering
// attempts, from many goroutines.
type historyStream struct {
	mu    sync.Mutex
	buf   *bufio.Writer
	enc   *json.Encoder // writes to buf
	next  int
	first error
}

func (h *historyStream) write(v any) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = h.enc.Encode(v)
	}
	return h.first
}

func (h *historyStream) intent(in idemcheck.Intent) { _ = h.write(map[string]any{"intent": in}) }

// attempt numbers a and writes it, under one lock, so that IDs appear in
// the file in order.
func (h *historyStream) attempt(a idemcheck.Attempt) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	a.ID = h.next
	if h.first == nil {
		h.first = h.enc.Encode(map[string]any{"attempt": a})
	}
}

func (h *historyStream) observe(o idemcheck.Observation) {
	_ = h.write(map[string]any{"observation": o})
}

// flush writes out what is buffered and returns the first error of the
// stream.
func (h *historyStream) flush() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = h.buf.Flush()
	}
	return h.first
}
