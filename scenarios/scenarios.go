// Package scenarios holds the checks and says what they send to a target,
// as values. A check is one value (Check: its name, its contract rule,
// whether it breaks the target on purpose, its scenarios and when it does
// not apply) in one ordered, closed registry (Checks, Lookup, Names); Plan
// records each planned check's rule and fault flag in the run's plan, so
// the checker reads them from the history. A scenario is a value too (how
// many rounds, and per round the steps of attempts of one intent), and a
// step says what it does in a few typed values: Send (one after another,
// released together, or held at a statement), DBFaultAt (which write its
// database fault acts on) and Then (a redelivery, a kill and restart).
//
// Whether a check applies to a target, and all of it, depends on what the
// harness may do to the target; Plan reads that from the target's
// targets.Powers as plain facts (a database link to fault, provider
// doubles), so the registry needs nothing of the runner.
//
// The package sends nothing: package runner sends the scenarios (a
// certification) or a paced load (a soak), recording every attempt in a
// History, and imports this one; this package imports no runner, no
// checker (assert), no report and no command.
package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// Step is one part of a round: Attempts sends of the round's intent (of
// its Variant, when set), which go out as Send says, each through Fault on
// the client link, DBFault on the database link (at the write DBFaultAt
// names) and ProviderFaults on the provider doubles; Then says what the
// step does once they were answered. A Step with only Attempts set sends
// that many clean attempts, one after another.
type Step struct {
	Attempts int
	// Send is how the attempts go out: one after another, released
	// together, or held at a statement while something is done to the
	// target (a hold and the step after it, its retry, are one piece).
	Send Send
	// Variant, when set, sends a changed copy of the intent's request.
	Variant idemcheck.Variant
	// DelayBefore waits before the step: a client's retry after a while.
	DelayBefore time.Duration
	// Fault is applied on the client link to each attempt.
	Fault faults.Fault
	// DBFault is armed on the target's database link while the step runs;
	// DBFaultAt says which of the attempt's writes it acts on (by default
	// the statement its own match and nth name).
	DBFault   faults.Fault
	DBFaultAt DBWrite
	// ProviderFaults are armed on the target's provider doubles, one a
	// round in turn (round r has the ((r-1) mod len)th), for each of the
	// step's attempts: the first call the target makes to one is broken.
	ProviderFaults []provider.Fault
	// Then is what the step does once its attempts were answered.
	Then Then
}

// Send is how a step's attempts go out; a round dispatches on it: the
// sends one after another, the bursts, and the holds, each of which runs
// with the step after it.
type Send int

const (
	// OneByOne sends each attempt once the one before was answered, its
	// faults armed for it alone.
	OneByOne Send = iota
	// RetryWhileInProgress is OneByOne, each attempt sent again while the
	// answer is the policy's in-progress status, up to the policy's lease
	// plus LeaseMargin.
	RetryWhileInProgress
	// Together releases the attempts at the same instant: a burst. Where
	// the harness holds the target's database link (targets.Scheduler) and
	// the step has no DBFault, the burst's first writes are held there
	// and let go together (the write barrier); elsewhere the burst is
	// timed at the client.
	Together
	// TogetherInTurn is Together with the held writes let go one at a
	// time, not together (faults.BarrierOptions.InTurn). Without the write
	// barrier it is a timed burst like Together.
	TogetherInTurn

	// The holds follow: DBFault (a db-hold) holds the attempt's
	// statement, the harness does something to the target at that moment,
	// and the next step is the retry that meets it, sent as the hold's
	// choreography says. A hold is a one-attempt step with a retry step
	// after it.

	// HoldCrash kills the target between its claim and its commit, drops
	// the held statement, restarts the target and retries while the key is
	// in progress.
	HoldCrash
	// HoldStall freezes the attempt past the lease while a retry is sent
	// (which may take the key over), then lets it resume.
	HoldStall
	// HoldKillAfterCommit lets the held effect write through and kills
	// the target at whichever comes first: the database's answer to it,
	// held on the database link before the target receives it, or its
	// reply's first byte on the client link (held there, so the client
	// receives nothing). The effect has committed; the reply never
	// arrives; the target restarts and the next step retries. Without a
	// DBFault (no database link to act on) the kill waits for the reply.
	HoldKillAfterCommit
	// HoldInFlight sends the next step's attempt while the held one waits
	// inside the target, waits for that retry's answer (or for it to wait
	// on a lock in the database, or a bound), then lets the held one
	// finish.
	HoldInFlight
)

