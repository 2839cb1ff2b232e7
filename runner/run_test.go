package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	idemassert "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// seenTarget is an HTTP/1.1 target that records, per idempotency key, the
// remote address of every connection a request arrived on.
type seenTarget struct {
	base *url.URL
	mu   sync.Mutex
	from map[string][]string // key -> remote addresses
	// racy: every request creates a resource of its own, as a target
	// without idempotency does.
	racy bool
	n    int
}

func newSeenTarget(t *testing.T) *seenTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	st := &seenTarget{from: map[string][]string{}}
	// HTTP/1.1 and h2c with prior knowledge, so that both burst engines
	// can be watched.
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		st.mu.Lock()
		k := r.Header.Get("Idempotency-Key")
		st.from[k] = append(st.from[k], r.RemoteAddr)
		st.n++
		id := "o-1"
		if st.racy {
			id = fmt.Sprintf("o-%d", st.n)
		}
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":%q}`, id)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	st.base = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return st
}

// localAddrs is a dialer that remembers the local address of every
// connection it opened: the harness's own sockets.
type localAddrs struct {
	mu    sync.Mutex
	addrs map[string]bool
}

func (l *localAddrs) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		l.mu.Lock()
		l.addrs[c.LocalAddr().String()] = true
		l.mu.Unlock()
	}
	return c, err
}

// A burst, and every step without a client-link fault, arrives at the
// target on idemcheck's own connections; only a faulted step goes through
// the fault proxy, whose connections to the target are its own. The check
// is the remote address the target saw: a proxy in a burst's path would
// show its upstream sockets there, not the client's.
func TestBurstsAndCleanStepsReachTheTargetDirectly(t *testing.T) {
	for _, p := range []wire.Protocol{wire.ProtocolAuto, wire.ProtocolHTTP1, wire.ProtocolH2} {
		t.Run(string(p), func(t *testing.T) {
			target := newSeenTarget(t)
			mine := &localAddrs{addrs: map[string]bool{}}
			r := &Runner{
				Endpoint: scenarios.Endpoint{Base: target.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
					Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)},
				Policy: idemcheck.IETF(), Timeout: 5 * time.Second, Protocol: p, dial: mine.dial,
				// No repeats: how tight the bursts are is not the point here.
				looseSpread: func(int) time.Duration { return time.Hour },
			}
			h := &idemcheck.History{}
			scs := []scenarios.Scenario{scenarios.ConcurrentBurst(8, 2), scenarios.SequentialReplay(1), scenarios.LostReply(1)}
			require.NoError(t, r.Run(context.Background(), scs, h))
			require.Len(t, h.Bursts, 2)
			want := string(p)
			if p == wire.ProtocolAuto {
				want = string(wire.ProtocolH2) // the target speaks h2c
			}
			for _, b := range h.Bursts {
				assert.Equal(t, want, b.Protocol)
			}

			target.mu.Lock()
			defer target.mu.Unlock()
			byKey := map[string]string{}
			for _, in := range h.Intents {
				byKey[in.Key] = in.Check
			}
			var viaProxy int
			for key, from := range target.from {
				check := byKey[key]
				if key == "" {
					// Go's net/http hands the h2c probe's preface to the
					// handler: the probe goes direct as well.
					check = "protocol probe"
				}
				require.NotEmpty(t, check, "a request with key %q the run never made", key)
				for i, addr := range from {
					direct := mine.addrs[addr]
					if check == idemcheck.CheckLostReply && i == 0 {
						// The cut-reply step is faulted: it must come from the
						// proxy, which shows the check tells the two apart.
						assert.False(t, direct, "the faulted step of %s bypassed the fault proxy", check)
						viaProxy++
						continue
					}
					assert.True(t, direct, "%s: request %d with key %s came from %s, not from the harness's own sockets %v",
						check, i+1, key, addr, mine.addrs)
				}
			}
			assert.Equal(t, 1, viaProxy, "exactly one faulted request, through the proxy")
			var burstReqs int
			for _, in := range h.Intents {
				if in.Check == idemcheck.CheckConcurrentBurst {
					burstReqs += len(target.from[in.Key])
				}
			}
			assert.Equal(t, 16, burstReqs, "every burst attempt reached the target")
		})
	}
}

// The fault proxy is still where faulted steps go.
func TestFaultedStepGoesThroughTheProxy(t *testing.T) {
	link, err := faults.NewLink("127.0.0.1:1")
	require.NoError(t, err)
	defer link.Close()
	s := &session{link: link, direct: link.Upstream()}
	addr, err := s.addr(faults.None)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:1", addr)
	addr, err = s.addr(faults.CutReply)
	require.NoError(t, err)
	assert.NotEqual(t, "127.0.0.1:1", addr)
}

