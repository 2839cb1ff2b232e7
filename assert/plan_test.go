package assert

import (
	"bytes"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

// stuckRound adds a round of check whose first attempt died at its
// database link (the target killed) and whose retries met the in-progress
// status past the lease: a stuck key, if the check breaks the target on
// purpose.
func stuckRound(b *histBuilder, check string) {
	in := b.intent(check, 0, `1 0-5 unknown`, `2 10-12 409 {}`, `2 2000-2002 409 {}`)
	b.fault(in, "kill-at-commit+db-hold:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.TargetKilled, Intent: in, Check: check})
}

// The checker knows a check only from the plan: a check it never heard of,
// planned with a rule and the fault flag, is judged by them, and its rule
// reaches the report and the contract. The same round planned without the
// flag belongs to a check that did not break the target: no stuck key.
func TestTheCheckerLearnsAChecksFactsFromThePlan(t *testing.T) {
	const c = "made-up-crash"
	const rule = "A made-up rule: a key claimed by a dead process becomes retakable."
	p := idemcheck.IETF()
	p.Lease = time.Second

	b := newHist(t, p)
	b.h.Run.Checks = []idemcheck.PlannedCheck{{Name: c, Rule: rule, Faults: true}}
	b.h.Run.NotAsked = []idemcheck.PlannedCheck{{Name: "another", Rule: "Another rule."}}
	stuckRound(b, c)
	r := Report(&b.h)
	assert.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(r.Anomalies))
	require.Len(t, r.Checks, 1)
	assert.Equal(t, rule, r.Checks[0].Rule)
	require.Len(t, r.Contract, 2)
	assert.Equal(t, idemcheck.RuleResult{Check: c, Rule: rule, Status: idemcheck.RuleBroken,
		Basis: "the wire and the database's effect counts"}, r.Contract[0])
	assert.Equal(t, idemcheck.RuleResult{Check: "another", Rule: "Another rule.", Status: idemcheck.RuleNotChecked,
		Reason: "not asked for (Checks)"}, r.Contract[1])
	flags := ReportIn(&b.h, Words{"Checks": {Name: "--checks"}})
	assert.Equal(t, "not asked for (--checks)", flags.Contract[1].Reason, "in the caller's words")

	b.h.Run.Checks[0].Faults = false
	assert.Empty(t, Check(&b.h), "a check that does not break the target on purpose leaves no key stuck")
}

// answeredFailureRound adds a round of check whose first attempt failed
// inside the server (its database link cut) and was answered 500, and
// whose retries were told the key is in progress before one succeeded.
func answeredFailureRound(b *histBuilder, check string) {
	in := b.intent(check, 1, `1 0-5 500 {"error":"connection lost"}`, `2 10-12 409 {}`, `2 200-202 409 {}`, `2 400-402 201 {"orderId":"A"}`)
	b.fault(in, "db-cut:nth=1")
	b.event(idemcheck.Event{Kind: idemcheck.FaultLanded, Intent: in, Check: check, Landing: idemcheck.LandedCommit})
}

// Whether an answered failure releases the key is a fact the plan records
// (FailureReleasesKey), not something the checker knows of a check's
// name: planned with it, any check whose retries meet the in-progress
// status after its first attempt was answered with an error has a stuck
// key; planned without it, the same round is a slow takeover that ended.
func TestAnAnsweredFailureReleasesTheKeyWhereThePlanSaysSo(t *testing.T) {
	const c = "made-up-failure"
	b := newHist(t, idemcheck.IETF())
	b.h.Run.Checks = []idemcheck.PlannedCheck{{Name: c, Rule: "A made-up rule.", Faults: true, FailureReleasesKey: true}}
	answeredFailureRound(b, c)
	as := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(as))
	assert.Contains(t, as[0].Explanation, "attempt 1 failed inside the server and was answered 500")

	b.h.Run.Checks[0].FailureReleasesKey = false
	assert.Empty(t, Check(&b.h), "without the fact, retries told in progress until one succeeds are a takeover")
}

// A failed-attempt history recorded before plans said whether an answered
// failure releases the key reads the fact from the check's name, and checks
// as the same history recorded now.
func TestAnOlderFailedAttemptHistoryStillReleasesTheKey(t *testing.T) {
	const c = idemcheck.CheckFailedAttempt
	b := newHist(t, idemcheck.IETF(), c)
	answeredFailureRound(b, c)
	now := Check(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(now))

	var buf bytes.Buffer
	require.NoError(t, history.Write(&buf, &b.h))
	re := regexp.MustCompile(`,"failure_releases_key":true`)
	require.Regexp(t, re, buf.String())
	hs, err := history.ReadAll(strings.NewReader(re.ReplaceAllString(buf.String(), "")), "old.jsonl")
	require.NoError(t, err)
	assert.Equal(t, now, Check(hs[0]))
}

// A history recorded before plans carried their rules and fault flags, and
// before attempts named their fault's links, checks as it always did: the
// same anomalies as the same history recorded now; its rules read as not
// recorded.
func TestAHistoryWithoutRecordedFactsChecksAsBefore(t *testing.T) {
	const c = idemcheck.CheckCrashLease
	p := idemcheck.IETF()
	p.Lease = time.Second
	b := newHist(t, p, c, idemcheck.CheckLostReply)
	stuckRound(b, c)
	now := Report(&b.h)
	require.Equal(t, []idemcheck.Kind{idemcheck.StuckKey}, kinds(now.Anomalies))
	require.NotEqual(t, NoRule, now.Checks[0].Rule)

	var buf bytes.Buffer
	require.NoError(t, history.Write(&buf, &b.h))
	// What an older history lacks: rules and fault flags in its plan, the
	// checks not asked for, and the links of its attempts' faults.
	old := buf.String()
	for _, re := range []string{`,"rule":"(\\.|[^"\\])*"`, `,"faults":true`, `,"not_asked":\[[^\]]*\]`, `,"fault_links":\[[^\]]*\]`} {
		require.Regexp(t, re, old)
		old = regexp.MustCompile(re).ReplaceAllString(old, "")
	}
	hs, err := history.ReadAll(strings.NewReader(old), "old.jsonl")
	require.NoError(t, err)
	then := Report(hs[0])
	assert.Equal(t, kinds(now.Anomalies), kinds(then.Anomalies))
	assert.Equal(t, now.Verdict, then.Verdict)
	for i, cr := range then.Checks {
		assert.Equal(t, NoRule, cr.Rule, cr.Name)
		assert.Equal(t, now.Checks[i].Status, cr.Status, cr.Name)
	}
	assert.Len(t, then.Contract, 2, "the contract states the rules the history names")
	for _, rr := range then.Contract {
		assert.Equal(t, NoRule, rr.Rule, rr.Check)
	}
}

// The checker is pure: it imports nothing but the root package and the
// standard library, so it never learns a check from anywhere but the
// history.
func TestAssertImportsOnlyTheRootAndTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			assert.True(t, path == "github.com/idemcheck/idemcheck" || !strings.Contains(first, "."),
				"%s imports %s", f, path)
		}
	}
}