var sendNames = [...]string{"one-by-one", "retry-while-in-progress", "together", "together-in-turn",
	"hold-crash", "hold-stall", "hold-kill-after-commit", "hold-in-flight"}

// String names the send, as test failures and errors show it.
func (s Send) String() string {
	if s < 0 || int(s) >= len(sendNames) {
		return fmt.Sprintf("Send(%d)", int(s))
	}
	return sendNames[s]
}

// together reports whether s releases the step's attempts at once.
func (s Send) together() bool { return s == Together || s == TogetherInTurn }

// Holds reports whether s holds the attempt's statement, the next step
// being its retry.
func (s Send) Holds() bool { return s >= HoldCrash && s <= HoldInFlight }

// DBWrite is which of an attempt's writes a step's DBFault acts on. A
// handler's writes come in order (a key's claim, the work's COMMIT, the
// key's finish), and the moment before each is a window a failure or a
// crash can fall in; how many there are is learnt from clean attempts.
type DBWrite int

const (
	// FaultsOwnWrite is the statement DBFault's own match and nth name,
	// as the step gives them.
	FaultsOwnWrite DBWrite = iota
	// NthByRound makes DBFault (a db-cut or db-hold) act on another of
	// the attempt's effect writes each round: the last one first (as many
	// as clean attempts were seen to make), then the one before, and so
	// on; the first while none was counted. A target that claims its key,
	// commits its work and finishes the key in separate writes has a
	// window before each, and each round tries one. With an explicit
	// match, and for HoldKillAfterCommit, rounds alternate the 1st and 2nd
	// match.
	NthByRound
	// LastWrite makes DBFault (a db-cut, db-cut-after or db-hold) act on
	// the attempt's last effect write (as many as clean attempts were seen
	// to make; the first while none was counted): the one that makes its
	// effect durable.
	LastWrite
	// WorkStart is for a DBFault that acts at the BEGIN of the attempt's
	// work transaction: when clean attempts were seen to end with a write
	// that commits on its own (a handler that never opens a transaction),
	// it acts instead on the attempt's last effect write, the moment after
	// the key is claimed and before the work is written.
	WorkStart
	// WorkerWrite makes DBFault (a db-cut-after or db-hold) act on the
	// intent's first effect write after the attempt's own (as many as
	// clean attempts were seen to make): where the attempt is answered
	// accepted (202) and its effect is written later, the write of the
	// background worker or job that makes it. The fault stays armed past
	// the accepted reply until it acts or the settle bound ends; an
	// attempt not answered accepted has no such write, and the fault is
	// disarmed with its reply.
	WorkerWrite
)

// Then is what a step does once its attempts were answered: nothing (the
// zero Then), or RedeliverUntilAck, KillAndRestart, or both, in that
// order.
type Then uint8

const (
	// RedeliverUntilAck makes the step behave as a webhook sender: while
	// none of the step's attempts is acknowledged (answered with one of
	// the policy's success statuses; a 5xx, another status or no reply at
	// all is not an acknowledgement), the same request is delivered again,
	// one at a time through the clean link, after a backoff that doubles
	// (see Redelivery), at most MaxRedeliveries times. Every delivery is
	// an attempt; redeliveries carry their number in Attempt.Redelivery.
	// A hold ignores its own (its retry step's is honoured).
	RedeliverUntilAck Then = 1 << iota
	// KillAndRestart kills the target once the step's attempts have been
	// answered, and starts it again before the next step: the retry then
	// meets a fresh process, with nothing left in its memory.
	KillAndRestart
)

// Has reports whether t includes every action of u.
func (t Then) Has(u Then) bool { return t&u == u }

// MaxRedeliveries bounds the redeliveries of an unacknowledged step: a
// failed first delivery is delivered at most MaxRedeliveries+1 times in
// all, as a webhook sender gives up on an event after a few tries.
const MaxRedeliveries = 4

// LeaseMargin is how long past the policy's lease a retry keeps trying
// before a key still in progress counts as stuck.
const LeaseMargin = 2 * time.Second

// RedeliveryBackoff is the sender's first wait before a redelivery; each
// later wait doubles it: 50, 100, 200 and 400 ms.
const RedeliveryBackoff = 50 * time.Millisecond

