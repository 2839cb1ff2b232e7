package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/internal/wire"
)

// Driver sends same-key bursts of a fixed size to the race target, one way.
type Driver interface {
	// Name is how the figures call the driver.
	Name() string
	// Burst sends the driver's n requests, all carrying key, released
	// together as well as this way of sending can, and waits for every
	// reply. It returns the client release spread when the driver measures
	// one (zero otherwise), and an error when any request failed.
	Burst(ctx context.Context, key string) (time.Duration, error)
	// Close releases the driver's connections.
	Close()
}

// Path is where the drivers send their requests.
const Path = "/orders"

// Body is the request body every driver sends for key: what an orders API
// would get, with the key's intent in it.
func Body(key string) []byte {
	return []byte(`{"customerId":"` + key + `","totalCents":4000,"currency":"EUR"}`)
}

func header(key string) http.Header {
	return http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}}
}

// checkStatuses turns the replies' statuses into an error unless all are 201.
func checkStatuses(codes []int, errs []error) error {
	for i, c := range codes {
		if errs[i] != nil {
			return fmt.Errorf("request %d: %w", i, errs[i])
		}
		if c != http.StatusCreated {
			return fmt.Errorf("request %d: status %d", i, c)
		}
	}
	return nil
}

// wireDriver is idemcheck's own burst engine.
type wireDriver struct {
	name string
	c    *wire.Client
	addr string
	n    int
}

// NewWire returns idemcheck's burst engine with protocol p (wire.ProtocolHTTP1:
// last-byte synchronisation on n pre-opened connections; wire.ProtocolH2: the
// single-packet release of n streams over h2c) and the given number of
// release lanes (0: the engine's default, wire.DefaultLanes).
func NewWire(addr string, n int, p wire.Protocol, lanes int) Driver {
	name := "idemcheck HTTP/1.1 (last byte"
	if p == wire.ProtocolH2 {
		name = "idemcheck h2c (single packet"
	}
	if lanes > 1 {
		name += fmt.Sprintf(", %d lanes", lanes)
	}
	name += ")"
	return &wireDriver{name: name, c: &wire.Client{Protocol: p, Timeout: 10 * time.Second, Lanes: lanes}, addr: addr, n: n}
}

func (d *wireDriver) Name() string { return d.name }
func (d *wireDriver) Close()       {}

func (d *wireDriver) Burst(ctx context.Context, key string) (time.Duration, error) {
	reqs := make([]wire.Request, d.n)
	for i := range reqs {
		reqs[i] = wire.Request{Method: http.MethodPost, Path: Path, Header: header(key), Body: Body(key)}
	}
	r := d.c.SendBurst(ctx, d.addr, reqs)
	if r.Protocol != d.c.Protocol {
		return 0, fmt.Errorf("sent over %s instead of %s: %s", r.Protocol, d.c.Protocol, r.Fallback)
	}
	codes := make([]int, len(r.Results))
	errs := make([]error, len(r.Results))
	for i, res := range r.Results {
		codes[i], errs[i] = res.Status, res.Err
	}
	return r.Spread, checkStatuses(codes, errs)
}

// vegetaDriver sends each burst with a new vegeta Attacker whose pacer hands
// out all n hits at once, n workers ready and room for n idle connections
// per host.
type vegetaDriver struct {
	url  string
	n    int
	tls  bool
	wire string
}

// NewVegeta returns the vegeta driver, over HTTP/1.1 in plain text.
func NewVegeta(addr string, n int) Driver {
	return &vegetaDriver{url: "http://" + addr + Path, n: n, wire: "HTTP/1.1"}
}

// NewVegetaTLS returns the vegeta driver over TLS with HTTP/2 (vegeta's
// HTTP2 option), trusting the race target's self-signed certificate
// (vegeta's TLSConfig option with InsecureTLS): what `vegeta attack -http2
// -insecure` does. vegeta's results do not say which protocol a reply
// came over; TestDriversOverTLS shows that the target sees HTTP/2.
func NewVegetaTLS(addr string, n int) Driver {
	return &vegetaDriver{url: "https://" + addr + Path, n: n, tls: true, wire: "h2 over TLS"}
}

func (d *vegetaDriver) Name() string { return "vegeta (new Attacker per burst)" }
func (d *vegetaDriver) Close()       {}

// Wire is how the driver's requests go out.
func (d *vegetaDriver) Wire() string { return d.wire }

// burstPacer lets n hits go with no wait, then stops the attack: the
// highest rate vegeta can be asked for, for exactly one burst.
type burstPacer struct{ n uint64 }

func (p burstPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= p.n
}

func (p burstPacer) Rate(time.Duration) float64 { return math.Inf(1) }

