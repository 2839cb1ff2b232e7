package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets"
)

// Check is one check, whole: its stable name, the contract rule it
// enforces, whether it breaks the target on purpose, the scenarios it
// sends and when it does not apply. A check is this one value in the
// registry: Plan puts its rule and fault flag in the run's plan, so the
// checker (package assert) and every report learn them from the history.
//
// The registry is closed: every check is defined in this package, and
// Checks and Lookup return descriptions of them, to read; a Check built
// elsewhere sends nothing, and Plan takes names, not Checks. The set of
// checks is the certification's contract: a run that names no checks runs
// them all, and every report states every rule (NotAsked), so a check
// registered from outside would change every run in the process. Adding a
// check is adding its value to the registry, with a test and a row of
// docs/checks.md; the checker judges it by the facts its plan records.
type Check struct {
	// Name is the check's stable name (the idemcheck.Check* constants),
	// as reports, suite files and JUnit show it.
	Name string
	// Rule says the contract rule the check enforces and where the rule is
	// published, for reports and reviewers.
	Rule string
	// Faults: the check breaks the target on purpose (a cut database link,
	// a kill), so a key still in progress when its retries give up is
	// stuck, and the in-progress status its retries meet is judged as such.
	Faults bool
	// FailureReleasesKey: the check fails its first attempt inside the
	// server and retries once the failure was answered, so an answered
	// failure must have released the key: a retry told it is in progress
	// meets a stuck key (see idemcheck.PlannedCheck).
	FailureReleasesKey bool
	// RetryTakesOver: the check's retry is sent past the lease while its
	// first attempt is frozen, and its rounds count only when that retry
	// took the key over (see idemcheck.PlannedCheck).
	RetryTakesOver bool
	// CountsExecutions: the check tells one execution from two, by the
	// effect count or the success replies' resource ids; a round with
	// neither is not counted (see idemcheck.PlannedCheck).
	CountsExecutions bool

	// build returns the check's scenarios for a target it applies to:
	// some checks have a half for each thing the harness may do to it.
	// Plan labels each scenario with the check's Name.
	build func(o Options, e Endpoint, t access) []Scenario
	// skipWhy returns why the check does not apply to this target, naming
	// the settings that would make it apply as idemcheck.Field and
	// idemcheck.Setting values (Plan says them in its caller's words), or
	// the zero Phrase; nil for a check that applies to every target.
	skipWhy func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase
	// partialWhy returns what the check, though it applies, cannot send to
	// this target (a half that needs a power the target lacks), naming
	// what would let it, or the zero Phrase; nil for a check that always
	// sends all of itself.
	partialWhy func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase
}

// skip returns why c does not apply to this target in words, or "".
func (c Check) skip(p idemcheck.Policy, e Endpoint, t access, words map[idemcheck.Field]idemcheck.Word) string {
	if c.skipWhy == nil {
		return ""
	}
	return c.skipWhy(p, e, t).In(words)
}

// Planned is the check as a run's plan records it, skipped for skip when
// that is not "".
func (c Check) Planned(skip string) idemcheck.PlannedCheck {
	return idemcheck.PlannedCheck{Name: c.Name, Skip: skip, Rule: c.Rule, Faults: c.Faults, FailureReleasesKey: c.FailureReleasesKey,
		RetryTakesOver: c.RetryTakesOver, CountsExecutions: c.CountsExecutions}
}

// Checks returns every check in the order a certification runs them.
func Checks() []Check { return slices.Clone(registry) }

// Names lists the checks in the order a certification runs them.
func Names() []string {
	out := make([]string, len(registry))
	for i, c := range registry {
		out[i] = c.Name
	}
	return out
}

// Lookup returns the check called name; for a name it does not know, an
// error that lists the known ones.
func Lookup(name string) (Check, error) {
	for _, c := range registry {
		if c.Name == name {
			return c, nil
		}
	}
	known := Names()
	sort.Strings(known)
	return Check{}, fmt.Errorf("unknown check %q (known: %s)", name, strings.Join(known, ", "))
}

