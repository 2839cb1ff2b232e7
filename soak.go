package idemcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// SoakResult is what a soak measured: the counts come from its history
// (assert.SoakTally), the rates and latencies from the load generator.
type SoakResult struct {
	Intents  int64 `json:"intents"`
	Attempts int64 `json:"attempts"`
	// Cut are the first attempts that got no reply, and so were retried
	// with the same key: with cut-reply the only fault on single attempts
	// (CutsOnly), replies cut after the server committed; with others
	// (reset, timeout, cut-request, a slow-reply past the timeout), every
	// first attempt that lost its reply, whatever the fault. Faults says
	// which fault hit how many.
	Cut        int64 `json:"cut"`
	Duplicates int64 `json:"duplicates"`
	Lost       int64 `json:"lost"`
	// Unresolved intents never got a reply, even on retry.
	Unresolved int64 `json:"unresolved"`
	// Counted intents had their effects counted.
	Counted int64 `json:"counted"`
	// Succeeded intents had an attempt (the first or its retry) answered
	// with a success the policy names (Policy.Replay): a created or a
	// replay status. A 3xx, a 4xx or a 5xx is no success unless the
	// policy lists it. Only these intents were promised anything, so the
	// verdict rests on them (SoakSuccessFloor).
	Succeeded int64 `json:"succeeded"`
	// DuplicatesPerMillion is per million counted intents.
	DuplicatesPerMillion float64 `json:"duplicates_per_million"`
	// LateDuplicates are intents whose count, taken again once the settle
	// bound had passed since the load's end (a soak with a settle bound
	// that counts during the load), was above the count they were judged
	// by, and above one: an effect that appeared after the reply and
	// after the intent was judged, as a background job run again after
	// its effect committed leaves one (late-duplicate-effect), counted
	// apart from Duplicates. Recounted are the intents counted again, and
	// LateDuplicateRate is LateDuplicates over Recounted.
	LateDuplicates    int64   `json:"late_duplicates"`
	Recounted         int64   `json:"recounted,omitempty"`
	LateDuplicateRate float64 `json:"late_duplicate_rate,omitempty"`
	// Pending are intents answered with an accepted status (effect
	// pending) that had no effect when counted, and are not called lost:
	// counted right after the reply, before a background worker need have
	// written anything (no settle bound), or still without one when the
	// settle bound ran out or when counted again after it. Unsettled are
	// intents with an effect whose count was still changing when the
	// settle bound ran out. Either leaves a soak without a failure
	// inconclusive: pending and lost look alike to a count.
	Pending   int64 `json:"pending,omitempty"`
	Unsettled int64 `json:"unsettled,omitempty"`
	// Settle, for a soak whose effects were counted after the load once
	// they settled, says what the counting did.
	Settle *SoakSettle `json:"settle,omitempty"`
	// Operations, for a soak that followed its accepted intents' status
	// monitors while their effects settled (Policy.StatusPointer), says
	// what the monitors said.
	Operations *SoakOperations `json:"operations,omitempty"`
	// Anomalies are the soak's first late duplicates (at most
	// MaxSoakAnomalies), each with both counts and when they were taken.
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	// Throughput is successful first attempts per second; Rate the
	// achieved request rate (vegeta's own figures; Throughput and Success
	// counted as successes only the statuses the policy names).
	Throughput float64       `json:"throughput"`
	Rate       float64       `json:"rate"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	Success    float64       `json:"success"`
	// TimeoutRate is the share of first attempts that got no reply, and
	// SucceededShare the share of those the server had carried out (their
	// retry was answered as a replay): the inputs of the cost arithmetic.
	TimeoutRate    float64 `json:"timeout_rate"`
	SucceededShare float64 `json:"succeeded_share"`
	Duration       time.Duration
	// Faults are the faults the soak ran under, each with what it hit, in
	// the order of its history's header (Run.SoakFaults): those on single
	// attempts in the order they were drawn (cut-reply first), then those
	// on a whole link.
	Faults []SoakFaultResult `json:"faults,omitempty"`
	// Series is the soak over time, in stretches of equal width from its
	// first attempt (at most MaxSoakBuckets of them): what a plot of the
	// soak draws.
	Series []SoakBucket `json:"series,omitempty"`
}

// SoakSettle is what counting a soak's effects once they settled did:
// after the load every intent was counted, pass after pass, each at least
// Quiet after the one before it ended, until a pass gave the same counts
// as the one before it (and no intent answered with an accepted status
// was still at zero), or Bound, from the load's end, ran out.
type SoakSettle struct {
	Bound time.Duration `json:"bound_ns"`
	Quiet time.Duration `json:"quiet_ns"`
	// Passes is how many times every intent was counted; Waited is how
	// long from the load's end to the last count.
	Passes int           `json:"passes"`
	Waited time.Duration `json:"waited_ns"`
	// Settled: the last pass gave the same counts as the one before it.
	// False: the bound ran out with counts still changing
	// (SoakResult.Unsettled and Pending say how many).
	Settled bool `json:"settled"`
}

// SoakOperations is what a soak's status monitors said: each accepted
// intent's monitor (the 202's Location, or Policy.StatusURLPointer) was
// read, one GET per pass of the settle, until it said the operation was
// over or the bound ran out, as a certification follows them.
type SoakOperations struct {
	// Monitors are the monitors followed, Reads the GETs sent to them.
	Monitors int64 `json:"monitors"`
	Reads    int64 `json:"reads"`
	// Done, Failed and Pending are the monitors that said the operation
	// finished, that it failed, and that still said neither (or could
	// not be read) when the bound ran out.
	Done    int64 `json:"done"`
	Failed  int64 `json:"failed"`
	Pending int64 `json:"pending"`
	// Unnamed are accepted replies that named no monitor idemcheck could
	// read (no Location header, another origin): their counts alone say
	// when their effects settled.
	Unnamed int64 `json:"unnamed,omitempty"`
	// Unjudged are intents with at most one effect whose monitor was still
	// pending, or unreadable, at the bound: the operation is not over, so
	// its effect is neither lost nor settled, and the soak is
	// inconclusive (First names the first such monitor). OwedNothing are
	// intents with no effect whose operation failed: the API owes none,
	// and, as for an intent refused, they say nothing about idempotency
	// (they do not count towards SoakSuccessFloor).
	Unjudged    int64  `json:"unjudged,omitempty"`
	OwedNothing int64  `json:"owed_nothing,omitempty"`
	First       string `json:"first_pending,omitempty"`
}

// MaxSoakAnomalies is how many late duplicates a soak's result shows
// with their evidence; the rest are counted.
const MaxSoakAnomalies = 10

// MaxSoakBuckets is how many stretches a soak's Series holds at most: a
// longer soak gets wider stretches, so its series stays the same size.
const MaxSoakBuckets = 120

// SoakBucket is one stretch of a soak's time: what its first attempts
// got, and the effects counted in it.
type SoakBucket struct {
	// At is when the stretch began, from the soak's first attempt; Width
	// is its length.
	At    time.Duration `json:"at_ns"`
	Width time.Duration `json:"width_ns"`
	// Intents are the first attempts sent in it, Succeeded those answered
	// with a success, Cut those left without a reply (and so retried).
	Intents   int64 `json:"intents"`
	Succeeded int64 `json:"succeeded"`
	Cut       int64 `json:"cut"`
	// Duplicates and Lost are the effects counted in the stretch (an
	// intent's effects are counted just after its attempts end).
	Duplicates int64 `json:"duplicates,omitempty"`
	Lost       int64 `json:"lost,omitempty"`
	// P50, P90 and P99 are the latencies of its answered first attempts,
	// to within a fifth (the upper bound of a logarithmic bin).
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
}

// SoakProgress is a soak's running count, taken while it runs, for a
// person watching a terminal or a log collector: every figure is since the
// soak started, except Rate, over the last interval (over the whole soak in
// the last count, taken when it ends).
type SoakProgress struct {
	Elapsed time.Duration `json:"elapsed_ns"`
	// Sent are the first attempts whose result came back; Rate is them
	// per second over the last interval, or over the whole soak in the
	// last count.
	Sent int64   `json:"sent"`
	Rate float64 `json:"rate"`
	// Succeeded are those answered with a 2xx or 3xx (vegeta's success).
	Succeeded int64 `json:"succeeded"`
	// Cut are the first attempts left without a reply, retried; Errors
	// the attempts (first or retry) answered with a 5xx, and retries
	// left without a reply.
	Cut    int64 `json:"cut"`
	Errors int64 `json:"errors"`
	// Retried are the retries whose result came back.
	Retried int64 `json:"retried"`
	// Shard is the shard this process runs, on a sharded soak.
	Shard *Shard `json:"shard,omitempty"`
}

// Success is the share of sent first attempts that succeeded.
func (p SoakProgress) Success() float64 {
	if p.Sent == 0 {
		return 0
	}
	return float64(p.Succeeded) / float64(p.Sent)
}

// Shard is one part of a soak spread over several processes (the pods of
// a Kubernetes Indexed Job): shard Index of Count, counted from 0. Each
// shard sends its own intents, numbered so that no two shards share one
// (Seq), draws its faults from its own stream of the seed, and sends its
// part of the rate (Part).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String writes the shard as the --shard flag reads it: "2/4".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Part is this shard's part of total (a rate, a number of intents): total
// divided by Count, the remainder going one each to the first shards, so
// that the parts of all shards add up to total.
func (s Shard) Part(total int64) int64 {
	if s.Count <= 1 {
		return total
	}
	p := total / int64(s.Count)
	if int64(s.Index) < total%int64(s.Count) {
		p++
	}
	return p
}

// Seq is the sequence number of this shard's nth intent (from 1): the
// shards' numbers interleave (shard 0 of 4 takes 1, 5, 9 …, shard 1 takes
// 2, 6, 10 …), so no two shards share one and the soak's intents are
// numbered 1..N across its shards as in one process.
func (s Shard) Seq(n int64) int64 {
	if s.Count <= 1 {
		return n
	}
	return (n-1)*int64(s.Count) + int64(s.Index) + 1
}

// SoakFaultResult is one fault a soak ran under, and what it hit: the
// report's side of a fault whose setting, the fault and the share it was
// asked to hit, is runner.SoakFault.
type SoakFaultResult struct {
	// Fault is the fault as the faults package writes it: "reset",
	// "slow-reply:delay=2s", "latency:jitter=0,ms=20".
	Fault string `json:"fault"`
	// Link is the link it acted on: LinkClient or LinkDB.
	Link string `json:"link"`
	// WholeLink: it acted on every attempt for the whole soak (latency,
	// bandwidth, db-latency). Otherwise it hit a seeded share of first
	// attempts (cut-reply, cut-request, timeout, reset, slow-reply).
	WholeLink bool `json:"whole_link,omitempty"`
	// Share is the share of first attempts it was meant to hit, chosen by
	// the seed; 0 on a whole link.
	Share float64 `json:"share,omitempty"`
	// Attempts are the attempts it acted on: the first attempts sent
	// through it, or, on a whole link, every attempt of the soak.
	Attempts int64 `json:"attempts"`
	// Retried are those of its first attempts that got no reply and so
	// were retried with the same key, and Replayed those retries answered
	// as replays (the first attempt had been carried out). Zero on a
	// whole link.
	Retried  int64 `json:"retried,omitempty"`
	Replayed int64 `json:"replayed,omitempty"`
}

// cutReply is the name of the fault that cuts a reply after the server
// committed, as a SoakFaultResult names it (the faults package's cut-reply).
const cutReply = "cut-reply"

// CutsOnly reports whether cut-reply was the soak's only fault on single
// attempts: every first attempt without a reply was then meant to be a
// reply cut after the server committed, as the soak's cut share says.
func (r SoakResult) CutsOnly() bool {
	for _, f := range r.Faults {
		if !f.WholeLink && f.Fault != cutReply {
			return false
		}
	}
	return true
}

// SoakSuccessFloor is the share of a soak's intents that must have been
// answered with a success (SoakResult.Succeeded) for it to pass: a soak
// proves that what the target promised happened exactly once, so one
// whose target refused or failed most of its intents (all 500, all 429,
// all 409, redirects the policy does not name) has tested the target's
// error path, not its idempotency, and is inconclusive, never a pass.
// Half leaves room for the faults a soak injects (a cut first attempt
// is answered on its retry, and counts) and for a target that sheds some
// load, while a target that mostly refuses cannot pass.
const SoakSuccessFloor = 0.5

// SoakReport is the report of `idemcheck soak` (its JSON, version 1): the
// verdict, what was soaked, the figures, and what they would cost.
type SoakReport struct {
	Version   int       `json:"version"`
	Verdict   Status    `json:"verdict"`
	Tool      Tool      `json:"tool,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Seed      int64     `json:"seed"`
	Target    Target    `json:"target"`
	// Shard is the part of a sharded soak this report is of; nil for a
	// whole soak.
	Shard *Shard      `json:"shard,omitempty"`
	Soak  *SoakResult `json:"soak"`
	// Reason says why an inconclusive soak proved nothing: too few of
	// its intents answered with a success (SoakSuccessFloor), or a
	// shard's history missing.
	Reason string `json:"reason,omitempty"`
	// Merged, on a report of `idemcheck check`, says which histories it
	// merged: their number, and the shards of a sharded soak.
	Merged   *Merged `json:"merged,omitempty"`
	Estimate *Cost   `json:"estimate,omitempty"`
	// EstimateAssumes says what the estimate rests on: the timeout rate
	// is the share of replies the soak cut, an assumption, not a figure
	// measured from the API.
	EstimateAssumes string `json:"estimate_assumes,omitempty"`
}

