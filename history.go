package idemcheck

import (
	"net/http"
	"slices"
	"time"
)

// Intent is one logical client action, such as pressing Pay once. It owns one
// idempotency key; every Attempt of the intent sends that key.
type Intent struct {
	// ID is unique per intent and fills the {{intent}} template, so bodies
	// and effect SQL can name what this intent created.
	ID string `json:"id"`
	// Key is the idempotency key, a UUID v4 by default as the IETF draft
	// recommends; it fills {{key}}.
	Key string `json:"key"`
	// Seq numbers intents from 1 in the order the run made them; it fills {{seq}}.
	Seq int `json:"seq"`
	// Check names the check whose scenario made the intent.
	Check string `json:"check"`
	// Round is the scenario round, from 1.
	Round int `json:"round"`
}

// Outcome says what is known about an attempt's effect, in the sense of
// Jepsen's ok, fail and info.
type Outcome string

const (
	// Replied: a complete HTTP reply arrived; its status tells the rest.
	Replied Outcome = "replied"
	// NotSent: the request never reached the server (connection refused
	// or failed before the whole request was written), so it had no effect.
	NotSent Outcome = "not-sent"
	// Unknown: the request was sent but no complete reply came back. It may
	// or may not have taken effect: exactly the case a client must retry.
	Unknown Outcome = "unknown"
)

// Attempt is one send of an intent. The harness owns every send, so every
// request that left the client is one Attempt and none is resent behind the
// history's back.
type Attempt struct {
	// ID numbers attempts from 1 in the order they were started.
	ID     int    `json:"id"`
	Intent string `json:"intent"`
	Key    string `json:"key,omitempty"`
	Check  string `json:"check"`
	Round  int    `json:"round"`
	// Step is the scenario step that sent it, from 1: in sequential-replay,
	// step 1 is the original and step 2 the replay.
	Step int `json:"step"`
	// Variant says how this attempt's request differs from the intent's
	// original; empty for the original itself.
	Variant Variant `json:"variant,omitempty"`
	// Burst is set when the attempt was released together with others; all
	// attempts of one burst share the number.
	Burst int `json:"burst,omitempty"`
	// Redelivery numbers, from 1, the deliveries a webhook sender made
	// again because the step's earlier ones were not acknowledged (a 5xx,
	// another status, no reply); 0 for the step's own attempts.
	Redelivery int `json:"redelivery,omitempty"`

	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
	// Fingerprint is the harness's own hash of method, path and canonical
	// body, so a reader can see which attempts sent the same request.
	Fingerprint string `json:"fingerprint"`
	// Fault is the name of the fault applied to this attempt's link, if any.
	Fault string `json:"fault,omitempty"`
	// FaultLinks are the links Fault acted on (LinkClient, LinkDB), client
	// link first: what kind of fault it was, so a reader never has to
	// guess from its name. A kill alone acts on no link.
	FaultLinks []string `json:"fault_links,omitempty"`

	Start     time.Time `json:"start"`
	FirstByte time.Time `json:"first_byte,omitzero"`
	End       time.Time `json:"end"`

	Outcome    Outcome     `json:"outcome"`
	Status     int         `json:"status,omitempty"`
	RespHeader http.Header `json:"resp_header,omitempty"`
	RespBody   string      `json:"resp_body,omitempty"`
	// Error is the transport error of an attempt without a complete reply.
	Error string `json:"error,omitempty"`
}

// Links a fault acts on.
const (
	// LinkClient is the link between the harness and the target.
	LinkClient = "client"
	// LinkDB is the link between the target and its database: a fault
	// there breaks the attempt inside the server, on purpose.
	LinkDB = "db"
	// LinkProvider is the link between the target and a downstream
	// provider double: a fault there breaks the target's own call.
	LinkProvider = "provider"
)

// FaultOn reports whether the attempt went through a fault on link.
func (a Attempt) FaultOn(link string) bool { return slices.Contains(a.FaultLinks, link) }

// Overlaps reports whether two attempts were in flight at the same time.
func (a Attempt) Overlaps(b Attempt) bool {
	return a.Start.Before(b.End) && b.Start.Before(a.End)
}