// Plan returns the scenarios of the named checks that apply to the policy
// and endpoint, each labelled with its check's name, and every named check
// with its rule, its facts and the reason it was skipped, if it was, the
// settings it names said in words (the caller's words for the fields of
// certify.Config; nil says them in Go's). An unknown name is an error
// listing the known ones. Under an ack-only policy (a webhook consumer)
// every step that delivers a request to be processed redelivers it until
// acknowledged, whatever the check.
func Plan(names []string, o Options, p idemcheck.Policy, e Endpoint, powers targets.Powers, words map[idemcheck.Field]idemcheck.Word) ([]Scenario, []idemcheck.PlannedCheck, error) {
	t := access{powers: powers != nil, noLink: NoDBLink(powers)}
	if d, ok := powers.(targets.Downstream); ok && len(d.ProviderNames()) > 0 {
		t.downstream = true
	}
	var scs []Scenario
	var plan []idemcheck.PlannedCheck
	for _, n := range names {
		c, err := Lookup(n)
		if err != nil {
			return nil, nil, err
		}
		pc := c.Planned(c.skip(p, e, t, words))
		if pc.Skip == "" {
			built := c.build(o, e, t)
			pc.Partial = partial(c, built, p, e, t).In(words)
			for i := range built {
				built[i].Check = c.Name
			}
			if p.AckOnly {
				built = senderRedelivers(built)
			}
			scs = append(scs, built...)
		}
		plan = append(plan, pc)
	}
	return scs, plan, nil
}

// partial is what a check built as scs cannot send to this target: bursts
// timed at the client, where the harness cannot hold their writes at the
// database link (a check that releases copies together), and whatever
// else the check's own partialWhy says.
func partial(c Check, scs []Scenario, p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
	var parts []idemcheck.Phrase
	together := slices.ContainsFunc(scs, func(sc Scenario) bool {
		return slices.ContainsFunc(sc.Steps, func(st Step) bool { return st.Send.together() && st.Attempts > 1 })
	})
	if why := needsDBLink(p, e, t); together && !why.IsZero() {
		more := ""
		if c.Name == idemcheck.CheckConcurrentBurst {
			more = ", and no burst wrote in turn (last writer wins)"
		}
		parts = append(parts, unless("the copies released together were timed at the client, not held at the database: a race window "+
			"narrower than their arrival spread can be missed%s; holding the writes %s", more, why))
	}
	if c.partialWhy != nil {
		if own := c.partialWhy(p, e, t); !own.IsZero() {
			parts = append(parts, own)
		}
	}
	switch len(parts) {
	case 0:
		return idemcheck.Phrase{}
	case 1:
		return parts[0]
	}
	return unless("%s; %s", parts[0], parts[1])
}

// NotAsked returns the checks plan does not name, in the order a
// certification runs them, each with its rule: a run header records them
// (Run.NotAsked), so the report's contract states every rule.
func NotAsked(plan []idemcheck.PlannedCheck) []idemcheck.PlannedCheck {
	var out []idemcheck.PlannedCheck
	for _, c := range registry {
		if !slices.ContainsFunc(plan, func(pc idemcheck.PlannedCheck) bool { return pc.Name == c.Name }) {
			out = append(out, c.Planned(""))
		}
	}
	return out
}

// keyInBody is why the checks about the key header do not apply to a
// policy that carries the key in the body (keyPointer).
const keyInBody = "the key travels in the body (key_pointer, a consumer's event id), not in a header: "

func keyPointer(p idemcheck.Policy, _ Endpoint, _ access) bool { return p.KeyPointer != "" }

// unless is idemcheck.Phrasef: why a check does not apply.
var unless = idemcheck.Phrasef

// one is the build of a check with one scenario.
func one(f func(Options) Scenario) func(Options, Endpoint, access) []Scenario {
	return func(o Options, _ Endpoint, _ access) []Scenario { return []Scenario{f(o)} }
}

// rounds is the build of a check with one scenario of Options.Rounds
// rounds; faultRounds, of Options.FaultRounds rounds.
func rounds(f func(rounds int) Scenario) func(Options, Endpoint, access) []Scenario {
	return one(func(o Options) Scenario { return f(o.Rounds) })
}

func faultRounds(f func(rounds int) Scenario) func(Options, Endpoint, access) []Scenario {
	return one(func(o Options) Scenario { return f(o.FaultRounds) })
}

