package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// ErrClosed is returned by Addr after Close.
var ErrClosed = errors.New("faults: link closed")

// Link is an in-process toxiproxy in front of one upstream (host:port). Clean
// traffic and each fault get their own proxy, created on first use and then
// reused: a toxic acts on every connection through its proxy, so faulted and
// clean traffic must never share one. Each proxy gets its toxics before it
// accepts its first connection, so no connection through a fault's proxy
// ever escapes the fault.
//
// A Link stands on one link: NewLink on the client link (the harness in
// front of the target), NewDBLink on the database link (the target's
// database behind it), and it applies only the faults of that link. A Link
// is safe for concurrent use.
type Link struct {
	upstream string
	link     string
	engine   string // a database link's: EnginePostgres or EngineMySQL
	srv      *toxiproxy.ApiServer
	hub      *hub

	mu       sync.Mutex
	addrs    map[string]string      // Fault.String() -> listen address
	watchers map[string]*watchToxic // Fault.String() -> its watch toxic
	watched  *toxiproxy.Proxy       // the proxy WatchedAddr started, if any
	watch    *watchToxic            // its watch toxic
	closed   bool
}

var quietOnce sync.Once

// newServer returns a toxiproxy server without its HTTP API: nothing listens
// but the proxies. The metrics container must not be nil (toxiproxy
// dereferences it on every connection); zerolog.Nop silences the proxies,
// and the global level silences the toxics that log through the global
// logger. That global setting is process-wide, which is why it is set once.
func newServer() *toxiproxy.ApiServer {
	quietOnce.Do(func() { zerolog.SetGlobalLevel(zerolog.Disabled) })
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// NewLink returns a Link on the client link, in front of upstream (the
// target's host:port). No proxy listens until Addr asks for one, and the
// upstream is not dialed until a client connects, so the target need not be
// running yet.
func NewLink(upstream string) (*Link, error) {
	return newLink(upstream, LinkClient)
}

// NewDBLink returns a Link on the database link, in front of upstream (the
// database's host:port). The target is then handed a DSN whose host and port
// are a proxy's (RewriteDSN), so its database traffic goes through the
// faults of the database link: db-latency, db-cut, db-cut-after and db-hold.
// The database speaks PostgreSQL unless an option says otherwise
// (WithEngine).
func NewDBLink(upstream string, opts ...DBLinkOption) (*Link, error) {
	l, err := newLink(upstream, LinkDB)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// DBLinkOption changes how NewDBLink makes a database Link.
type DBLinkOption func(*Link) error

// WithEngine says which engine's wire protocol the database link carries:
// EnginePostgres (the default) or EngineMySQL (MySQL and MariaDB). Its
// faults read that protocol to find statements, so one that reads the
// wrong one acts on nothing (DBSessions stays 0).
func WithEngine(engine string) DBLinkOption {
	return func(l *Link) error {
		if err := checkEngine(engine); err != nil {
			return err
		}
		l.engine = engine
		return nil
	}
}

func newLink(upstream, link string) (*Link, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faults: upstream %q: %w", upstream, err)
	}
	return &Link{
		upstream: upstream, link: link, engine: EnginePostgres, srv: newServer(),
		hub:   &hub{held: make(chan HoldEvent), done: make(chan struct{})},
		addrs: map[string]string{}, watchers: map[string]*watchToxic{},
	}, nil
}

// Engine is the engine whose protocol a database Link reads (WithEngine).
func (l *Link) Engine() string { return l.engine }

// Upstream returns the address the Link forwards to.
func (l *Link) Upstream() string { return l.upstream }

// Addr returns the listen address (127.0.0.1:port) of the proxy that applies
// f, starting it on first use; None is the clean proxy. Faults are
// normalized first (see Parse), so "latency" and "latency:ms=100" share a
// proxy. A fault of the other link, or with a bad parameter, is an error.
func (l *Link) Addr(f Fault) (string, error) {
	var ts []toxic
	if !f.IsNone() {
		var err error
		if f, ts, err = toxicsFor(f); err != nil {
			return "", err
		}
		if f.Link != l.link {
			return "", fmt.Errorf("faults: %s acts on the %s link, and this Link stands on the %s link", f.Name, f.Link, l.link)
		}
	}
	key := f.String()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", ErrClosed
	}
	if addr, ok := l.addrs[key]; ok {
		return addr, nil
	}
	p := toxiproxy.NewProxy(l.srv, key, "127.0.0.1:0", l.upstream)
	var watch *watchToxic
	if l.engine == EngineMySQL && len(ts) > 0 && ts[0].Type == pgWatchType && !slices.ContainsFunc(ts, func(t toxic) bool { return t.Type == pgRepliesType }) {
		// The client's commands are read with what the server's greeting
		// said: the server's side must be read too.
		ts = append(ts, toxic{Name: key + "-answers", Type: pgRepliesType, Stream: "downstream", Toxicity: 1})
	}
	for _, t := range ts {
		js, err := json.Marshal(t)
		if err != nil {
			return "", fmt.Errorf("faults: %s: %w", key, err)
		}
		w, err := p.Toxics.AddToxicJson(bytes.NewReader(js))
		if err != nil {
			return "", fmt.Errorf("faults: %s: add toxic %s: %w", key, t.Type, err)
		}
		// toxiproxy made the toxic from its JSON; the Go-side wiring (the
		// channel its hold events go to) is added here, before any
		// connection can reach it.
		if pw, ok := w.Toxic.(*watchToxic); ok {
			if err := pw.bind(l.hub, f, l.engine); err != nil {
				return "", fmt.Errorf("faults: %s: %w", key, err)
			}
			watch = pw
		}
		// A replies toxic follows the database side of the connections
		// whose other side the watch toxic (added before it) reads.
		if pr, ok := w.Toxic.(*repliesToxic); ok {
			pr.up = watch
		}
	}
	if err := l.srv.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("faults: %s: start proxy: %w", key, err)
	}
	// Add returns after the listener is bound, so Listen holds the real port.
	l.addrs[key] = p.Listen
	if watch != nil {
		l.watchers[key] = watch
	}
	return p.Listen, nil
}