// Observation is what the database says about one intent after its attempts
// ended: how many effects (rows, charges, messages) the intent left behind,
// counted with the suite's effect SQL.
type Observation struct {
	Intent  string `json:"intent"`
	Check   string `json:"check"`
	Effects int64  `json:"effects"`
	// Query is the effect SQL with its bound arguments, so a reviewer can
	// run it again by hand.
	Query string   `json:"query"`
	Args  []string `json:"args,omitempty"`
	// Via says where the count came from: ViaHTTP for a read-back through
	// the API; empty for the database.
	Via string `json:"via,omitempty"`
	// Keys, for an effect query stated at the grain of a key (one of its
	// arguments is {{key}}) and an intent that sent several keys, are the
	// counts of each key: the query ran once per key, and Effects is their
	// sum, what the intent as a whole left. Query and Args then are the
	// first key's. Empty when the query ran once.
	Keys []KeyEffects `json:"keys,omitempty"`
	// At is when the count was taken (the last poll's, for a settled
	// one); zero in a history written before counts carried their time.
	At time.Time `json:"at,omitzero"`
	// Settle, when set, says the count was taken once the intent's
	// effects had settled (--settle): polled until it stayed the same
	// for a quiet period, within a bound.
	Settle *Settle `json:"settle,omitempty"`
	// Recount marks the count taken again after the run's last check,
	// for late duplicates: not the count the intent is judged by (see
	// History.ObservationsByIntent and History.RecountsByIntent).
	Recount bool `json:"recount,omitempty"`
	// Judged and JudgedAt, on a soak's recount, are the count its intent
	// was judged by and when that count was taken: a soak keeps no intent
	// in memory, so its recount carries what it is compared with.
	Judged   *int64    `json:"judged,omitempty"`
	JudgedAt time.Time `json:"judged_at,omitzero"`
	// Accepted, on a soak's count, says one of the intent's attempts was
	// answered with an accepted status (Policy.AcceptedStatuses): its
	// effect may land after the reply. A soak's history is judged one
	// record at a time, so the count says it itself.
	Accepted bool `json:"accepted,omitempty"`
}

// Settle is what settling one intent's effect count did: effects that
// land after the reply (a 202 Accepted, a background worker, a queue) are
// counted once the count has stayed the same for Quiet, polling for at
// most Bound.
type Settle struct {
	// Bound and Quiet are the wait's limit and its quiet period.
	Bound time.Duration `json:"bound_ns"`
	Quiet time.Duration `json:"quiet_ns"`
	// Waited is how long the polls took, from the first to the last;
	// Polls how many counts were taken.
	Waited time.Duration `json:"waited_ns"`
	Polls  int           `json:"polls"`
	// Settled says the count stayed the same for Quiet before Bound ran
	// out. False: it was still changing at the bound (its first and last
	// counts are in First and the observation's Effects), and the intent
	// cannot be judged.
	Settled bool  `json:"settled"`
	First   int64 `json:"first"`
	// Awaited: the intent was answered with an accepted status (a 202),
	// so a count of zero was not taken as settled: the polls went on for
	// its first effect. Unsettled and still zero at the bound, the work
	// is pending or lost, and nothing tells which.
	Awaited bool `json:"awaited,omitempty"`
	// Changes is how many times the count changed while it was polled.
	Changes int `json:"changes,omitempty"`
	// Await, with Awaited, is how many effects the polls waited for: one
	// for each key an attempt of the intent was answered accepted under
	// (two keys accepted are two operations, each owing its effect, and
	// a queue may run the second well after the first). Zero in histories
	// written before it was recorded: one was awaited.
	Await int `json:"await,omitempty"`
	// Operations are the intent's accepted operations as their status
	// monitors last told them (Policy.StatusPointer), one per accepted
	// attempt; the count settled only once all were over. On a soak's
	// recount (counted during the load), the monitor was read once, with
	// the recount: Polls is 1 and Settled says the operation was over.
	Operations []Operation `json:"operations,omitempty"`
}

// Operation is what an accepted attempt's status monitor said while its
// intent's effects settled.
type Operation struct {
	// Attempt is the accepted attempt; URL the monitor's path (and query)
	// on the target, secrets hidden.
	Attempt int    `json:"attempt"`
	URL     string `json:"url"`
	// State is the last state read at the policy's StatusPointer, Polls
	// how many reads were taken, and Over is OperationDone, OperationFailed
	// or "" (still pending when the bound ran out, or never readable).
	State string `json:"state,omitempty"`
	Polls int    `json:"polls"`
	Over  string `json:"over,omitempty"`
	// Error says why the monitor could not be read (no Location, another
	// origin, a non-2xx answer, no state at the pointer); the last one.
	Error string `json:"error,omitempty"`
}

