// Package scenarios says what to send to a target: each check's scenario is
// a value (how many rounds, and per round the steps of attempts of one
// intent, released together or one after another, through which fault), and
// Run sends them, recording every attempt in a History.
package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

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
	// DBFault is armed on the target's database link while the step runs.
	DBFault faults.Fault
	// OnHold says what to do to the target when DBFault (a db-hold) holds
	// its statement; the next step is the retry that meets it.
	OnHold HoldAction
	// RetryInProgress sends the attempt again while the answer is the
	// in-progress status, up to the policy's lease plus LeaseMargin.
	RetryInProgress bool
	// DelayBefore waits before the step: a client's retry after a while.
	DelayBefore time.Duration
	// NthByRound makes DBFault (a db-cut or db-hold) act on another of
	// the attempt's effect writes each round: the last one first (as many
	// as clean attempts were seen to make), then the one before, and so
	// on; the first while none was counted. A target that claims its key,
	// commits its work and finishes the key in separate writes has a
	// window before each, and each round tries one. With an explicit
	// match, rounds alternate its 1st and 2nd match.
	NthByRound bool
}

// HoldAction is what a step does to the target while its statement is held.
type HoldAction int

const (
	HoldNone HoldAction = iota
	// HoldCrash kills the target between its claim and its commit.
	HoldCrash
	// HoldStall freezes the attempt past the lease while a retry is sent.
	HoldStall
)

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
	// FaultRounds is how many rounds the checks that crash, stall or cut
	// the target run; each can wait out a lease.
	FaultRounds int
	// RetryWindow, when set, is how long after a success a client may still
	// retry: sequential-replay then also replays after that long, and the
	// key must still be known.
	RetryWindow time.Duration
	// Redeliveries is how many copies of one event webhook-redelivery
	// delivers at once.
	Redeliveries int
}

// Defaults are the sizes a certification uses unless told otherwise. A
// check-then-insert race whose window is one database round trip shows in
// nearly every burst of 32; five bursts make missing it unlikely.
var Defaults = Options{BurstSize: 32, BurstRounds: 5, Rounds: 3, FaultRounds: 2, Redeliveries: 8}

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
	case o.FaultRounds < 1 || o.FaultRounds > MaxRounds:
		return fmt.Errorf("fault rounds %d is out of range: use 1 to %d", o.FaultRounds, MaxRounds)
	case o.Redeliveries < 2 || o.Redeliveries > MaxBurstSize:
		return fmt.Errorf("redeliveries %d is out of range: use 2 to %d", o.Redeliveries, MaxBurstSize)
	case o.RetryWindow < 0:
		return fmt.Errorf("retry window %v must not be negative", o.RetryWindow)
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

// FailedAttempt cuts the target's database link at one of its effect
// writes (a COMMIT, or a write that commits on its own; another each
// round), so the first attempt dies inside the server, then retries.
func FailedAttempt(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCut("", 1), NthByRound: true},
		{Attempts: 1, RetryInProgress: true},
	}}
}

// CrashLease kills the target while the first attempt waits at one of its
// effect writes (a COMMIT, or a write that commits on its own: after the
// key is claimed, before the work commits), restarts it, and retries until
// the key's lease has had time to expire. Each round holds another of the
// attempt's writes, the last first (NthByRound): the windows of a target
// that claims its key, commits its work and finishes its key apart.
func CrashLease(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCrashLease, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBHold("", 1), OnHold: HoldCrash, NthByRound: true},
		{Attempts: 1, RetryInProgress: true},
	}}
}

// BeginPattern matches the statement that opens a transaction.
const BeginPattern = `(?i)^\s*(BEGIN|START\s+TRANSACTION)\b`

// LeaseFencing freezes the first attempt when it opens its work
// transaction (after the claim, before any work) until past the lease,
// sends a retry that may take the key over and finish, lets the first
// resume, and then replays the intent once more to see what stands.
func LeaseFencing(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckLeaseFencing, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBHold(BeginPattern, 1), OnHold: HoldStall},
		{Attempts: 1},
		{Attempts: 1, RetryInProgress: true},
	}}
}

