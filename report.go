package idemcheck

import (
	"encoding/json"
	"io"
	"strings"
	"time"
)

// ReportVersion is the version of the JSON report layout.
const ReportVersion = 1

// Status is a check's result.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Skip: the check could not apply (the target lacks a power it needs);
	// Reason says why. A skipped check is never counted as held.
	Skip Status = "skip"
	// Inconclusive: the check applied, but its scenario did not happen as
	// meant: its fault never landed, the target was dead, no attempt it
	// rests on was answered, or its bursts arrived too loosely. Reason says
	// which. Unknown is not ok: an inconclusive check is never counted as
	// held.
	Inconclusive Status = "inconclusive"
)

// Verdicts of a whole run with nothing to judge. Each has its own name, so
// that a pipeline never reads "nothing was tested" as a pass.
const (
	// NoAnswers: attempts were sent, and the target answered none of them.
	NoAnswers Status = "no-answers"
	// AllSkipped: every planned check was skipped; none applied to the target.
	AllSkipped Status = "all-skipped"
	// Empty: the history holds no attempt at all.
	Empty Status = "empty"
)

// VerdictExit maps a run's verdict to its exit code: 0 pass, 1 fail, 3 when
// the target answered nothing, 4 when the run proved nothing either way
// (inconclusive, every check skipped, or an empty history). allowInconclusive
// turns an inconclusive verdict, and only that one, into 0.
func VerdictExit(v Status, allowInconclusive bool) int {
	switch v {
	case Pass:
		return ExitHeld
	case Fail:
		return ExitAnomalies
	case NoAnswers:
		return ExitUnavailable
	case Inconclusive:
		if allowInconclusive {
			return ExitHeld
		}
	}
	return ExitInconclusive
}

// WorstVerdict joins the verdicts of several reports (a suite's endpoints):
// a failure wins, then a target that answered nothing, then a run that
// proved nothing, then a pass.
func WorstVerdict(vs ...Status) Status {
	rank := map[Status]int{Pass: 0, Empty: 1, AllSkipped: 2, Inconclusive: 3, NoAnswers: 4, Fail: 5}
	out := Pass
	for _, v := range vs {
		if rank[v] > rank[out] {
			out = v
		}
	}
	return out
}

// CheckResult is one check's outcome.
type CheckResult struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Rule is the contract rule the check enforces, in a sentence.
	Rule string `json:"rule,omitempty"`
	// Anomalies are indexes into Report.Anomalies: the findings that
	// decide the check's status.
	Anomalies []int `json:"anomalies"`
	// Remarks are indexes into Report.Remarks: what the check found that
	// does not count against it (conformance remarks, robustness findings).
	Remarks  []int `json:"remarks,omitempty"`
	Intents  int   `json:"intents"`
	Attempts int   `json:"attempts"`
	// Answered counts the check's attempts that got a complete reply.
	Answered int `json:"answered"`
	// Proof says what shows the check's scenario happened: where its fault
	// landed, the kills and restarts, how tightly its bursts arrived.
	Proof string `json:"proof,omitempty"`
	// Partial, when set, is what the check could not send to this target,
	// and why (PlannedCheck.Partial): a pass holds for what was sent.
	Partial string `json:"partial,omitempty"`
	// Provider is the check's traffic at the target's provider doubles,
	// when it had any: the retry amplification measured.
	Provider *ProviderTraffic `json:"provider,omitempty"`
}

// ProviderTraffic is what one check's intents caused at the target's
// downstream provider doubles: how many calls one client intent became,
// across the check's retries and faults.
type ProviderTraffic struct {
	// Calls is every call the check's intents caused, Charges those that
	// created a charge.
	Calls   int `json:"calls"`
	Charges int `json:"charges"`
	// CallsPerIntent is Calls over the check's intents, MaxCallsPerIntent
	// the most one intent caused: the amplification of one client intent
	// at the provider.
	CallsPerIntent    float64 `json:"calls_per_intent"`
	MaxCallsPerIntent int     `json:"max_calls_per_intent"`
}