// The values of Operation.Over.
const (
	OperationDone   = "done"
	OperationFailed = "failed"
)

// Unsettled reports whether the observation's count was still changing
// when its settle bound ran out.
func (o Observation) Unsettled() bool { return o.Settle != nil && !o.Settle.Settled }

// KeyEffects is what an effect query stated at the grain of a key counted
// for one of an intent's keys.
type KeyEffects struct {
	Key     string `json:"key"`
	Effects int64  `json:"effects"`
	// Query is what counted this key where it is not the observation's
	// Query (a read-back, whose path holds the key); Args are the bound
	// arguments of the key's run.
	Query string   `json:"query,omitempty"`
	Args  []string `json:"args,omitempty"`
}

// ViaHTTP marks an effect count read back through the API (a GET).
const ViaHTTP = "http"

// Burst records one release of attempts sent together.
type Burst struct {
	ID       int `json:"id"`
	Attempts int `json:"attempts"`
	// Intent, Check and Round say whose burst it was. A round whose burst
	// was loose is repeated with a fresh intent: several bursts then share
	// a check and round, and every one of them stays in the history.
	Intent string `json:"intent,omitempty"`
	Check  string `json:"check,omitempty"`
	Round  int    `json:"round,omitempty"`
	// Spread is the client-side release spread: the time between the first
	// final write's start and the last final write's end (over HTTP/1.1 a
	// final byte per connection, over HTTP/2 one write per lane).
	Spread time.Duration `json:"spread_ns"`
	// Protocol is what the burst went out with: "http1" or "h2".
	Protocol string `json:"protocol,omitempty"`
	// Fallback says why a burst meant for HTTP/2 went out over HTTP/1.1.
	Fallback string `json:"fallback,omitempty"`
	// Loose: the burst's Spread was over LooseSpread(Attempts) when it was
	// sent, too wide to say which race windows it would catch, so its round
	// was repeated (unless it was scheduled: see Held). Its attempts still
	// count: a duplicate it caused is a duplicate.
	Loose bool `json:"loose,omitempty"`
	// Scheduled: the target's database link held the burst's writes (a
	// write barrier: each connection's first write held until every attempt
	// had reached its own, then all released together). False: the burst
	// was timed only, and races narrower than its spread may be missed.
	Scheduled bool `json:"scheduled,omitempty"`
	// Held is how many writes the barrier held and released together. With
	// two or more, every one of those attempts had done what came before
	// its first write (its read of the key) before any of them wrote: the
	// round's race was scheduled, whatever the spread.
	Held int `json:"held,omitempty"`
	// Release is why the held writes were released (ReleaseAllWrites, ...).
	Release string `json:"release,omitempty"`
	// InTurn: the held writes were released one at a time, not together,
	// the last held first, each once the database had answered the one
	// before and the target had gone quiet; the write-held events' Order is
	// the order they went in. Every attempt then wrote over what the ones
	// before it had written and finished: a handler that overwrites (last
	// writer wins) shows it.
	InTurn bool `json:"in_turn,omitempty"`
	// PrefixWait is, over HTTP/1.1, how long the burst waited between its
	// last prefix written and its release, for the prefixes to reach the
	// server: until the kernel reported each acknowledged (PrefixAcked)
	// and the median of the latest round trips had passed, within a bound.
	PrefixWait  time.Duration `json:"prefix_wait_ns,omitempty"`
	PrefixAcked bool          `json:"prefix_acked,omitempty"`
	// RTT is the quickest round trip of the run's latest single attempts
	// before the burst (request's last byte to reply's first byte, the
	// target's own time included) and Jitter the median's excess over it;
	// KernelRTT the kernel's smoothed round trip of the burst's
	// connections, to the nearest TCP peer (a proxy in between answers for
	// the target). Zero when not measured.
	RTT       time.Duration `json:"rtt_ns,omitempty"`
	Jitter    time.Duration `json:"jitter_ns,omitempty"`
	KernelRTT time.Duration `json:"kernel_rtt_ns,omitempty"`
}