func (d *vegetaDriver) Burst(ctx context.Context, key string) (time.Duration, error) {
	// The Attacker gets a transport of its own so that its connections can
	// be closed after the burst; vegeta's options then size it.
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	opts := []func(*vegeta.Attacker){
		vegeta.Client(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
		vegeta.Connections(d.n), vegeta.MaxConnections(d.n),
		vegeta.Workers(uint64(d.n)), vegeta.MaxWorkers(uint64(d.n)),
	}
	if d.tls {
		// TLSConfig first: HTTP2 adds h2 to the configuration's ALPN.
		opts = append(opts, vegeta.TLSConfig(InsecureTLS()), vegeta.HTTP2(true))
	}
	atk := vegeta.NewAttacker(opts...)
	tgt := vegeta.Target{Method: http.MethodPost, URL: d.url, Body: Body(key), Header: header(key)}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	var codes []int
	var errs []error
	for res := range atk.Attack(vegeta.NewStaticTargeter(tgt), burstPacer{n: uint64(d.n)}, 0, "burst") {
		codes = append(codes, int(res.Code))
		var err error
		if res.Error != "" && res.Code == 0 {
			err = errors.New(res.Error)
		}
		errs = append(errs, err)
	}
	if len(codes) != d.n {
		return 0, fmt.Errorf("vegeta sent %d of %d", len(codes), d.n)
	}
	return 0, checkStatuses(codes, errs)
}

// barrierDriver is the hand-written test: n goroutines, each with its
// request built, wait on one barrier and then call net/http's Client.Do on
// a pool that already holds n open connections.
type barrierDriver struct {
	url    string
	n      int
	tr     *http.Transport
	client *http.Client
	dials  atomic.Int64
	warmed int64
	wire   atomic.Value // string: how the last burst's replies came
}

// NewBarrier returns the barrier driver, its n connections opened.
func NewBarrier(ctx context.Context, addr string, n int) (Driver, error) {
	return newBarrier(ctx, "http", addr, n)
}

// NewBarrierTLS returns the barrier driver over TLS, trusting the race
// target's self-signed certificate (InsecureTLS), its n connections
// opened. The transport is net/http's with a dialer of its own and no
// ForceAttemptHTTP2, so it speaks HTTP/1.1 over TLS, n connections for n
// requests, as it does over plain text; Wire says what the replies came
// over.
func NewBarrierTLS(ctx context.Context, addr string, n int) (Driver, error) {
	return newBarrier(ctx, "https", addr, n)
}

func newBarrier(ctx context.Context, scheme, addr string, n int) (Driver, error) {
	d := &barrierDriver{url: scheme + "://" + addr + Path, n: n}
	var dialer net.Dialer
	d.tr = &http.Transport{
		MaxIdleConnsPerHost: n,
		DisableCompression:  true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	if scheme == "https" {
		d.tr.TLSClientConfig = InsecureTLS()
	}
	d.client = &http.Client{Transport: d.tr, Timeout: 10 * time.Second}
	// Open n connections: the target answers /_warm only once n of these
	// requests are in flight, so none can reuse another's connection.
	warm := fmt.Sprintf("%s://%s/_warm?id=%p&n=%d", scheme, addr, d, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, warm, nil)
			if err == nil {
				var resp *http.Response
				if resp, err = d.client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		d.Close()
		return nil, fmt.Errorf("warm %d connections: %w", n, err)
	}
	d.warmed = d.dials.Load()
	return d, nil
}

func (d *barrierDriver) Name() string { return "goroutines on a barrier (net/http, warm)" }
func (d *barrierDriver) Close()       { d.tr.CloseIdleConnections() }

// Wire is what the last burst's replies came over, as net/http tells it
// (resp.Proto, and "over TLS" for a reply on a TLS connection); several,
// joined by " + ", when they differed.
func (d *barrierDriver) Wire() string {
	w, _ := d.wire.Load().(string)
	return w
}

// ColdDials counts connections the driver had to open after warming up:
// each is a burst member that was not on a pre-opened connection.
func (d *barrierDriver) ColdDials() int64 { return d.dials.Load() - d.warmed }

func (d *barrierDriver) Burst(ctx context.Context, key string) (time.Duration, error) {
	reqs := make([]*http.Request, d.n)
	for i := range reqs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(Body(key)))
		if err != nil {
			return 0, err
		}
		req.Header = header(key)
		// Without GetBody net/http cannot resend the request behind the
		// burst's back on a kept-alive connection that failed.
		req.GetBody = nil
		reqs[i] = req
	}
	codes := make([]int, d.n)
	errs := make([]error, d.n)
	wires := make([]string, d.n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(d.n)
	for i, req := range reqs {
		done.Go(func() {
			ready.Done()
			<-start
			resp, err := d.client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			wires[i] = resp.Proto
			if resp.TLS != nil {
				wires[i] += " over TLS"
			}
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	slices.Sort(wires)
	d.wire.Store(strings.Join(slices.Compact(slices.DeleteFunc(wires, func(w string) bool { return w == "" })), " + "))
	return 0, checkStatuses(codes, errs)
}

// Wirer is implemented by drivers that say how their requests went out:
// the protocol, and whether over TLS.
type Wirer interface{ Wire() string }

// ColdDialer is implemented by drivers that can tell how many burst
// requests needed a new connection.
type ColdDialer interface{ ColdDials() int64 }

// FetchArrivals asks the race target at addr (plain text) for key's
// arrival offsets.
func FetchArrivals(ctx context.Context, c *http.Client, addr, key string) ([]int64, error) {
	return FetchArrivalsFrom(ctx, c, "http://"+addr, key)
}

// FetchArrivalsFrom asks the race target at base (http:// or https://
// host:port; c must trust a TLS target's certificate) for key's arrival
// offsets.
func FetchArrivalsFrom(ctx context.Context, c *http.Client, base, key string) ([]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_arrivals?key="+url.QueryEscape(key), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []int64
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("arrivals of %s: %w", key, err)
	}
	return out, nil
}
