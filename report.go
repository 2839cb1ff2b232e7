package idemcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
)

// CheckResult is one check's outcome.
type CheckResult struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Rule is the contract rule the check enforces, in a sentence.
	Rule string `json:"rule,omitempty"`
	// Anomalies are indexes into Report.Anomalies.
	Anomalies []int `json:"anomalies"`
	Intents   int   `json:"intents"`
	Attempts  int   `json:"attempts"`
}

// Target says what was certified; the database DSN is redacted.
type Target struct {
	Name     string `json:"name,omitempty"`
	URL      string `json:"url"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Database string `json:"database,omitempty"`
}

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

// Report is the verdict of one certification.
type Report struct {
	Version   int           `json:"version"`
	Verdict   Status        `json:"verdict"`
	Seed      int64         `json:"seed"`
	Target    Target        `json:"target"`
	Policy    Policy        `json:"policy"`
	Checks    []CheckResult `json:"checks"`
	Anomalies []Anomaly     `json:"anomalies"`
	// Contract lists every rule idemcheck knows, as held, broken or not
	// checked (and why), so the report can stand on its own in a review.
	Contract []RuleResult `json:"contract"`
	Stats    Stats        `json:"stats"`
}

// Rule statuses in Report.Contract.
const (
	RuleHeld       = "held"
	RuleBroken     = "broken"
	RuleNotChecked = "not-checked"
)

// RuleResult is one contract rule and what the run showed of it.
type RuleResult struct {
	Check  string `json:"check"`
	Rule   string `json:"rule"`
	Status string `json:"status"`
	// Basis is what a held or broken verdict rests on: the wire alone, or
	// the wire and the database's effect counts.
	Basis string `json:"basis,omitempty"`
	// Reason says why a rule was not checked.
	Reason string `json:"reason,omitempty"`
}

// SuiteReport is the JSON report of a suite: one Report per endpoint.
type SuiteReport struct {
	Version int      `json:"version"`
	Verdict Status   `json:"verdict"`
	Seed    int64    `json:"seed"`
	Reports []Report `json:"reports"`
}

// NewSuiteReport joins endpoint reports; the suite fails when any fails.
func NewSuiteReport(seed int64, reports []Report) SuiteReport {
	s := SuiteReport{Version: ReportVersion, Verdict: Pass, Seed: seed, Reports: reports}
	for _, r := range reports {
		if r.Failed() {
			s.Verdict = Fail
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

// WriteJSON encodes the report, indented, to w.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFileAtomic writes a file through a temporary file in the same folder
// and a rename, so a reader never sees a half-written report and a failed
// run leaves none behind.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file private; a report is an ordinary file.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