// skipWhen is the skip of a check that does not apply where not holds: it
// returns why there, and the zero Phrase elsewhere.
func skipWhen(not func(idemcheck.Policy, Endpoint, access) bool, why idemcheck.Phrase) func(idemcheck.Policy, Endpoint, access) idemcheck.Phrase {
	return func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
		if not(p, e, t) {
			return why
		}
		return idemcheck.Phrase{}
	}
}

var noPowers = unless("needs control of the target's process and database link: let idemcheck start it (%s)", idemcheck.Setting("Powers"))

func needsPowers(_ idemcheck.Policy, _ Endpoint, t access) idemcheck.Phrase {
	if !t.powers {
		return noPowers
	}
	return idemcheck.Phrase{}
}

// needsDBLink is the skip of a check that faults the target's database
// link: it needs the powers, and a link idemcheck can fault (a
// PostgreSQL one), else it is skipped with the reason, never
// inconclusive: a correct service on another database can pass.
func needsDBLink(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
	if r := needsPowers(p, e, t); !r.IsZero() {
		return r
	}
	if t.noLink != "" {
		return unless("%s", t.noLink)
	}
	return idemcheck.Phrase{}
}

func needsPowersAndLease(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
	if r := needsDBLink(p, e, t); !r.IsZero() {
		return r
	}
	if p.Lease <= 0 {
		return unless("the policy names no lease (%s), so a slow takeover cannot be told from a stuck key", idemcheck.Setting("Policy.Lease"))
	}
	return idemcheck.Phrase{}
}

