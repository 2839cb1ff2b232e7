package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/estimate"
)

// runEstimate prints the cost arithmetic of retries that are not
// recognised as retries. It sends nothing: every figure comes from the flags.
func runEstimate(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("estimate", flag.ContinueOnError)
	var (
		requests, timeoutRate, succeeded, late, value, window string
		keyBytes                                              int64
		layers, tries                                         int
		callsPerIntent                                        float64
		asJSON                                                bool
	)
	fs.StringVar(&requests, "requests-per-day", "", "`N` mutating requests a day, such as 20000 (required)")
	fs.StringVar(&timeoutRate, "timeout-rate", "", "`R`: share of requests whose client timed out, 0 to 1 or a percentage, such as 0.2% (required)")
	fs.StringVar(&succeeded, "succeeded-share", "", "`S`: share of those timeouts the server had completed, 0 to 1 or a percentage, such as 50% (required)")
	fs.StringVar(&late, "late-duplicate-rate", "", "`L`: share of requests the service did again after the reply by itself (a queue's job run again after its effect committed), 0 to 1 or a percentage, such as a soak's late_duplicate_rate")
	fs.StringVar(&value, "value", "", "`V`: what one duplicate costs (refund, support time), a number such as 40")
	fs.Int64Var(&keyBytes, "key-bytes", estimate.DefaultKeyBytes, "`B` bytes one stored key takes: key, request fingerprint and saved reply")
	fs.StringVar(&window, "window", "24h", "`D`: how long keys are kept, a Go duration such as 24h, or days such as 7d")
	fs.IntVar(&layers, "layers", 0, "`L` layers of the call stack that each retry (with --tries)")
	fs.IntVar(&tries, "tries", 0, "`T` tries per layer, the first included (with --layers)")
	fs.Float64Var(&callsPerIntent, "calls-per-intent", 0, "`X` provider calls one client intent caused, as a certification measured it (a check's provider.calls_per_intent in the JSON report); with --layers, X^layers")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var in estimate.Inputs
	var err error
	if in.RequestsPerDay, err = parseCount(requests); err != nil || in.RequestsPerDay < 1 || in.RequestsPerDay > estimate.MaxRequestsPerDay {
		if requests == "" {
			return 0, idemcheck.Usagef("estimate: --requests-per-day is required: the mutating requests a day, such as --requests-per-day 20000")
		}
		return 0, idemcheck.Usagef("--requests-per-day %q is out of range: use a number from 1 to %g, such as 20000", requests, float64(estimate.MaxRequestsPerDay))
	}
	if in.TimeoutRate, err = parseShare("--timeout-rate", timeoutRate, "0.2%"); err != nil {
		return 0, err
	}
	if in.SucceededShare, err = parseShare("--succeeded-share", succeeded, "50%"); err != nil {
		return 0, err
	}
	if late != "" {
		if in.LateDuplicateRate, err = parseShare("--late-duplicate-rate", late, "0.5%"); err != nil {
			return 0, err
		}
	}
	if value != "" {
		if in.ValuePerDuplicate, err = parseCount(value); err != nil || in.ValuePerDuplicate < 0 {
			return 0, idemcheck.Usagef("--value %q is out of range: use a number of 0 or more, such as 40", value)
		}
	}
	in.KeyBytes = keyBytes
	if keyBytes < 1 || keyBytes > estimate.MaxKeyBytes {
		return 0, idemcheck.Usagef("--key-bytes %d is out of range: use 1 to %d", keyBytes, estimate.MaxKeyBytes)
	}
	if in.Window, err = parseWindow(window); err != nil || in.Window <= 0 || in.Window > estimate.MaxWindow {
		return 0, idemcheck.Usagef("--window %q is out of range: use a Go duration above 0 and at most %gh (a year), such as 24h, or days such as 7d", window, estimate.MaxWindow.Hours())
	}
	switch {
	case set["tries"] && !set["layers"], set["layers"] && !set["tries"] && !set["calls-per-intent"]:
		return 0, idemcheck.Usagef("--layers goes with --tries or --calls-per-intent: give both, such as --layers 5 --tries 3")
	case set["layers"] && (layers < 1 || layers > estimate.MaxLayers):
		return 0, idemcheck.Usagef("--layers %d is out of range: use 1 to %d", layers, estimate.MaxLayers)
	case set["tries"] && (tries < 1 || tries > estimate.MaxTries):
		return 0, idemcheck.Usagef("--tries %d is out of range: use 1 to %d", tries, estimate.MaxTries)
	}
	in.Layers, in.Tries = layers, tries
	if set["calls-per-intent"] && !(callsPerIntent >= 1 && callsPerIntent <= estimate.MaxTries) {
		return 0, idemcheck.Usagef("--calls-per-intent %v is out of range: use 1 to %d, such as the provider.calls_per_intent of a check in a JSON report", callsPerIntent, estimate.MaxTries)
	}
	in.CallsPerIntent = callsPerIntent
	// The flags above are checked one by one to name the flag; this catches
	// any rule of the package that they missed.
	if err := estimate.Validate(in); err != nil {
		return 0, idemcheck.Usagef("estimate: %v", err)
	}

	res := estimate.Compute(in)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return idemcheck.ExitHeld, enc.Encode(res)
	}
	return idemcheck.ExitHeld, estimate.WriteText(stdout, res)
}

// parseCount reads a non-negative, finite number, allowing thousands
// separators ("20,000", "20_000") as people write them.
func parseCount(s string) (float64, error) {
	s = strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(s))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number")
	}
	return v, nil
}

// parseShare reads a share from 0 to 1, or a percentage from 0% to 100%.
// A bare number above 1 is refused rather than read as a percentage: "0.2"
// could mean 20% or 0.2%, and a wrong guess is off by a hundred.
func parseShare(flagName, s, example string) (float64, error) {
	if s == "" {
		return 0, idemcheck.Usagef("estimate: %s is required: a share from 0 to 1 or a percentage, such as %s %s", flagName, flagName, example)
	}
	raw, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := parseCount(raw)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || v < 0 || v > 1 {
		return 0, idemcheck.Usagef("%s %q is out of range: use 0 to 1, or 0%% to 100%%, such as %s", flagName, s, example)
	}
	return v, nil
}

// parseWindow reads a Go duration, or a whole number of days ("7d"), which
// Go durations lack and retention windows are usually given in.
func parseWindow(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 366 {
			return 0, fmt.Errorf("not a number of days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
