// Package scenarios says what to send to a target: each check's scenario is
// a value (how many rounds, and per round the steps of attempts of one
// intent, released together or one after another, through which fault), and
// Run sends them, recording every attempt in a History.
package scenarios

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
)

// Step is one part of a round: Attempts sends of the round's intent, all
// released at the same instant when Together, else one after another, each
// through Fault's link.
type Step struct {
	Attempts int
	Together bool
	Fault    faults.Fault
	// Variant, when set, sends a changed copy of the intent's request.
	Variant idemcheck.Variant
}

// Scenario is what a check sends: Rounds rounds, each with a fresh intent
// that goes through Steps in order.
type Scenario struct {
	Check  string
	Rounds int
	Steps  []Step
}

// Attempts is how many attempts the scenario sends.
func (s Scenario) Attempts() int {
	n := 0
	for _, st := range s.Steps {
		n += st.Attempts
	}
	return n * s.Rounds
}

// Options size the default scenarios.
type Options struct {
	// BurstSize is how many same-key attempts concurrent-burst releases together.
	BurstSize int
	// BurstRounds is how many bursts it sends, each with a fresh intent.
	BurstRounds int
	// Rounds is how many rounds the sequential checks run.
	Rounds int
}

// Defaults are the sizes a certification uses unless told otherwise. A
// check-then-insert race whose window is one database round trip shows in
// nearly every burst of 32; five bursts make missing it unlikely.
var Defaults = Options{BurstSize: 32, BurstRounds: 5, Rounds: 3}

// Limits bound what a flag may ask for.
const (
	MaxBurstSize = 1024
	MaxRounds    = 10000
)

// Validate names the option that is out of range.
func (o Options) Validate() error {
	switch {
	case o.BurstSize < 2 || o.BurstSize > MaxBurstSize:
		return fmt.Errorf("burst size %d is out of range: use 2 to %d", o.BurstSize, MaxBurstSize)
	case o.BurstRounds < 1 || o.BurstRounds > MaxRounds:
		return fmt.Errorf("burst rounds %d is out of range: use 1 to %d", o.BurstRounds, MaxRounds)
	case o.Rounds < 1 || o.Rounds > MaxRounds:
		return fmt.Errorf("rounds %d is out of range: use 1 to %d", o.Rounds, MaxRounds)
	}
	return nil
}

// ConcurrentBurst sends n attempts of one intent released together, for rounds rounds.
func ConcurrentBurst(n, rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckConcurrentBurst, Rounds: rounds, Steps: []Step{{Attempts: n, Together: true}}}
}

// SequentialReplay sends an intent, waits for its reply, and sends it again.
func SequentialReplay(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckSequentialReplay, Rounds: rounds, Steps: []Step{{Attempts: 1}, {Attempts: 1}}}
}

// LostReply sends an intent whose reply is cut after the server committed,
// then retries it with the same key.
func LostReply(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckLostReply, Rounds: rounds, Steps: []Step{{Attempts: 1, Fault: faults.CutReply}, {Attempts: 1}}}
}

// PayloadMismatch sends an intent, then its key with another body, then
// the original again to see that it was left untouched.
func PayloadMismatch(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckPayloadMismatch, Rounds: rounds,
		Steps: []Step{{Attempts: 1}, {Attempts: 1, Variant: idemcheck.OtherBody}, {Attempts: 1}}}
}

// ReorderedBody sends an intent, then the same JSON with its members
// reordered and its white space changed.
func ReorderedBody(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckReorderedBody, Rounds: rounds,
		Steps: []Step{{Attempts: 1}, {Attempts: 1, Variant: idemcheck.Reordered}}}
}

// CrossEndpoint sends an intent, then its key to another endpoint.
func CrossEndpoint(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCrossEndpoint, Rounds: rounds,
		Steps: []Step{{Attempts: 1}, {Attempts: 1, Variant: idemcheck.OtherEndpoint}}}
}