// Redelivery returns the wait before the nth redelivery (from 1) under p.
// The schedule is fixed, so a run can be replayed and reasoned about:
// RedeliveryBackoff doubling, stretched where the policy names a lease so
// that the last redelivery comes after the lease and LeaseMargin have
// passed. Real senders retry for hours; a consumer that holds a dead
// delivery's claim until its lease ends is not stuck.
func Redelivery(p idemcheck.Policy, n int) time.Duration {
	first := RedeliveryBackoff
	if p.Lease > 0 {
		// The waits sum to first * (2^MaxRedeliveries - 1).
		first = max(first, (p.Lease+LeaseMargin)/(1<<MaxRedeliveries-1)+time.Millisecond)
	}
	return first << (n - 1)
}

// Names of the harness's kills, as attempts record them in Fault (joined
// with the link faults they went through, as "kill-at-commit+db-hold:...").
// An attempt that carries one of them counts only when the history holds
// the matching target-killed event.
const (
	// KillAtCommit: killed while its COMMIT was held (crash-lease).
	KillAtCommit = "kill-at-commit"
	// KillAfterCommit: killed after its COMMIT went through and before its
	// reply reached the client (crash-after-commit).
	KillAfterCommit = "kill-after-commit"
	// KillAfterReply: answered, then the target was killed and restarted
	// before the retry (restart-replay).
	KillAfterReply = "kill-after-reply"
)

// AnyStatement matches every statement: the hold that catches whatever a
// target sends next.
const AnyStatement = `(?s).`

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
	// Settle, when set, is how long at most effects are waited for before
	// they are judged: each intent's count is polled until it stays the
	// same for runner.SettleQuiet(Settle) (runner.Runner.Settle). For a target whose
	// effects land after the reply (202 Accepted, a background worker).
	Settle time.Duration
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

// Validate names the option that is out of range, as a Field of
// certify.Config (Options.BurstSize), which each front end says in its own
// words.
func (o Options) Validate() error {
	for _, r := range []struct {
		field  idemcheck.Field
		v      int
		lo, hi int
	}{
		{"Options.BurstSize", o.BurstSize, 2, MaxBurstSize},
		{"Options.BurstRounds", o.BurstRounds, 1, MaxRounds},
		{"Options.Rounds", o.Rounds, 1, MaxRounds},
		{"Options.FaultRounds", o.FaultRounds, 1, MaxRounds},
		{"Options.Redeliveries", o.Redeliveries, 2, MaxBurstSize},
	} {
		if r.v < r.lo || r.v > r.hi {
			return idemcheck.Fieldf(idemcheck.ExitUsage, r.field, "%s %d is out of range: use %d to %d", r.field, r.v, r.lo, r.hi)
		}
	}
	if o.Settle < 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Options.Settle", "%s %v must not be negative", idemcheck.Field("Options.Settle"), o.Settle)
	}
	if o.RetryWindow < 0 {
		return idemcheck.Fieldf(idemcheck.ExitUsage, "Options.RetryWindow", "%s %v must not be negative", idemcheck.Field("Options.RetryWindow"), o.RetryWindow)
	}
	return nil
}

// ConcurrentBurst sends n attempts of one intent released together, for rounds rounds.
func ConcurrentBurst(n, rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckConcurrentBurst, Rounds: rounds, Steps: []Step{{Attempts: n, Send: Together}}}
}

// InTurnAttempts is how many attempts a burst in turn sends at most: two
// show a write that overwrites another, and each more adds a turn (an idle
// settle, 10 ms or more) to the round.
const InTurnAttempts = 4

// ConcurrentBurstInTurn sends min(n, InTurnAttempts) attempts of one
// intent released together, for rounds rounds, with their first writes
// held at the database link and released one at a time (TogetherInTurn): the
// second half of concurrent-burst, for a target whose link the harness
// holds.
func ConcurrentBurstInTurn(n, rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckConcurrentBurst, Rounds: rounds,
		Steps: []Step{{Attempts: min(n, InTurnAttempts), Send: TogetherInTurn}}}
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

// SignatureRefusals sends the intent signed with another secret, then,
// for a scheme that signs a timestamp (stale), signed StaleAge ago: a
// consumer that verifies signatures refuses both, and neither leaves an
// effect. A scheme that signs no timestamp (github, shopify) has no stale
// delivery to send: signed an hour ago, it is the same bytes as now.
func SignatureRefusals(rounds int, stale bool) Scenario {
	s := Scenario{Check: idemcheck.CheckSignature, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Variant: idemcheck.BadSignature},
	}}
	if stale {
		s.Steps = append(s.Steps, Step{Attempts: 1, Variant: idemcheck.StaleSignature})
	}
	return s
}

