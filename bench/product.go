package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// BodyTemplate is the body template the product-path bench certifies with:
// Body's, with the intent in place of the key.
const BodyTemplate = `{"customerId":"{{intent}}","totalCents":4000,"currency":"EUR"}`

// ProductArgs are the command-line arguments of the certification that
// ProductConfig stands for: `idemcheck certify` followed by these runs the
// same code path with the same configuration (the cmd/idemcheck test
// TestProductBenchIsCertify holds the two side by side).
func ProductArgs(addr string, n, rounds int, p wire.Protocol) []string {
	return []string{"certify", "--url", "http://" + addr + Path, "--checks", idemcheck.CheckConcurrentBurst,
		"--burst", fmt.Sprint(n), "--burst-rounds", fmt.Sprint(rounds), "--protocol", string(p), "--body", BodyTemplate}
}

// ProductArgsTLS are ProductArgs for a race target that serves TLS with a
// self-signed certificate: an https:// URL and --insecure.
func ProductArgsTLS(addr string, n, rounds int, p wire.Protocol) []string {
	args := ProductArgs(addr, n, rounds, p)
	args[2] = "https://" + addr + Path
	return append(args, "--insecure")
}

// ProductConfig is the certify.Config that `idemcheck certify` builds from
// ProductArgs: the concurrent-burst check alone, with every other setting
// at the command's default (IETF policy, --rate 1000, --timeout 10s,
// --max-body 64 KiB, no database, one pre-flight request).
func ProductConfig(addr string, n, rounds int, p wire.Protocol) certify.Config {
	opts := scenarios.Defaults
	opts.BurstSize, opts.BurstRounds = n, rounds
	return certify.Config{
		Settings: certify.Settings{
			Endpoint: scenarios.Endpoint{
				Base:   &url.URL{Scheme: "http", Host: addr},
				Method: "POST", Path: idemcheck.MustTemplate(Path), Body: idemcheck.MustTemplate(BodyTemplate),
			},
			Policy:  idemcheck.IETF(),
			Rate:    runner.DefaultRate,
			Timeout: 10 * time.Second,
			MaxBody: 64 << 10,
		},
		Checks:      []string{idemcheck.CheckConcurrentBurst},
		Options:     opts,
		MaxDuration: certify.DefaultMaxDuration,
		Protocol:    p,
		// The command's one plain request before the checks.
		Preflight: true,
	}
}

// ProductConfigTLS is the certify.Config that `idemcheck certify` builds
// from ProductArgsTLS: ProductConfig's, for an https:// target whose
// certificate is not verified (--insecure: TLS.InsecureSkipVerify, which
// the history records as Target.Insecure).
func ProductConfigTLS(addr string, n, rounds int, p wire.Protocol) certify.Config {
	cfg := ProductConfig(addr, n, rounds, p)
	cfg.Endpoint.Base.Scheme = "https"
	cfg.TLS = &tls.Config{InsecureSkipVerify: true}
	return cfg
}

// RunProduct runs a certification built by ProductConfig through
// certify.Run, the function `idemcheck certify` calls, and calls between
// after every step (for concurrent-burst: after every burst, repeats of
// loose ones included) with the check's progress, on the run's own
// goroutine, so that other drivers' bursts can be interleaved with the
// product's one by one. The burst keys are in the history's intents.
func RunProduct(ctx context.Context, cfg certify.Config, between func(runner.Progress)) (*certify.Result, error) {
	cfg.Progress = between
	return certify.Run(ctx, cfg)
}

// ProductBursts returns, for every burst of a product run in the order sent,
// its key and the burst as recorded.
func ProductBursts(h *idemcheck.History) (keys []string, bursts []idemcheck.Burst) {
	keyOf := map[string]string{}
	for _, in := range h.Intents {
		keyOf[in.ID] = in.Key
	}
	for _, b := range h.Bursts {
		keys = append(keys, keyOf[b.Intent])
		bursts = append(bursts, b)
	}
	return keys, bursts
}