// RaceScheduled reports whether the burst's race was scheduled: two or more
// writes held and released together.
func (b Burst) RaceScheduled() bool { return b.Scheduled && b.Held >= 2 }

// LooseSpread is the client release spread above which a burst of n
// attempts is loose: too wide to mean anything about a race.
//
// The rule is the pigeonhole one: n releases within a spread S put at
// least two of them within S/(n-1) of each other as they leave (a target
// takes them in one after another, so they arrive further apart). A burst is
// loose when even that pair bound exceeds PairGapLimit, 1 ms: wider than
// the read-to-write window of a handler that checks a key and then writes
// it over loopback (one PostgreSQL round trip, about 0.1-0.5 ms here), so
// such a burst would miss the very race it is for.
//
// Measured on a 2-core machine (2026-12-01): a quiet one releases a burst
// of 32 in about 0.2-0.3 ms (pair bound under 10 us); with the cores kept
// busy by other processes (load average 9-30, with and without two extra
// busy loops) the medians were 1.5-9 ms for bursts of 8 and 32 over both
// protocols, a pair bound of 0.1-0.4 ms: still well inside the limit,
// while the report states the wider spread. A limit on the whole spread
// (about 1 ms for 32) marked 22-27 of 30 such bursts loose and would have
// made every certification on a busy CI runner inconclusive. Those busy
// figures were the release writers' spinning; since they no longer spin
// (one release writer by default), the same kind of load (average 17-34, with and
// without two busy loops) gave medians of 6-8 us over h2c and 39-214 us
// over HTTP/1.1 (BENCHMARKS.md, product path).
func LooseSpread(n int) time.Duration {
	return time.Duration(max(n-1, 1)) * PairGapLimit
}

// PairGapLimit is the widest pair bound (spread/(n-1)) a burst may have
// and still count (see LooseSpread).
const PairGapLimit = time.Millisecond

// History is everything a run did and saw: the intents, every attempt in
// the order it started, and the database's observations. It is the input of
// the checker and can be written to disk and checked again offline.
type History struct {
	// Run says what was certified and how; with it the history can be
	// checked again offline.
	Run          Run           `json:"run"`
	Intents      []Intent      `json:"intents"`
	Attempts     []Attempt     `json:"attempts"`
	Observations []Observation `json:"observations"`
	// Recounts are the effect counts taken again after the last check
	// (Observation.Recount), for late duplicates: apart from Observations,
	// the counts each intent is judged by.
	Recounts []Observation `json:"recounts,omitempty"`
	Bursts   []Burst       `json:"bursts,omitempty"`
	// Events are what happened to the target and its links: faults that
	// landed or missed, kills, restarts and exits.
	Events []Event `json:"events,omitempty"`
}

// ByIntent returns the attempts of each intent, in start order, keyed by intent ID.
func (h *History) ByIntent() map[string][]Attempt {
	m := make(map[string][]Attempt, len(h.Intents))
	for _, a := range h.Attempts {
		m[a.Intent] = append(m[a.Intent], a)
	}
	return m
}

// CheckBursts returns the bursts check sent. A burst recorded without its
// check (a history written before bursts named it) belongs to the check of
// the attempts that carry its number.
func (h *History) CheckBursts(check string) []Burst {
	byAttempts := map[int]string{}
	for _, a := range h.Attempts {
		if a.Burst != 0 {
			byAttempts[a.Burst] = a.Check
		}
	}
	var out []Burst
	for _, b := range h.Bursts {
		c := b.Check
		if c == "" {
			c = byAttempts[b.ID]
		}
		if c == check {
			out = append(out, b)
		}
	}
	return out
}

// ObservationsByIntent returns each intent's observation, keyed by intent
// ID: the count it is judged by, not a recount taken after the last check.
func (h *History) ObservationsByIntent() map[string]Observation {
	m := make(map[string]Observation, len(h.Observations))
	for _, o := range h.Observations {
		if !o.Recount {
			m[o.Intent] = o
		}
	}
	return m
}

// RecountsByIntent returns each intent's count taken again after the last
// check (Observation.Recount), keyed by intent ID.
func (h *History) RecountsByIntent() map[string]Observation {
	m := map[string]Observation{}
	for _, o := range slices.Concat(h.Observations, h.Recounts) {
		if o.Recount {
			m[o.Intent] = o
		}
	}
	return m
}