// Target says what was certified; the database DSN is redacted.
type Target struct {
	Name     string `json:"name,omitempty"`
	URL      string `json:"url"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Database string `json:"database,omitempty"`
	// ReadBack, when set, is the GET that counted effects through the API
	// itself, for a run without database access.
	ReadBack string `json:"read_back,omitempty"`
	// Insecure says the target's TLS certificate was not verified
	// (--insecure): whoever answered was certified.
	Insecure bool `json:"insecure,omitempty"`
	// Log is the file that holds the target's stdout and stderr, for a
	// target idemcheck started (--target-log); empty when its output was
	// not kept.
	Log string `json:"log,omitempty"`
	// Signing says how every attempt was signed (--sign), never with
	// what secret; nil when requests were not signed.
	Signing *TargetSigning `json:"signing,omitempty"`
}

// TargetSigning is how a run signed its requests: the scheme, the
// signature header and the shift of the signing clock (--sign-skew).
type TargetSigning struct {
	Scheme string `json:"scheme"`
	Header string `json:"header"`
	SkewMS int64  `json:"skew_ms,omitempty"`
}

// SignatureTolerance is how far from the receiver's clock senders document
// that a signature's timestamp may be (Stripe, Slack, Standard Webhooks):
// a consumer that acknowledges a delivery signed further off accepts
// replays.
const SignatureTolerance = 5 * time.Minute

// SignsTime reports whether a signing scheme (TargetSigning.Scheme) signs
// a timestamp with each delivery: every scheme but github and shopify,
// whose signature covers the body alone, so that their consumers cannot
// tell a delivery signed an hour ago from one signed now, and have no
// tolerance to keep.
func SignsTime(scheme string) bool { return scheme != "github" && scheme != "shopify" }

// Stats are run facts.
type Stats struct {
	Intents    int   `json:"intents"`
	Attempts   int   `json:"attempts"`
	DurationMS int64 `json:"duration_ms"`
	// BurstSpreadMedianUS is the median client release spread of the run's
	// bursts, in microseconds.
	BurstSpreadMedianUS int64 `json:"burst_spread_median_us,omitempty"`
	// BurstProtocol is what the bursts went out with ("h2", "http1", or
	// "mixed" when some fell back).
	BurstProtocol string `json:"burst_protocol,omitempty"`
}

// Tool names the build of idemcheck that made a report, so that a report
// kept by CI says which version judged the target.
type Tool struct {
	Name string `json:"name"`
	// Version is the module version ("v1.2.0"), or "(devel)" for a build
	// from a checkout, whose Commit then says which.
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Modified: the checkout had changes not committed.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// String is the tool on one line: "idemcheck v1.2.0 (commit 0123abc, go1.26.0)".
func (t Tool) String() string {
	if t.Name == "" {
		return ""
	}
	s := t.Name + " " + t.Version
	var extra []string
	if t.Commit != "" {
		c := "commit " + t.Commit
		if t.Modified {
			c += " with local changes"
		}
		extra = append(extra, c)
	}
	if t.Go != "" {
		extra = append(extra, t.Go)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// Report is the verdict of one certification.
type Report struct {
	Version int    `json:"version"`
	Verdict Status `json:"verdict"`
	// Tool is the idemcheck build that made the report; StartedAt is when
	// the run began (for a history checked again offline: when its first
	// attempt was sent).
	Tool      Tool      `json:"tool,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// A report has no seed: a certification makes no random choice (keys
	// are UUIDs). Earlier reports carried a "seed" that chose nothing; the
	// schema keeps it, optional, for them.
	Target Target        `json:"target"`
	Policy Policy        `json:"policy"`
	Checks []CheckResult `json:"checks"`
	// Anomalies are the findings the verdict rests on: every failure, and
	// conformance remarks where the policy requires them.
	Anomalies []Anomaly `json:"anomalies"`
	// Remarks are the findings reported apart from the verdict:
	// conformance remarks the policy does not require (a long or a list
	// key accepted) and robustness findings (the target exited under a
	// fault). Each says its class.
	Remarks []Anomaly `json:"remarks,omitempty"`
	// Contract lists every rule idemcheck knows, as held, broken or not
	// checked (and why), so the report can stand on its own in a review.
	Contract []RuleResult `json:"contract"`
	// TargetExits are the times the target died on its own during the
	// run, with how it ended and what it said last, and the times it
	// outlived a cut database link without recovering (Kind
	// TargetUnrecovered: it failed fresh requests until restarted): a
	// robustness finding apart from the idempotency verdict (a service
	// that exits, or fails every request, when its database connection
	// drops).
	TargetExits []Event `json:"target_exits,omitempty"`
	Stats       Stats   `json:"stats"`
}

// Rule statuses in Report.Contract.
const (
	RuleHeld       = "held"
	RuleBroken     = "broken"
	RuleNotChecked = "not-checked"
	// RuleInconclusive: the check applied but its scenario did not happen.
	RuleInconclusive = "inconclusive"
)

// RuleResult is one contract rule and what the run showed of it.
type RuleResult struct {
	Check  string `json:"check"`
	Rule   string `json:"rule"`
	Status string `json:"status"`
	// Basis is what a held or broken verdict rests on: the wire alone, the
	// wire and effect counts read back through the API, or the wire and the
	// database's effect counts.
	Basis string `json:"basis,omitempty"`
	// Reason says why a rule was not checked.
	Reason string `json:"reason,omitempty"`
}

// SuiteReport is the JSON report of a suite: one Report per endpoint.
type SuiteReport struct {
	Version   int       `json:"version"`
	Verdict   Status    `json:"verdict"`
	Tool      Tool      `json:"tool,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Reports   []Report  `json:"reports"`
}

// NewSuiteReport joins endpoint reports; the suite fails when any fails.
func NewSuiteReport(reports []Report) SuiteReport {
	s := SuiteReport{Version: ReportVersion, Verdict: Pass, Reports: reports}
	for i, r := range reports {
		s.Verdict = WorstVerdict(s.Verdict, r.Verdict)
		if i == 0 || (!r.StartedAt.IsZero() && r.StartedAt.Before(s.StartedAt)) {
			s.StartedAt = r.StartedAt
		}
		if s.Tool.Name == "" {
			s.Tool = r.Tool
		}
	}
	return s
}

// WriteJSON encodes the suite report, indented, to w.
func (s SuiteReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return r.Verdict == Fail }

// Stamp records the build that made the report and, unless the run
// recorded its own, when the run began (to the millisecond, in UTC).
func (r *Report) Stamp(tool Tool, started time.Time) {
	r.Tool = tool
	if r.StartedAt.IsZero() {
		r.StartedAt = started.UTC().Truncate(time.Millisecond)
	}
}

// WriteJSON encodes the report, indented, to w.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