// registry is every check, in the order a certification runs them (and
// reports and the contract list them). Adding a check is adding its value
// here, with a test; nothing else needs to know the list.
var registry = []Check{
	{
		Name:             idemcheck.CheckConcurrentBurst,
		CountsExecutions: true,
		Rule: "IETF Idempotency-Key draft, section 2.7: a request that duplicates one still in progress gets 409 Conflict; " +
			"concurrent duplicates leave exactly one effect and every success describes the same resource.",
		// Two halves: the burst whose held writes go together (every
		// attempt reads before any writes: check-then-insert) and, where
		// the harness holds the target's database link, a burst whose held
		// writes go one at a time (each writes over what the one before
		// wrote and finished: last writer wins). A schedule is a Send
		// value, so the second half is a scenario like the first, and the
		// history records which schedule each burst had (Burst.InTurn).
		build: func(o Options, _ Endpoint, t access) []Scenario {
			scs := []Scenario{ConcurrentBurst(o.BurstSize, o.BurstRounds)}
			if t.powers && t.noLink == "" {
				scs = append(scs, ConcurrentBurstInTurn(o.BurstSize, o.BurstRounds))
			}
			return scs
		},
	},
	{
		Name:             idemcheck.CheckSequentialReplay,
		CountsExecutions: true,
		Rule: "IETF Idempotency-Key draft, section 2.6, and Stripe: a retry of a completed request returns the saved result " +
			"(same status, same body), never the in-progress status, and leaves no second effect.",
		build: func(o Options, _ Endpoint, _ access) []Scenario {
			if o.RetryWindow > 0 {
				return []Scenario{SequentialReplay(o.Rounds), LateReplay(1, o.RetryWindow)}
			}
			return []Scenario{SequentialReplay(o.Rounds)}
		},
	},
	{
		Name:             idemcheck.CheckLostReply,
		CountsExecutions: true,
		Rule: "RFC 9110 section 9.2.2 and the IETF Idempotency-Key draft: a client that lost the reply retries with the same key " +
			"and gets the original result; the effect happens once.",
		build: rounds(LostReply),
	},
	{
		Name: idemcheck.CheckPayloadMismatch,
		Rule: "IETF Idempotency-Key draft, section 2.7 (422), Stripe (idempotency_error), AWS (IdempotentParameterMismatch): " +
			"a key reused with a different payload is rejected, runs nothing, and leaves the original untouched.",
		build: rounds(PayloadMismatch),
		skipWhy: skipWhen(func(p idemcheck.Policy, _ Endpoint, _ access) bool { return p.MismatchStatus == 0 },
			unless("the policy says the target keeps no request fingerprint (mismatch_status 0): a reused key with another body is replayed by design")),
	},
	{
		Name: idemcheck.CheckReorderedBody,
		Rule: "IETF Idempotency-Key draft, section 2.4: the fingerprint is over the request's content, so the same JSON with " +
			"members reordered or white space changed is the same request and is replayed, not rejected.",
		build: rounds(ReorderedBody),
		skipWhy: skipWhen(func(_ idemcheck.Policy, e Endpoint, _ access) bool { return !e.JSONBody() },
			unless("the request body is not a JSON object, so it has no members to reorder")),
	},
	{
		Name: idemcheck.CheckCrossEndpoint,
		Rule: "IETF Idempotency-Key draft, sections 2.2 and 2.4: a key belongs to one request; sent to another method or path " +
			"it is never answered with the first endpoint's saved response.",
		build: rounds(CrossEndpoint),
		skipWhy: skipWhen(func(_ idemcheck.Policy, e Endpoint, _ access) bool { return e.Other == nil },
			unless("no second endpoint to send the key to (%s)", idemcheck.Setting("Endpoint.Other"))),
	},
	{
		Name: idemcheck.CheckDistinctKeys,
		Rule: "IETF Idempotency-Key draft, section 2.2: the key, not the payload, identifies an intent: the same body under " +
			"two keys is two intents with two effects.",
		build: rounds(DistinctKeys),
	},
	{
		Name: idemcheck.CheckMissingKey,
		Rule: "IETF Idempotency-Key draft, section 2.7: a request without the key on an endpoint that requires one gets 400 " +
			"and runs nothing.",
		build: rounds(MissingKey),
		skipWhy: skipWhen(func(p idemcheck.Policy, _ Endpoint, _ access) bool { return p.MissingKeyStatus == 0 },
			unless("the policy makes the key optional (missing_key_status 0): a request without it is an ordinary request")),
	},
	{
		Name: idemcheck.CheckFailedAttempt,
		Rule: "IETF Idempotency-Key draft, section 2.6, and Stripe: an attempt that fails inside the server leaves no partial " +
			"effect; its retry either gets the saved error (where errors are saved) or succeeds exactly once, and never finds the key stuck.",
		Faults:             true,
		FailureReleasesKey: true,
		build: func(o Options, e Endpoint, t access) []Scenario {
			// Two halves: a failure the harness causes (needs the database
			// link: the effect write cut before it ran, and cut after it
			// committed, unknown to the target) and a failure the target
			// answers (needs a failing body).
			var scs []Scenario
			if t.powers && t.noLink == "" {
				scs = append(scs, FailedAttempt(o.FaultRounds), FailedAfterCommit(o.FaultRounds))
				// Where effects land after the reply, the worker's write
				// fails after its commit too.
				if o.Settle > 0 {
					scs = append(scs, WorkerFailedAfterCommit(o.FaultRounds))
				}
			}
			if e.FailingBody != nil {
				scs = append(scs, SavedError(o.FaultRounds))
			}
			// A third: the target's own call to its payment provider
			// fails (needs a provider double).
			if t.downstream {
				scs = append(scs, ProviderFailure(o.FaultRounds))
			}
			return scs
		},
		skipWhy: func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
			if e.FailingBody != nil || (t.powers && t.downstream) {
				return idemcheck.Phrase{}
			}
			return needsDBLink(p, e, t)
		},
		partialWhy: func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
			why := needsDBLink(p, e, t)
			switch {
			case !why.IsZero():
				return unless("only failures the target answers were sent; no attempt failed inside the server on a cut "+
					"database link (before or after its commit), which %s", why)
			case e.FailingBody == nil:
				return unless("no attempt failed by the target's own logic (a declined payment): give a body it fails on (%s)",
					idemcheck.Setting("Endpoint.FailingBody"))
			}
			return idemcheck.Phrase{}
		},
	},
	// Without a lease the crash checks still run: a key still in progress
	// after the restart and a bounded wait is a stuck key, and the report
	// says the policy named no lease. Lease-fencing is about a lease that
	// ran out, so it needs one.
	{
		Name: idemcheck.CheckCrashLease,
		Rule: "IETF Idempotency-Key draft, section 2.6: a key claimed by a process that died becomes retakable within its lease; " +
			"the retry succeeds and the effect happens once.",
		Faults:  true,
		build:   faultRounds(CrashLease),
		skipWhy: needsDBLink,
	},
	{
		Name: idemcheck.CheckRestartReplay,
		Rule: "IETF Idempotency-Key draft, section 2.6: a retry of a completed request returns the saved result for as long as " +
			"the key is kept, whatever happened to the server in between: a restart (a deploy, a crash) must not lose the key, and the effect happens once.",
		build:   faultRounds(RestartReplay),
		skipWhy: needsPowers,
	},
	{
		Name: idemcheck.CheckCrashAfterCommit,
		Rule: "IETF Idempotency-Key draft, section 2.6: the key and its result are saved with the effect, atomically; a server " +
			"killed after its effect committed and before its reply reached the client answers the retry with a replay, never a second effect.",
		Faults: true,
		build: func(o Options, e Endpoint, t access) []Scenario {
			scs := faultRounds(CrashAfterCommit)(o, e, t)
			// Where effects land after the reply, the worker dies after
			// its effect committed too.
			if o.Settle > 0 {
				scs = append(scs, WorkerKilledAfterEffect(o.FaultRounds))
			}
			return scs
		},
		skipWhy: needsDBLink,
	},
	{
		Name: idemcheck.CheckInFlightRetry,
		Rule: "IETF Idempotency-Key draft, section 2.7: a retry that arrives while the first attempt is still running gets " +
			"409 Conflict (or waits and gets the replay); it never executes a second time.",
		build:   faultRounds(InFlightRetry),
		skipWhy: needsDBLink,
	},
	{
		Name:           idemcheck.CheckLeaseFencing,
		Rule:           "A lease needs fencing: an original that resumes after its lease was taken over must not commit a second effect.",
		Faults:         true,
		RetryTakesOver: true,
		build:          faultRounds(LeaseFencing),
		skipWhy:        needsPowersAndLease,
	},
	{
		Name: idemcheck.CheckCrossTenant,
		Rule: "IETF Idempotency-Key draft, section 2.2, and Stripe: keys are scoped to the client that sent them; one client's key " +
			"never replays another client's saved response.",
		build: rounds(CrossTenant),
		skipWhy: skipWhen(func(_ idemcheck.Policy, e Endpoint, _ access) bool { return len(e.Tenants) != 2 },
			unless("needs two clients' credentials (%s)", idemcheck.Setting("Tenants"))),
	},
	{
		Name: idemcheck.CheckWebhookRedeliver,
		Rule: "At-least-once delivery (webhooks, queues): a consumer may refuse a delivery with 5xx (or let it time out) " +
			"and the sender delivers it again, a bounded number of times; once the event is acknowledged (2xx) its effect is applied exactly once, " +
			"never skipped, so the consumer records the event id in the same transaction as the effect.",
		Faults: true,
		build: func(o Options, e Endpoint, t access) []Scenario {
			scs := []Scenario{WebhookRedelivery(o.Rounds, o.Redeliveries)}
			if t.powers {
				scs = append(scs, RedeliveryAfterFailure(o.FaultRounds))
			}
			if e.FailingBody != nil {
				scs = append(scs, RedeliveryAfterFailingBody(o.FaultRounds))
			}
			return scs
		},
		partialWhy: func(_ idemcheck.Policy, _ Endpoint, t access) idemcheck.Phrase {
			if !t.powers {
				return unless("no delivery failed inside the consumer on a cut database link: that %s", noPowers)
			}
			return idemcheck.Phrase{}
		},
		skipWhy: skipWhen(func(p idemcheck.Policy, _ Endpoint, _ access) bool { return p.KeyPointer == "" },
			unless("for webhook and queue consumers: the policy names no key_pointer (the event id in the body; %s)", idemcheck.Setting("Policy.KeyPointer"))),
	},
	{
		Name: idemcheck.CheckCorrectedRetry,
		Rule: "Stripe: nothing is saved when validation fails before execution, so a request refused with a 4xx and then corrected " +
			"under the same key is executed, once (the IETF Idempotency-Key draft, section 2.6, returns the result of a completed request, and a refused " +
			"request completed nothing); where the policy saves rejections (save_rejected), the correction gets the saved rejection or the mismatch status " +
			"and runs nothing.",
		build: rounds(CorrectedRetry),
		skipWhy: func(p idemcheck.Policy, e Endpoint, t access) idemcheck.Phrase {
			if keyPointer(p, e, t) {
				return unless(keyInBody + "a sender does not correct an event it delivered")
			}
			if e.InvalidBody == nil {
				if _, ok := BreakTypes(e.Body.Fill(idemcheck.Intent{ID: "ic-x-1", Key: "k", Seq: 1})); !ok {
					return unless("the request body is not a JSON object with members, so no invalid body can be derived from it (%s)",
						idemcheck.Setting("InvalidBody"))
				}
			}
			return idemcheck.Phrase{}
		},
	},
	{
		Name: idemcheck.CheckSignature,
		Rule: "Stripe, GitHub, Shopify, Slack and the Standard Webhooks specification: a consumer verifies each delivery's signature over " +
			"the exact body, and its timestamp within a tolerance (five minutes), before acting on it: a forged delivery and a replayed old one " +
			"are refused and run nothing. GitHub and Shopify sign no timestamp: only the forged delivery applies to them.",
		build: func(o Options, e Endpoint, _ access) []Scenario {
			return []Scenario{SignatureRefusals(o.Rounds, e.Sign != nil && e.Sign.SignsTime())}
		},
		skipWhy: skipWhen(func(_ idemcheck.Policy, e Endpoint, _ access) bool { return e.Sign == nil },
			unless("the requests are not signed (%s)", idemcheck.Setting("Sign"))),
	},
	{
		Name: idemcheck.CheckKeySyntax,
		Rule: "IETF Idempotency-Key draft, section 2.1: the key is a Structured Field string; Stripe: at most 255 characters. " +
			"A malformed key (empty, too long, a list) gets the policy's invalid-key status and runs nothing; two valid long keys that differ only past " +
			"their 64th character are two intents with two effects, never one key cut short.",
		build: func(o Options, _ Endpoint, _ access) []Scenario {
			// Two halves: malformed keys where the policy has a rule for them,
			// and two long keys, which every key store must keep apart.
			return []Scenario{MalformedKeys(1), LongKeys(o.Rounds)}
		},
		skipWhy: skipWhen(keyPointer, unless(keyInBody+"the header's syntax does not apply")),
	},
}