// Target says what the harness can do to the target, for planning.
type Target struct {
	// Powers: the harness started the target and owns its database link.
	Powers bool
}

// SavedError sends the endpoint's failing body twice under one key: the
// second answer must be the first's saved error where errors are saved.
func SavedError(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Variant: idemcheck.Failing},
		{Attempts: 1, Variant: idemcheck.Failing},
	}}
}

// LateReplay replays an intent after the client's retry window.
func LateReplay(rounds int, window time.Duration) Scenario {
	return Scenario{Check: idemcheck.CheckSequentialReplay, Rounds: rounds,
		Steps: []Step{{Attempts: 1}, {Attempts: 1, DelayBefore: window}}}
}

// CrossTenant sends one key and body as one client, then as another.
func CrossTenant(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCrossTenant, Rounds: rounds,
		Steps: []Step{{Attempts: 1, Variant: idemcheck.TenantA}, {Attempts: 1, Variant: idemcheck.OtherTenant}}}
}

// WebhookRedelivery delivers one event n times at once.
func WebhookRedelivery(rounds, n int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds,
		Steps: []Step{{Attempts: n, Together: true}}}
}

// RedeliveryAfterFailure delivers an event whose first delivery fails
// inside the consumer (its database link cut at one of its effect writes,
// another each round), then delivers it again: the effect must then
// happen, once.
func RedeliveryAfterFailure(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCut("", 1), NthByRound: true},
		{Attempts: 1, RetryInProgress: true},
	}}
}

// RedeliveryAfterFailingBody delivers the endpoint's failing body (an event
// whose first processing fails), then delivers it again.
func RedeliveryAfterFailingBody(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Variant: idemcheck.Failing},
		{Attempts: 1, Variant: idemcheck.Failing, RetryInProgress: true},
	}}
}

// check is one check's scenario and the reason it may not apply.
type check struct {
	// build returns the check's scenarios for a target it applies to:
	// some checks have a half for each thing the harness may do to it.
	build func(o Options, e Endpoint, t Target) []Scenario
	// skip returns why the check does not apply to this target, or "".
	skip func(p idemcheck.Policy, e Endpoint, t Target) string
}

// one is the build of a check with one scenario.
func one(f func(Options) Scenario) func(Options, Endpoint, Target) []Scenario {
	return func(o Options, _ Endpoint, _ Target) []Scenario { return []Scenario{f(o)} }
}

func always(idemcheck.Policy, Endpoint, Target) string { return "" }

const noPowers = "needs control of the target's process and database link: let idemcheck start it (--cmd)"

func needsPowers(_ idemcheck.Policy, _ Endpoint, t Target) string {
	if !t.Powers {
		return noPowers
	}
	return ""
}

func needsPowersAndLease(p idemcheck.Policy, e Endpoint, t Target) string {
	if r := needsPowers(p, e, t); r != "" {
		return r
	}
	if p.Lease <= 0 {
		return "the policy names no lease (--lease, or lease: in the policy), so a slow takeover cannot be told from a stuck key"
	}
	return ""
}