// Merged says what a soak report merged from recorded histories.
type Merged struct {
	// Histories is the number of soak histories merged.
	Histories int `json:"histories"`
	// Shards is the shard count of a sharded soak's histories (0 for
	// histories of whole soaks), and Missing the indexes of the shards
	// whose history was not among them: their intents are not counted.
	Shards  int   `json:"shards,omitempty"`
	Missing []int `json:"missing_shards,omitempty"`
}

// WriteJSON writes the soak report as indented JSON.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CostInputs are the figures a team knows, or can look up, about one
// mutating endpoint: the inputs of `idemcheck estimate`'s arithmetic
// (the command's estimate and a soak's report compute it alike).
type CostInputs struct {
	// RequestsPerDay is the number of mutating requests a day.
	RequestsPerDay float64 `json:"requests_per_day"`
	// TimeoutRate is the share of requests whose client gave up without a
	// reply, from 0 to 1.
	TimeoutRate float64 `json:"timeout_rate"`
	// SucceededShare is the share of those timeouts where the server had
	// done the work anyway, from 0 to 1.
	SucceededShare float64 `json:"succeeded_share"`
	// LateDuplicateRate is the share of requests whose work the service
	// did again after the reply by itself, from 0 to 1: a queue that ran a
	// job again after its effect committed, whatever the client did. A
	// soak counting during its load with a settle bound measures it
	// (SoakResult.LateDuplicateRate); 0 leaves it out.
	LateDuplicateRate float64 `json:"late_duplicate_rate,omitempty"`
	// ValuePerDuplicate is what one duplicate costs (a refund, support
	// time), in any currency; 0 means unknown and leaves the cost out.
	ValuePerDuplicate float64 `json:"value_per_duplicate,omitempty"`
	// KeyBytes is what one stored key takes.
	KeyBytes int64 `json:"key_bytes"`
	// Window is how long keys are kept.
	Window time.Duration `json:"window_ns"`
	// Layers is the number of layers in a call stack that each retry, and
	// Tries the tries each makes, the first included; 0 leaves the
	// amplification out.
	Layers int `json:"layers,omitempty"`
	Tries  int `json:"tries,omitempty"`
	// CallsPerIntent is the retry amplification measured at one layer: the
	// provider calls one client intent caused in a certification (a
	// check's provider.calls_per_intent); 0 leaves it out.
	CallsPerIntent float64 `json:"calls_per_intent,omitempty"`
}

