package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/bench"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/runner"
)

// The product-path burst benchmark (bench/cmd/productbench) runs
// bench.RunProduct with bench.ProductConfig. This holds it beside
// `idemcheck certify` with bench.ProductArgs, run as the command runs: the
// command must hand certify.Run the very same configuration, and both must
// make the same run, step by step, request by request, burst by burst, over
// each protocol, so that what the benchmark measures is what a user gets
// from the command; over TLS too (bench.ProductArgsTLS, --insecure, against
// a target with a self-signed certificate).
func TestProductBenchIsCertify(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = bench.Serve(ln, bench.NewRaceTarget(0)) }()
	t.Cleanup(func() { ln.Close() })
	tlsCfg, err := bench.SelfSignedTLS()
	require.NoError(t, err)
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = bench.ServeTLS(tlsLn, bench.NewRaceTarget(0), tlsCfg) }()
	t.Cleanup(func() { tlsLn.Close() })

	type via struct {
		args func(string, int, int, wire.Protocol) []string
		cfg  func(string, int, int, wire.Protocol) certify.Config
	}
	plain, overTLS := via{bench.ProductArgs, bench.ProductConfig}, via{bench.ProductArgsTLS, bench.ProductConfigTLS}
	for _, c := range []struct {
		name string
		p    wire.Protocol
		addr string
		via  via
	}{
		{"http1", wire.ProtocolHTTP1, ln.Addr().String(), plain},
		{"h2", wire.ProtocolH2, ln.Addr().String(), plain},
		{"h2 over TLS", wire.ProtocolH2, tlsLn.Addr().String(), overTLS},
	} {
		p, addr := c.p, c.addr
		t.Run(c.name, func(t *testing.T) {
			const n, rounds = 4, 3
			histPath := filepath.Join(t.TempDir(), "history.jsonl")
			args := append(c.via.args(addr, n, rounds, p), "--history", histPath, "--no-color")
			code, out, errOut := cli(t, args...)
			// Every request of the race target creates an order of its own:
			// the burst check fails, as it must.
			require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			f, err := os.Open(histPath)
			require.NoError(t, err)
			defer f.Close()
			hs, err := history.ReadAll(f, histPath)
			require.NoError(t, err)
			require.Len(t, hs, 1)
			fromCLI := hs[0]

			// The configuration the command hands to certify.Run is the
			// benchmark's, field by field, but for the progress line, the
			// words its messages name settings in (the command's flags) and
			// the redactor its outputs pass through.
			var built certify.Config
			certifyRun = func(ctx context.Context, cfg certify.Config) (*certify.Result, error) {
				built = cfg
				return certify.Run(ctx, cfg)
			}
			defer func() { certifyRun = certify.Run }()
			code, out, errOut = cli(t, c.via.args(addr, n, rounds, p)...)
			require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.NotNil(t, built.Progress)
			require.NotEmpty(t, built.Words)
			require.NotNil(t, built.Redactor)
			words := built.Words
			built.Progress, built.Words, built.Redactor = nil, nil, nil
			assert.Equal(t, c.via.cfg(addr, n, rounds, p), built)

			// The same run, its plan said in the command's words (what a
			// check could not send names the flags that would let it).
			steps := 0
			benchCfg := c.via.cfg(addr, n, rounds, p)
			benchCfg.Words = words
			res, err := bench.RunProduct(context.Background(), benchCfg, func(runner.Progress) { steps++ })
			require.NoError(t, err)
			fromBench := res.History
			assert.Equal(t, len(fromBench.Bursts), steps, "the hook runs once after every burst")

			assert.Equal(t, fromCLI.Run.Checks, fromBench.Run.Checks)
			assert.Equal(t, fromCLI.Run.Policy, fromBench.Run.Policy)
			assert.Equal(t, fromCLI.Run.Target, fromBench.Run.Target)
			assert.Equal(t, fromCLI.Run.EffectQuery, fromBench.Run.EffectQuery)
			assert.Equal(t, shape(fromCLI), shape(fromBench))
			keys, bursts := bench.ProductBursts(fromBench)
			tight := 0
			for i, b := range bursts {
				assert.Equal(t, string(p), b.Protocol, "burst %d", i+1)
				assert.Equal(t, n, b.Attempts)
				assert.Equal(t, fromBench.Intents[i].Key, keys[i], "burst %d's key is its intent's", i+1)
				if !b.Loose {
					tight++
				}
			}
			assert.Equal(t, rounds, tight, "one tight burst a round")
		})
	}
}

// measured is 1 ns for a duration that was measured, 0 for one that was
// not.
func measured(d time.Duration) time.Duration { return min(d, 1) }

// shape is a history's requests and bursts with each intent's id and key
// replaced by placeholders: what two runs of the same configuration share.
// A loose burst (one a busy machine released too wide, which the run
// repeats) is left out with its attempts, and burst numbers with it.
func shape(h *idemcheck.History) []string {
	var out []string
	loose := map[int]bool{}
	for _, b := range h.Bursts {
		if b.Loose {
			loose[b.ID] = true
			continue
		}
		// What was measured differs run to run; whether it was is kept.
		b.ID, b.Spread, b.Intent = 0, 0, ""
		b.PrefixWait, b.RTT, b.Jitter, b.KernelRTT = measured(b.PrefixWait), measured(b.RTT), measured(b.Jitter), measured(b.KernelRTT)
		b.PrefixAcked = false // the kernel's answer, which a busy machine may delay
		out = append(out, jsonOf(b))
	}
	for _, a := range h.Attempts {
		if loose[a.Burst] {
			continue
		}
		rep := strings.NewReplacer(a.Key, "KEY", a.Intent, "INTENT")
		hdr := http.Header{}
		for k, vs := range a.Header {
			for _, v := range vs {
				hdr.Add(k, rep.Replace(v))
			}
		}
		out = append(out, strings.Join([]string{a.Check, itoa(a.Round), itoa(a.Step), strconv.FormatBool(a.Burst != 0), string(a.Variant), a.Fault,
			a.Method, a.Path, rep.Replace(a.Body), jsonOf(hdr), string(a.Outcome), itoa(a.Status)}, "|"))
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