func burstRunner(target *seenTarget, limit func(int) time.Duration) *Runner {
	return &Runner{
		Endpoint: scenarios.Endpoint{Base: target.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
			Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)},
		Policy: idemcheck.IETF(), Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1, looseSpread: limit,
	}
}

// A loose burst's round is repeated with a fresh intent, at most
// LooseRepeats times; every burst stays in the history, marked, with its
// intent, check and round, and the attempts of the loose ones still count:
// a target that creates a resource per request is caught in every burst.
func TestLooseBurstsAreRepeatedWithinABound(t *testing.T) {
	target := newSeenTarget(t)
	target.racy = true
	r := burstRunner(target, func(int) time.Duration { return -1 }) // every burst is loose
	var last Progress
	r.Progress = func(p Progress) { last = p }
	h := &idemcheck.History{Run: idemcheck.Run{Policy: idemcheck.IETF(),
		Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckConcurrentBurst}}}}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.ConcurrentBurst(4, 2)}, h))

	rounds := 2 * (1 + LooseRepeats)
	require.Len(t, h.Bursts, rounds)
	require.Len(t, h.Intents, rounds, "each burst has an intent of its own")
	require.Len(t, h.Attempts, 4*rounds)
	assert.Equal(t, last.Total, last.Sent, "the progress total grows with the repeats")
	keys := map[string]bool{}
	for i, b := range h.Bursts {
		assert.True(t, b.Loose, "burst %d", b.ID)
		assert.Equal(t, idemcheck.CheckConcurrentBurst, b.Check)
		assert.Equal(t, 1+i/(1+LooseRepeats), b.Round, "burst %d", b.ID)
		assert.Equal(t, h.Intents[i].ID, b.Intent)
		assert.Equal(t, b.Round, h.Intents[i].Round)
		keys[h.Intents[i].Key] = true
	}
	assert.Len(t, keys, rounds, "a fresh key for every repeat")

	caught := map[string]bool{}
	for _, a := range idemassert.Check(h) {
		caught[a.Intent] = true
	}
	for _, in := range h.Intents {
		assert.True(t, caught[in.ID], "the duplicates of loose burst %s still count", in.ID)
	}
	proof, loose := idemassert.BurstProof(h.Bursts)
	assert.True(t, loose, proof)
}

// A tight burst is not repeated; a round is repeated only until one of its
// bursts is tight.
func TestTightBurstIsNotRepeated(t *testing.T) {
	target := newSeenTarget(t)
	r := burstRunner(target, func(int) time.Duration { return time.Hour })
	h := &idemcheck.History{}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.ConcurrentBurst(4, 3)}, h))
	require.Len(t, h.Bursts, 3)
	for _, b := range h.Bursts {
		assert.False(t, b.Loose)
	}

	calls := 0
	r = burstRunner(target, func(int) time.Duration {
		calls++
		if calls <= 2 {
			return -1 // the first two bursts are loose
		}
		return time.Hour
	})
	h = &idemcheck.History{}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.ConcurrentBurst(4, 2)}, h))
	require.Len(t, h.Bursts, 4, "round 1 sent three bursts, round 2 one")
	assert.Equal(t, []int{1, 1, 1, 2}, []int{h.Bursts[0].Round, h.Bursts[1].Round, h.Bursts[2].Round, h.Bursts[3].Round})
	proof, loose := idemassert.BurstProof(h.Bursts)
	assert.False(t, loose)
	assert.Contains(t, proof, "2 bursts of 4 over http1")
	assert.Contains(t, proof, "(2 looser bursts were repeated; their attempts still count)")
}

// A step the round cannot send (a hold without its retry, a Send it does
// not know) is an error, never a silent skip.
func TestRunRefusesAStepItCannotSend(t *testing.T) {
	target := newSeenTarget(t)
	r := &Runner{Endpoint: scenarios.Endpoint{Base: target.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
		Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)}, Policy: idemcheck.IETF(), Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1}
	for _, st := range []scenarios.Step{{Attempts: 1, Send: scenarios.HoldInFlight}, {Attempts: 1, Send: scenarios.Send(99)}} {
		err := r.Run(context.Background(), []scenarios.Scenario{{Check: "made-up", Rounds: 1, Steps: []scenarios.Step{st}}}, &idemcheck.History{})
		assert.ErrorContains(t, err, "step", "%v", st.Send)
	}
}