// Cost is the arithmetic for one set of CostInputs: what retries that are
// not recognised as retries cost. Figures are not rounded: the caller
// rounds for display, so a sum of displayed figures can differ from a
// displayed sum by a rounding step.
type Cost struct {
	Inputs CostInputs `json:"inputs"`
	// TimeoutsPerDay = RequestsPerDay x TimeoutRate.
	TimeoutsPerDay float64 `json:"timeouts_per_day"`
	// LateDuplicatesPerDay = RequestsPerDay x LateDuplicateRate: work
	// done again after the reply by the service's own retry.
	LateDuplicatesPerDay float64 `json:"late_duplicates_per_day,omitempty"`
	// DuplicatesPerDay = TimeoutsPerDay x SucceededShare +
	// LateDuplicatesPerDay: each timeout that had succeeded is retried,
	// and a retry the server does not recognise does the work again; a
	// late duplicate is one more, whatever the client does.
	DuplicatesPerDay   float64 `json:"duplicates_per_day"`
	DuplicatesPerMonth float64 `json:"duplicates_per_month"`
	// CostPerMonth = DuplicatesPerMonth x ValuePerDuplicate; 0 without a value.
	CostPerMonth float64 `json:"cost_per_month,omitempty"`
	// UnansweredPerMonth is what removing retries leaves instead: every
	// timeout is a customer who never hears back.
	UnansweredPerMonth float64 `json:"unanswered_per_month"`
	// ChargedAnywayPerMonth are those of them whose request took effect.
	ChargedAnywayPerMonth float64 `json:"charged_anyway_per_month"`
	// StoredKeys is the number of keys held at once: every mutating request
	// stores a key, held for the window, so RequestsPerDay x Window in days.
	StoredKeys float64 `json:"stored_keys"`
	// KeyStoreBytes = StoredKeys x KeyBytes.
	KeyStoreBytes float64 `json:"key_store_bytes"`
	// Amplification = Tries^Layers: the tries that reach the bottom layer
	// for one request at the top when every layer retries; 0 when Layers or
	// Tries is 0.
	Amplification int64 `json:"amplification,omitempty"`
	// MeasuredAmplification = CallsPerIntent^Layers (CallsPerIntent alone
	// without Layers): the measured figure in place of Tries; 0 without one.
	MeasuredAmplification float64 `json:"measured_amplification,omitempty"`
}