// FailedAttempt cuts the target's database link at one of its effect
// writes (a COMMIT, or a write that commits on its own; another each
// round), so the first attempt dies inside the server, then retries.
func FailedAttempt(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCut("", 1), DBFaultAt: NthByRound},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// FailedAfterCommit lets the target's last effect write (its work's COMMIT,
// or a write that commits on its own) reach the database and cuts the
// database link once the database has answered it, before the answer
// reaches the target: the effect committed, and the target sees a
// connection error, as when a connection drops at the wrong moment in
// production. Then it retries. A target that saves the key with the effect
// replays; one that takes the error for "nothing happened" and releases
// its key (an autocommitting handler that reports the error to an
// idempotency middleware) executes the retry again: a second effect. A
// target whose process dies of the dropped connection loses what it kept
// in memory the same way.
func FailedAfterCommit(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCutAfter("", 1), DBFaultAt: LastWrite},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// WorkerFailedAfterCommit is FailedAfterCommit for effects that land
// after the reply: the attempt is answered accepted, and the write that
// makes its effect later (a background worker's or a job's: the intent's
// first effect write after the attempt's own, WorkerWrite) reaches the
// database, which commits it; the link is cut before its answer reaches
// the worker. The worker sees a connection error, as if nothing happened,
// and its queue runs the job again. Then the client retries. A worker
// whose effect is keyed (it finds the effect made and writes nothing)
// leaves one effect; one whose effect is not keyed makes a second.
func WorkerFailedAfterCommit(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCutAfter("", 1), DBFaultAt: WorkerWrite},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// ProviderFailure breaks the target's first call to its payment provider
// double, each round another way (provider.Faults: the charge made and its
// reply cut, the reply held past the target's timeout, a 503), and then
// retries. However the target deals with it (a retry of the call with the
// same key, a reconciliation, an error to the client and the client's
// retry), the intent must be charged once.
func ProviderFailure(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckFailedAttempt, Rounds: max(rounds, len(provider.Faults())), Steps: []Step{
		{Attempts: 1, ProviderFaults: provider.Faults()},
		{Attempts: 1, Send: RetryWhileInProgress},
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
		{Attempts: 1, Send: HoldCrash, DBFault: faults.DBHold("", 1), DBFaultAt: NthByRound},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// RestartReplay completes an intent, kills and restarts the target, and
// retries: a key store that lives in the process's memory is gone, and the
// retry runs the work a second time.
func RestartReplay(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckRestartReplay, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Then: KillAndRestart},
		{Attempts: 1},
	}}
}

// CrashAfterCommit kills the target after the first attempt's effect
// committed and before its reply reached the client, restarts it, and
// retries while the key is in progress, up to the lease plus a margin. The
// round's effect write (a COMMIT or an autocommitted write; rounds
// alternate between the attempt's first and second) is let through, and
// the kill lands at the first of: the database's answer to it, held on the
// database link before the target receives it, or the reply's first byte,
// held on the client link. At the answer the write has committed and the
// target has done nothing after it, wherever it keeps its keys: a key
// saved apart from the effect (in memory, in Redis, in a second
// transaction, by a write after the COMMIT) is then lost or left running,
// and the retry executes again. It runs at least two rounds, one per
// write.
func CrashAfterCommit(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCrashAfterCommit, Rounds: max(rounds, 2), Steps: []Step{
		{Attempts: 1, Send: HoldKillAfterCommit, DBFault: faults.DBHold("", 1), DBFaultAt: NthByRound},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// WorkerKilledAfterEffect is CrashAfterCommit for effects that land after
// the reply: the attempt is answered accepted, the worker's write that
// makes its effect (WorkerWrite) is let through, and the target is killed
// once the database has answered it, before the worker learnt it: the
// effect committed and its job was never marked done. The target
// restarts, and the client retries: the retry replays, and the effect is
// there once (a queue that runs the dead worker's job again must find it
// made).
func WorkerKilledAfterEffect(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCrashAfterCommit, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Send: HoldKillAfterCommit, DBFault: faults.DBHold("", 1), DBFaultAt: WorkerWrite},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// InFlightRetry holds the first attempt at its database link (its COMMIT)
// and sends the retry while it is held there: the retry must get the
// in-progress status or wait for the replay, and the first must then
// finish, with one effect in all.
func InFlightRetry(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckInFlightRetry, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Send: HoldInFlight, DBFault: faults.DBHold("", 1)},
		{Attempts: 1},
	}}
}