// AddObservation appends o to the history: to Recounts when it is a
// recount, else to Observations.
func (h *History) AddObservation(o Observation) {
	if o.Recount {
		h.Recounts = append(h.Recounts, o)
	} else {
		h.Observations = append(h.Observations, o)
	}
}

// Run is the header of a history: everything besides the traffic that the
// checker needs to reach the same verdict again.
type Run struct {
	// Seed is a soak's: it chose which intents were cut. A certification
	// makes no random choice and has none.
	Seed   int64  `json:"seed,omitempty"`
	Target Target `json:"target"`
	Policy Policy `json:"policy"`
	// Checks are the checks planned for the run, in order; a check the
	// target could not support carries the reason it was skipped.
	Checks []PlannedCheck `json:"checks"`
	// NotAsked are the checks idemcheck knew and the run was not asked for
	// (--checks), in the order a certification runs them, each with its
	// rule: the report's contract states every rule, these as not checked.
	NotAsked []PlannedCheck `json:"not_asked,omitempty"`
	// EffectQuery is the SQL that counted effects, empty without a database.
	EffectQuery string `json:"effect_query,omitempty"`
	// SoakFaults are the faults a soak ran under, in the form its --fault
	// flag reads: "cut-reply@0.01", "reset@0.02" hit that seeded share of
	// first attempts, each of which records it as its Fault, in the order
	// the soak drew them; "latency:jitter=0,ms=20", "db-latency:ms=5" (no
	// share) acted on a whole link, every attempt, for the whole soak: no
	// attempt records those as its Fault, which says the harness broke
	// that attempt on purpose, and they only slow a link down. A name
	// starting "db-" is on the database link.
	SoakFaults []string `json:"soak_faults,omitempty"`
	// Shard, on a sharded soak's history, says which part of the soak it
	// holds: each shard sends its own intents at its part of the rate, and
	// `idemcheck check` merges the shards' histories into one verdict.
	Shard *Shard `json:"shard,omitempty"`
}

// PlannedCheck is a check the run meant to perform, with what the checker
// needs to know of it: the run records them, so a history is checked again
// offline by a checker that knows no list of checks.
type PlannedCheck struct {
	Name string `json:"name"`
	// Skip, when set, is why the check could not run on this target.
	Skip string `json:"skip,omitempty"`
	// Rule is the contract rule the check enforces and where the rule is
	// published. Empty in a history recorded before plans carried their
	// rules (see UnmarshalJSON).
	Rule string `json:"rule,omitempty"`
	// Faults: the check breaks the target on purpose (a cut database link,
	// a kill), so a key still in progress when its retries give up is
	// stuck, and the in-progress status its retries meet is judged as such.
	Faults bool `json:"faults,omitempty"`
	// FailureReleasesKey: the check fails its first attempt inside the
	// server (a cut database link, a body the target fails on) and retries
	// once that failure was answered. An attempt answered with an error
	// holds no claim on its key any more, so a retry then told the key is
	// in progress meets a stuck key, whatever the lease.
	FailureReleasesKey bool `json:"failure_releases_key,omitempty"`
	// RetryTakesOver: the check freezes its first attempt past the lease
	// and sends a retry that must take the key over (lease-fencing). A
	// round happened only when that retry was answered as executed while
	// the first was still frozen; a retry still told the key is in
	// progress means the target's lease was longer than the one declared,
	// and the fence was never put to the test.
	RetryTakesOver bool `json:"retry_takes_over,omitempty"`
	// CountsExecutions: the check's verdict rests on telling one execution
	// from two (concurrent-burst, sequential-replay, lost-reply): by the
	// effect count or, without one, by the resource ids its success replies
	// carry. A round with neither (an empty 200 to everything, judged from
	// the wire) shows nothing, and is not counted.
	CountsExecutions bool `json:"counts_executions,omitempty"`
	// Partial, when set, says what the check could not send to this
	// target, and why: a half that needs a power the run lacked (the
	// database link cut, writes held at the database). The check is
	// judged on what it sent; the reports say what it did not, so a pass
	// claims no more than was tried.
	Partial string `json:"partial,omitempty"`
}