// Held delivers a HoldEvent each time a db-hold fault of this Link holds a
// statement. The held connection waits until the event is received and then
// until Release or Cut; an event nobody receives leaves its connection held
// until the target gives up or the Link closes. The channel is never closed.
func (l *Link) Held() <-chan HoldEvent { return l.hub.held }

// Matches returns how many statements matched f (a db-cut or db-hold fault)
// on its proxy so far, counted over all its connections. The fault has acted
// once Matches reaches its nth, so a harness can tell a cut that happened
// from a target that never sent the statement. It is 0 for other faults and
// for faults whose proxy has not started.
func (l *Link) Matches(f Fault) int {
	if r := l.rule(f); r != nil {
		return int(r.count())
	}
	return 0
}

// Landing returns where f (a db-cut or db-hold fault on its own proxy, see
// Addr) acted, and false while it has not.
func (l *Link) Landing(f Fault) (Landing, bool) {
	if r := l.rule(f); r != nil {
		ld := r.result()
		return ld, ld.Acted()
	}
	return Landing{}, false
}

func (l *Link) rule(f Fault) *watchRule {
	n, err := normalize(f)
	if err != nil {
		return nil
	}
	l.mu.Lock()
	w := l.watchers[n.String()]
	l.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.rule
}

// Close stops every proxy: their listeners close and their live connections,
// both sides, are closed, held ones included (their holds end as if the
// target had gone). It is idempotent; Addr fails after it.
func (l *Link) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.hub.done)
	return l.srv.Collection.Clear()
}