// NoDBLink says why the target's database link cannot be faulted (there
// is none: targets.NoDBLink), "" when it can or there are no powers.
func NoDBLink(p targets.Powers) string {
	if nl, ok := p.(targets.NoDBLink); ok {
		return nl.NoDBLink()
	}
	return ""
}

// FaultUses maps each fault a check sends to the checks that send it,
// in registry order: each check built for a target with powers and an
// endpoint with every optional part, so every half of it is seen.
func FaultUses() map[string][]string {
	failing, invalid := idemcheck.MustTemplate(`{"fail":true}`), idemcheck.MustTemplate(`{"a":1}`)
	e := Endpoint{
		Method: "POST", Path: idemcheck.MustTemplate("/"), Body: idemcheck.MustTemplate(`{"a":"{{intent}}"}`),
		FailingBody: &failing, InvalidBody: &invalid,
		Other:   &OtherEndpoint{Method: "POST", Path: idemcheck.MustTemplate("/other")},
		Tenants: []Header{{Name: "Authorization", Value: idemcheck.MustTemplate("A")}, {Name: "Authorization", Value: idemcheck.MustTemplate("B")}},
	}
	o := Defaults
	o.RetryWindow = time.Second
	uses := map[string][]string{}
	for _, c := range registry {
		for _, sc := range c.build(o, e, access{powers: true}) {
			for _, st := range sc.Steps {
				for _, f := range []faults.Fault{st.Fault, st.DBFault} {
					if !f.IsNone() && !slices.Contains(uses[f.Name], c.Name) {
						uses[f.Name] = append(uses[f.Name], c.Name)
					}
				}
			}
		}
	}
	return uses
}
