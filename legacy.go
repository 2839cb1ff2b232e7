package idemcheck

import (
	"encoding/json"
	"strings"
)

// This file is the one place where a history recorded before its records
// said what the checker needs is read by name. Newer histories say it
// themselves: a plan carries each check's rule and fault flag, an attempt
// the links its fault acted on. An older history read here is filled in
// from the names it holds, so it checks the same way it always did. The
// tables below are frozen: a check or fault added since records its facts
// and never needs an entry here.

// legacyFaultChecks are the checks that broke the target on purpose when
// plans did not yet say so.
var legacyFaultChecks = map[string]bool{
	CheckFailedAttempt: true, CheckCrashLease: true, CheckLeaseFencing: true,
	CheckWebhookRedeliver: true, CheckCrashAfterCommit: true,
}

// legacyFailureReleasesKey are the checks whose answered first failure
// released the key when plans did not yet say so. Their plans say so now,
// always: a plan of one of them without the flag comes from an older
// history.
var legacyFailureReleasesKey = map[string]bool{CheckFailedAttempt: true}

// legacyCountsExecutions are the checks that tell one execution from two,
// for plans recorded before they said so; their plans say so now, always.
var legacyCountsExecutions = map[string]bool{CheckConcurrentBurst: true, CheckSequentialReplay: true, CheckLostReply: true}

// UnmarshalJSON reads a planned check. One recorded without a rule comes
// from a history older than rules in plans: its fault flag is then the one
// its name had (legacyFaultChecks), and its rule stays empty, which a
// report shows as not recorded. One recorded without FailureReleasesKey
// gets the flag its name had (legacyFailureReleasesKey), and likewise
// CountsExecutions (legacyCountsExecutions).
func (pc *PlannedCheck) UnmarshalJSON(b []byte) error {
	type plain PlannedCheck
	if err := json.Unmarshal(b, (*plain)(pc)); err != nil {
		return err
	}
	if pc.Rule == "" {
		pc.Faults = pc.Faults || legacyFaultChecks[pc.Name]
	}
	pc.FailureReleasesKey = pc.FailureReleasesKey || legacyFailureReleasesKey[pc.Name]
	pc.CountsExecutions = pc.CountsExecutions || legacyCountsExecutions[pc.Name]
	return nil
}

// UnmarshalJSON reads an attempt. One whose fault names no links comes from
// a history older than fault links (or went through a kill alone): its
// links are read from the fault's name (legacyFaultLinks).
func (a *Attempt) UnmarshalJSON(b []byte) error {
	type plain Attempt
	if err := json.Unmarshal(b, (*plain)(a)); err != nil {
		return err
	}
	if a.Fault != "" && a.FaultLinks == nil {
		a.FaultLinks = legacyFaultLinks(a.Fault)
	}
	return nil
}

// legacyFaultLinks reads the links of a recorded fault from its name, as
// the harness joined them: kills and client-link faults first, the
// database-link fault last ("kill-at-commit+db-hold:match=...,nth=1"). A
// part starting "db-" acted on the database link (it runs to the end: its
// match may hold a "+"), a kill ("kill-...") on none, any other part on the
// client link. Nil when no link was faulted.
func legacyFaultLinks(fault string) []string {
	head, db := fault, false
	if i := strings.Index("+"+fault, "+db-"); i >= 0 {
		head, db = fault[:max(i-1, 0)], true
	}
	client := false
	for part := range strings.SplitSeq(head, "+") {
		name, _, _ := strings.Cut(part, ":")
		if name != "" && name != "none" && !strings.HasPrefix(name, "kill-") {
			client = true
		}
	}
	var links []string
	if client {
		links = append(links, LinkClient)
	}
	if db {
		links = append(links, LinkDB)
	}
	return links
}