// DistinctKeys sends an intent, then the same body under a fresh key.
func DistinctKeys(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckDistinctKeys, Rounds: rounds,
		Steps: []Step{{Attempts: 1}, {Attempts: 1, Variant: idemcheck.OtherKey}}}
}

// MissingKey sends the request without its key header.
func MissingKey(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckMissingKey, Rounds: rounds,
		Steps: []Step{{Attempts: 1, Variant: idemcheck.NoKey}}}
}

// check is one check's scenario and the reason it may not apply.
type check struct {
	build func(Options) Scenario
	// skip returns why the check does not apply to this target, or "".
	skip func(p idemcheck.Policy, e Endpoint) string
}

func always(idemcheck.Policy, Endpoint) string { return "" }

var checks = map[string]check{
	idemcheck.CheckConcurrentBurst:  {func(o Options) Scenario { return ConcurrentBurst(o.BurstSize, o.BurstRounds) }, always},
	idemcheck.CheckSequentialReplay: {func(o Options) Scenario { return SequentialReplay(o.Rounds) }, always},
	idemcheck.CheckLostReply:        {func(o Options) Scenario { return LostReply(o.Rounds) }, always},
	idemcheck.CheckPayloadMismatch: {func(o Options) Scenario { return PayloadMismatch(o.Rounds) }, func(p idemcheck.Policy, _ Endpoint) string {
		if p.MismatchStatus == 0 {
			return "the policy says the target keeps no request fingerprint (mismatch_status 0): a reused key with another body is replayed by design"
		}
		return ""
	}},
	idemcheck.CheckReorderedBody: {func(o Options) Scenario { return ReorderedBody(o.Rounds) }, func(_ idemcheck.Policy, e Endpoint) string {
		if !e.JSONBody() {
			return "the request body is not a JSON object, so it has no members to reorder"
		}
		return ""
	}},
	idemcheck.CheckCrossEndpoint: {func(o Options) Scenario { return CrossEndpoint(o.Rounds) }, func(_ idemcheck.Policy, e Endpoint) string {
		if e.Other == nil {
			return "no second endpoint to send the key to (set cross_endpoint in the suite, or --other-path)"
		}
		return ""
	}},
	idemcheck.CheckDistinctKeys: {func(o Options) Scenario { return DistinctKeys(o.Rounds) }, always},
	idemcheck.CheckMissingKey: {func(o Options) Scenario { return MissingKey(o.Rounds) }, func(p idemcheck.Policy, _ Endpoint) string {
		if p.MissingKeyStatus == 0 {
			return "the policy makes the key optional (missing_key_status 0): a request without it is an ordinary request"
		}
		return ""
	}},
}

// Names lists the checks that have a scenario, in the order a
// certification runs them.
func Names() []string {
	return []string{
		idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply,
		idemcheck.CheckPayloadMismatch, idemcheck.CheckReorderedBody, idemcheck.CheckCrossEndpoint,
		idemcheck.CheckDistinctKeys, idemcheck.CheckMissingKey,
	}
}

// Known reports whether name is a check with a scenario.
func Known(name string) bool { _, ok := checks[name]; return ok }

// UnknownCheckError names the known checks.
func UnknownCheckError(name string) error {
	known := Names()
	sort.Strings(known)
	return fmt.Errorf("unknown check %q (known: %s)", name, strings.Join(known, ", "))
}

// Plan returns the scenarios of the named checks that apply to the policy
// and endpoint, and every named check with the reason it was skipped, if
// it was. An unknown name is an error listing the known ones.
func Plan(names []string, o Options, p idemcheck.Policy, e Endpoint) ([]Scenario, []idemcheck.PlannedCheck, error) {
	var scs []Scenario
	var plan []idemcheck.PlannedCheck
	for _, n := range names {
		c, ok := checks[n]
		if !ok {
			return nil, nil, UnknownCheckError(n)
		}
		pc := idemcheck.PlannedCheck{Name: n, Skip: c.skip(p, e)}
		if pc.Skip == "" {
			scs = append(scs, c.build(o))
		}
		plan = append(plan, pc)
	}
	return scs, plan, nil
}