var checks = map[string]check{
	idemcheck.CheckConcurrentBurst: {one(func(o Options) Scenario { return ConcurrentBurst(o.BurstSize, o.BurstRounds) }), always},
	idemcheck.CheckSequentialReplay: {func(o Options, _ Endpoint, _ Target) []Scenario {
		if o.RetryWindow > 0 {
			return []Scenario{SequentialReplay(o.Rounds), LateReplay(1, o.RetryWindow)}
		}
		return []Scenario{SequentialReplay(o.Rounds)}
	}, always},
	idemcheck.CheckLostReply: {one(func(o Options) Scenario { return LostReply(o.Rounds) }), always},
	idemcheck.CheckPayloadMismatch: {one(func(o Options) Scenario { return PayloadMismatch(o.Rounds) }), func(p idemcheck.Policy, _ Endpoint, _ Target) string {
		if p.MismatchStatus == 0 {
			return "the policy says the target keeps no request fingerprint (mismatch_status 0): a reused key with another body is replayed by design"
		}
		return ""
	}},
	idemcheck.CheckReorderedBody: {one(func(o Options) Scenario { return ReorderedBody(o.Rounds) }), func(_ idemcheck.Policy, e Endpoint, _ Target) string {
		if !e.JSONBody() {
			return "the request body is not a JSON object, so it has no members to reorder"
		}
		return ""
	}},
	idemcheck.CheckCrossEndpoint: {one(func(o Options) Scenario { return CrossEndpoint(o.Rounds) }), func(_ idemcheck.Policy, e Endpoint, _ Target) string {
		if e.Other == nil {
			return "no second endpoint to send the key to (set cross_endpoint in the suite, or --other-path)"
		}
		return ""
	}},
	idemcheck.CheckDistinctKeys: {one(func(o Options) Scenario { return DistinctKeys(o.Rounds) }), always},
	idemcheck.CheckMissingKey: {one(func(o Options) Scenario { return MissingKey(o.Rounds) }), func(p idemcheck.Policy, _ Endpoint, _ Target) string {
		if p.MissingKeyStatus == 0 {
			return "the policy makes the key optional (missing_key_status 0): a request without it is an ordinary request"
		}
		return ""
	}},
	idemcheck.CheckFailedAttempt: {func(o Options, e Endpoint, t Target) []Scenario {
		// Two halves: a failure the harness causes (needs the database
		// link) and a failure the target answers (needs a failing body).
		var scs []Scenario
		if t.Powers {
			scs = append(scs, FailedAttempt(o.FaultRounds))
		}
		if e.FailingBody != nil {
			scs = append(scs, SavedError(o.FaultRounds))
		}
		return scs
	}, func(p idemcheck.Policy, e Endpoint, t Target) string {
		if e.FailingBody != nil {
			return ""
		}
		return needsPowers(p, e, t)
	}},
	idemcheck.CheckCrashLease:   {one(func(o Options) Scenario { return CrashLease(o.FaultRounds) }), needsPowersAndLease},
	idemcheck.CheckLeaseFencing: {one(func(o Options) Scenario { return LeaseFencing(o.FaultRounds) }), needsPowersAndLease},
	idemcheck.CheckCrossTenant: {one(func(o Options) Scenario { return CrossTenant(o.Rounds) }), func(_ idemcheck.Policy, e Endpoint, _ Target) string {
		if len(e.Tenants) != 2 {
			return "needs two clients' credentials (--tenant 'Authorization: Bearer A' --tenant 'Authorization: Bearer B', or tenants: in the suite)"
		}
		return ""
	}},
	idemcheck.CheckWebhookRedeliver: {func(o Options, e Endpoint, t Target) []Scenario {
		scs := []Scenario{WebhookRedelivery(o.Rounds, o.Redeliveries)}
		if t.Powers {
			scs = append(scs, RedeliveryAfterFailure(o.FaultRounds))
		}
		if e.FailingBody != nil {
			scs = append(scs, RedeliveryAfterFailingBody(o.FaultRounds))
		}
		return scs
	}, func(p idemcheck.Policy, _ Endpoint, _ Target) string {
		if p.KeyPointer == "" {
			return "for webhook and queue consumers: the policy names no key_pointer (the event id in the body; --policy webhook)"
		}
		return ""
	}},
}

// Names lists the checks that have a scenario, in the order a
// certification runs them.
func Names() []string { return slices.Clone(idemcheck.AllChecks) }

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
func Plan(names []string, o Options, p idemcheck.Policy, e Endpoint, t Target) ([]Scenario, []idemcheck.PlannedCheck, error) {
	var scs []Scenario
	var plan []idemcheck.PlannedCheck
	for _, n := range names {
		c, ok := checks[n]
		if !ok {
			return nil, nil, UnknownCheckError(n)
		}
		pc := idemcheck.PlannedCheck{Name: n, Skip: c.skip(p, e, t)}
		if pc.Skip == "" {
			scs = append(scs, c.build(o, e, t)...)
		}
		plan = append(plan, pc)
	}
	return scs, plan, nil
}