// WatchedAddr returns the address of the database link's watched proxy,
// starting it on first use: clean until Arm puts a fault on it for a while.
// A target whose DSN is fixed for its whole life (it is started once) is
// handed this address, and each check arms the fault it needs.
func (l *Link) WatchedAddr() (string, error) {
	if l.link != LinkDB {
		return "", fmt.Errorf("faults: only a database link has a watched proxy")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", ErrClosed
	}
	if l.watched != nil {
		return l.watched.Listen, nil
	}
	p := toxiproxy.NewProxy(l.srv, "watched", "127.0.0.1:0", l.upstream)
	// A watch toxic that lets all pass until a rule is armed: it is
	// present from each connection's first byte, so it always knows where
	// messages start and whether a transaction block is open.
	js, _ := json.Marshal(toxic{Name: "watch", Type: pgWatchType, Stream: "upstream", Toxicity: 1,
		Attributes: map[string]any{"nth": 1, "action": actionArmed}})
	w, err := p.Toxics.AddToxicJson(bytes.NewReader(js))
	if err != nil {
		return "", fmt.Errorf("faults: watched proxy: %w", err)
	}
	pw := w.Toxic.(*watchToxic)
	if err := pw.bind(l.hub, Fault{Name: "watched", Link: LinkDB}, l.engine); err != nil {
		return "", err
	}
	// Its replies toxic numbers each connection's answers, for a barrier
	// that releases writes one at a time (and on MySQL reads the server's
	// side, which the client's is read with).
	js, _ = json.Marshal(toxic{Name: "replies", Type: pgRepliesType, Stream: "downstream", Toxicity: 1})
	r, err := p.Toxics.AddToxicJson(bytes.NewReader(js))
	if err != nil {
		return "", fmt.Errorf("faults: watched proxy: %w", err)
	}
	r.Toxic.(*repliesToxic).up = pw
	if err := l.srv.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("faults: watched proxy: start: %w", err)
	}
	l.watched, l.watch = p, pw
	return p.Listen, nil
}

// DBSessions is how many connections through the watched proxy have
// started a session of the link's engine so far (on PostgreSQL, sent a
// StartupMessage of protocol 3; on MySQL, sent a command, the connection
// phase over): none, once the target has been ready and answered
// requests, means its database traffic does not pass here (another
// engine, a DSN of its own, a stream refused: Refused), and no
// database-link fault can act on it.
func (l *Link) DBSessions() int64 {
	if w := l.watchedToxic(); w != nil {
		return w.sessions.Load()
	}
	return 0
}

// Refused says why the watched proxy last closed a connection whose
// stream it could not follow (TLS, say), "" if it never did.
func (l *Link) Refused() string {
	if w := l.watchedToxic(); w != nil {
		if why := w.refused.Load(); why != nil {
			return *why
		}
	}
	return ""
}

func (l *Link) watchedToxic() *watchToxic {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watch
}

// Arm puts a database-link fault on the watched proxy until the returned
// disarm is called: db-cut and db-hold count their nth from this moment;
// db-latency delays every connection, pooled ones included.
//
// disarm reports where a db-cut or db-hold acted (Landing.Acted false: it
// did not); after it returns the fault never acts, so a landing it does not
// report never happens. It may be called more than once. For db-latency it
// returns the zero Landing.
//
// With carrying, a db-cut or db-hold on the effect write (no match of its
// own) meets and counts only the effect writes of transactions that sent
// one of these byte strings, in a statement or its parameters: the writes
// of one intent (its key, the values its effect is counted by), whichever
// connection makes them, and none of the other work on the link.
func (l *Link) Arm(f Fault, carrying ...[]byte) (disarm func() Landing, err error) {
	n, ts, err := toxicsFor(f)
	if err != nil {
		return nil, err
	}
	if n.Link != LinkDB {
		return nil, fmt.Errorf("faults: %s acts on the %s link; only database faults arm on the watched proxy", n.Name, n.Link)
	}
	if _, err := l.WatchedAddr(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range ts {
		if t.Type == pgWatchType {
			match, _ := t.Attributes["match"].(string)
			r, err := newWatchRule(match, toInt64(t.Attributes["nth"]), fmt.Sprint(t.Attributes["action"]), n)
			if err != nil {
				return nil, err
			}
			for _, m := range carrying {
				if len(m) > 0 {
					r.marks = append(r.marks, bytes.Clone(m))
				}
			}
			l.watch.armed.Store(r)
			return func() Landing {
				ld := r.disarm()
				l.watch.armed.CompareAndSwap(r, nil)
				return ld
			}, nil
		}
	}
	// A plain toxic (latency) joins the proxy's chain, live connections
	// included, and leaves it on disarm.
	var names []string
	for i, t := range ts {
		t.Name = fmt.Sprintf("armed-%s-%d", n.Name, i)
		js, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		if _, err := l.watched.Toxics.AddToxicJson(bytes.NewReader(js)); err != nil {
			return nil, fmt.Errorf("faults: arm %s: %w", n.Name, err)
		}
		names = append(names, t.Name)
	}
	p := l.watched
	var once sync.Once
	return func() Landing {
		once.Do(func() {
			for _, name := range names {
				_ = p.Toxics.RemoveToxic(context.Background(), name)
			}
		})
		return Landing{}
	}, nil
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 1
}