// BeginPattern matches the statement that opens a transaction.
const BeginPattern = `(?i)^\s*(BEGIN|START\s+TRANSACTION)\b`

// LeaseFencing freezes the first attempt when it opens its work
// transaction (after the claim, before any work) until past the lease,
// sends a retry that may take the key over and finish, lets the first
// resume, and then replays the intent once more to see what stands. A
// target that autocommits (no BEGIN ever) is frozen at its last effect
// write, its work's, instead (WorkStart).
func LeaseFencing(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckLeaseFencing, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Send: HoldStall, DBFault: faults.DBHold(BeginPattern, 1), DBFaultAt: WorkStart},
		{Attempts: 1},
		{Attempts: 1, Send: RetryWhileInProgress},
	}}
}

// access is what the harness may do to the target, as the planner knows
// it: whether it holds powers over it (targets.Powers), derived from the
// ones Plan is given.
type access struct {
	// powers: the harness started the target and owns its database link.
	powers bool
	// downstream: the harness serves the target provider doubles.
	downstream bool
	// noLink: why the harness cannot fault the target's database link
	// though it started the target (targets.NoDBLink); "" when it can.
	noLink string
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

// WebhookRedelivery delivers one event n times at once; while no copy is
// acknowledged, the sender delivers it again (RedeliverUntilAck).
func WebhookRedelivery(rounds, n int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds,
		Steps: []Step{{Attempts: n, Send: Together, Then: RedeliverUntilAck}}}
}

// RedeliveryAfterFailure delivers an event whose first delivery fails
// inside the consumer (its database link cut at one of its effect writes,
// another each round); the sender then delivers it again until it is
// acknowledged: the effect must then have happened, once.
func RedeliveryAfterFailure(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds, Steps: []Step{
		{Attempts: 1, DBFault: faults.DBCut("", 1), DBFaultAt: NthByRound, Then: RedeliverUntilAck},
	}}
}

// RedeliveryAfterFailingBody delivers the endpoint's failing body (an event
// whose first processing fails), then delivers it again until it is
// acknowledged.
func RedeliveryAfterFailingBody(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckWebhookRedeliver, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Variant: idemcheck.Failing, Then: RedeliverUntilAck},
	}}
}

// senderRedelivers marks every step of scs that delivers a request to be
// processed with RedeliverUntilAck: under an ack-only policy the client is
// a webhook sender whatever the check, and a sender delivers again what
// was not acknowledged. Holds keep their own choreography.
func senderRedelivers(scs []Scenario) []Scenario {
	out := make([]Scenario, len(scs))
	for i, sc := range scs {
		sc.Steps = slices.Clone(sc.Steps)
		for j := range sc.Steps {
			if st := &sc.Steps[j]; !st.Send.Holds() && st.Variant.Delivers() {
				st.Then |= RedeliverUntilAck
			}
		}
		out[i] = sc
	}
	return out
}

// CorrectedRetry sends a body the target must reject (a validation error)
// under a fresh key, then the intent's own body, its correction, under the
// same key.
func CorrectedRetry(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckCorrectedRetry, Rounds: rounds,
		Steps: []Step{{Attempts: 1, Variant: idemcheck.InvalidBody}, {Attempts: 1, Variant: idemcheck.Corrected}}}
}

// MalformedKeys sends the intent's request under an empty key, a key over
// idemcheck.MaxKeyLen characters, and a key holding a comma: each must be
// refused with the policy's invalid-key status, with nothing executed.
func MalformedKeys(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckKeySyntax, Rounds: rounds, Steps: []Step{
		{Attempts: 1, Variant: idemcheck.EmptyKey},
		{Attempts: 1, Variant: idemcheck.OverlongKey},
		{Attempts: 1, Variant: idemcheck.ListKey},
	}}
}

// LongKeys sends the intent's request under a long valid key, then under a
// second one that differs only in its last character: two intents with the
// same body, both of which must execute.
func LongKeys(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckKeySyntax, Rounds: rounds,
		Steps: []Step{{Attempts: 1, Variant: idemcheck.LongKey}, {Attempts: 1, Variant: idemcheck.LongKeyTwin}}}
}
