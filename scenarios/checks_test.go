package scenarios

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	idemassert "github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/targets"
)

// Every check is whole: a unique name, its rule and a build; the
// registry's order is the run order Names gives, and Lookup finds each.
func TestEveryCheckIsOneWholeValue(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range Checks() {
		assert.NotEmpty(t, c.Name)
		assert.False(t, seen[c.Name], "%s is registered twice", c.Name)
		seen[c.Name] = true
		assert.NotEmpty(t, c.Rule, c.Name)
		assert.NotNil(t, c.build, c.Name)
		assert.Equal(t, c.Name, Names()[i])
		got, err := Lookup(c.Name)
		require.NoError(t, err)
		assert.Equal(t, c.Name, got.Name)
	}
	_, err := Lookup("burst")
	require.Error(t, err)
	known := Names()
	slices.Sort(known)
	want := `unknown check "burst" (known: ` + strings.Join(known, ", ") + ")"
	assert.Equal(t, want, err.Error())
	_, _, err = Plan([]string{"burst"}, Defaults, idemcheck.IETF(), Endpoint{}, nil, nil)
	assert.EqualError(t, err, want)
}

// The plan carries each check's rule and fault flag, skipped or not, and
// NotAsked the rest, in run order, so a history holds every rule.
func TestPlanRecordsRulesAndFaults(t *testing.T) {
	names := []string{idemcheck.CheckCrashLease, idemcheck.CheckSequentialReplay}
	_, plan, err := Plan(names, Defaults, idemcheck.IETF(), Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`)}, nil, nil)
	require.NoError(t, err)
	require.Len(t, plan, 2)
	crash, _ := Lookup(idemcheck.CheckCrashLease)
	assert.Equal(t, idemcheck.PlannedCheck{Name: crash.Name, Skip: noPowers.String(), Rule: crash.Rule, Faults: true}, plan[0])
	replay, _ := Lookup(idemcheck.CheckSequentialReplay)
	assert.Equal(t, idemcheck.PlannedCheck{Name: replay.Name, Rule: replay.Rule, CountsExecutions: true}, plan[1])

	_, plan2, err := Plan([]string{idemcheck.CheckFailedAttempt}, Defaults, idemcheck.IETF(), Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`)}, nil, nil)
	require.NoError(t, err)
	assert.True(t, plan2[0].FailureReleasesKey, "failed-attempt's plan says an answered failure releases the key")
	assert.False(t, plan[0].FailureReleasesKey)

	rest := NotAsked(plan)
	require.Len(t, rest, len(Names())-2)
	var restNames []string
	for _, pc := range rest {
		restNames = append(restNames, pc.Name)
		c, _ := Lookup(pc.Name)
		assert.Equal(t, c.Planned(""), pc)
	}
	want := slices.DeleteFunc(Names(), func(n string) bool { return slices.Contains(names, n) })
	assert.Equal(t, want, restNames, "in run order")
}

// Every step of every check's scenarios records the links its faults act
// on; a history without them (an older one) reads the same links from the
// fault's name.
func TestOlderHistoriesReadTheSameFaultLinks(t *testing.T) {
	assert.Equal(t, idemcheck.LinkClient, faults.LinkClient)
	assert.Equal(t, idemcheck.LinkDB, faults.LinkDB)
	failing := idemcheck.MustTemplate(`{"a":2}`)
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`), FailingBody: &failing}
	steps := 0
	for _, c := range Checks() {
		for _, sc := range c.build(Defaults, e, access{powers: true}) {
			for _, st := range sc.Steps {
				name := stepFault(st)
				if name == "" {
					continue
				}
				b, err := json.Marshal(idemcheck.Attempt{Check: c.Name, Fault: name})
				require.NoError(t, err)
				var old idemcheck.Attempt
				require.NoError(t, json.Unmarshal(b, &old))
				assert.Equal(t, stepLinks(st), old.FaultLinks, "%s: %s", c.Name, name)
				steps++
			}
		}
	}
	assert.Greater(t, steps, 5)
	b, _ := json.Marshal(idemcheck.Attempt{Fault: faults.CutReply.String(), FaultLinks: faultLinks(faults.CutReply)})
	var soak idemcheck.Attempt
	require.NoError(t, json.Unmarshal(b, &soak))
	assert.Equal(t, []string{idemcheck.LinkClient}, soak.FaultLinks, "the soak's cut replies")
}

// register adds c to the registry for the rest of the test.
func register(t *testing.T, c Check) {
	t.Helper()
	saved := registry
	registry = append(slices.Clone(registry), c)
	t.Cleanup(func() { registry = saved })
}

// A new check is one value: registered, it is known by name, planned with
// its rule, run, judged, and its rule reaches the report and its
// contract, held against a target that replays and broken against one
// that executes every request again.
func TestANewCheckIsOneValue(t *testing.T) {
	const name = "triple-replay"
	const rule = "A test rule: a completed request sent twice more gets its saved result both times, with one effect."
	register(t, Check{
		Name: name,
		Rule: rule,
		build: rounds(func(r int) Scenario {
			return Scenario{Rounds: r, Steps: []Step{{Attempts: 1}, {Attempts: 1}, {Attempts: 1}}}
		}),
	})
	require.Contains(t, Names(), name)

	for _, racy := range []bool{false, true} {
		rep, h := certifyOne(t, name, racy)
		require.Equal(t, []idemcheck.PlannedCheck{{Name: name, Rule: rule}}, h.Run.Checks)
		require.Len(t, h.Attempts, 3*Defaults.Rounds)
		for _, in := range h.Intents {
			assert.Equal(t, name, in.Check, "Plan labels a check's scenarios with its name")
		}
		require.Len(t, rep.Checks, 1)
		assert.Equal(t, rule, rep.Checks[0].Rule)
		require.Len(t, rep.Contract, len(Names()))
		assert.Equal(t, name, rep.Contract[0].Check)
		assert.Equal(t, rule, rep.Contract[0].Rule)
		if racy {
			assert.Equal(t, idemcheck.Fail, rep.Checks[0].Status)
			assert.Equal(t, idemcheck.RuleBroken, rep.Contract[0].Status)
			assert.Contains(t, kindsOf(rep.Anomalies), idemcheck.FreshResultOnReplay)
		} else {
			assert.Equal(t, idemcheck.Pass, rep.Checks[0].Status, rep.Checks[0].Reason)
			assert.Equal(t, idemcheck.RuleHeld, rep.Contract[0].Status)
		}
	}
}

// certifyOne plans the check called name under the IETF policy, runs it
// against a loopback target that replays (or, racy, executes every request
// again) and returns the report and the history: a check's own test.
func certifyOne(t *testing.T, name string, racy bool) (idemcheck.Report, *idemcheck.History) {
	t.Helper()
	target := newSeenTarget(t)
	target.racy = racy
	e := Endpoint{Base: target.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
		Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)}
	p := idemcheck.IETF()
	scs, plan, err := Plan([]string{name}, Defaults, p, e, nil, nil)
	require.NoError(t, err)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: p, Checks: plan, NotAsked: NotAsked(plan)}}
	r := &Runner{Endpoint: e, Policy: p, Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1}
	require.NoError(t, r.Run(context.Background(), scs, h))
	return idemassert.Report(h), h
}

func kindsOf(as []idemcheck.Anomaly) []idemcheck.Kind {
	var out []idemcheck.Kind
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

// noLinkPowers stands for a target the harness started on a database
// whose link it cannot fault (MariaDB), for planning only.
type noLinkPowers struct{ targets.Powers }

func (noLinkPowers) NoDBLink() string {
	return "the database is MariaDB, whose link idemcheck does not fault"
}

// A check that applies but cannot send all of itself says what it left
// out and why, in the plan: by URL, failed-attempt sends only the failing
// body and concurrent-burst only timed bursts; with the link, all of each.
func TestPlanSaysWhatACheckCouldNotSend(t *testing.T) {
	failing := idemcheck.MustTemplate(`{"a":402}`)
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`), FailingBody: &failing}
	names := []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckFailedAttempt, idemcheck.CheckSequentialReplay}
	partial := func(powers targets.Powers, e Endpoint) map[string]string {
		_, plan, err := Plan(names, Defaults, idemcheck.IETF(), e, powers, nil)
		require.NoError(t, err)
		out := map[string]string{}
		for _, pc := range plan {
			if pc.Skip == "" {
				out[pc.Name] = pc.Partial
			}
		}
		return out
	}
	byURL := partial(nil, e)
	assert.Contains(t, byURL[idemcheck.CheckConcurrentBurst], "timed at the client")
	assert.Contains(t, byURL[idemcheck.CheckConcurrentBurst], "no burst wrote in turn")
	assert.Contains(t, byURL[idemcheck.CheckConcurrentBurst], noPowers.String(), "names what would let it")
	assert.Contains(t, byURL[idemcheck.CheckFailedAttempt], "cut database link")
	assert.Empty(t, byURL[idemcheck.CheckSequentialReplay], "a check that sends all of itself says nothing")

	mariadb := partial(noLinkPowers{}, e)
	assert.Contains(t, mariadb[idemcheck.CheckFailedAttempt], "MariaDB")
	assert.Contains(t, mariadb[idemcheck.CheckConcurrentBurst], "MariaDB")

	started := partial(stubPowers{}, e)
	assert.Empty(t, started[idemcheck.CheckConcurrentBurst])
	assert.Empty(t, started[idemcheck.CheckFailedAttempt])
	noFailing := partial(stubPowers{}, Endpoint{Body: e.Body})
	assert.Contains(t, noFailing[idemcheck.CheckFailedAttempt], "FailingBody", "the half a failing body would add")

	// Any check that releases copies together says its bursts were timed:
	// a webhook's concurrent deliveries too, beside its own half.
	webhook := idemcheck.Webhook()
	_, plan, err := Plan([]string{idemcheck.CheckWebhookRedeliver}, Defaults, webhook,
		Endpoint{Body: idemcheck.MustTemplate(`{"eventId":"{{key}}"}`)}, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, plan[0].Partial, "timed at the client")
	assert.NotContains(t, plan[0].Partial, "in turn")
	assert.Contains(t, plan[0].Partial, "no delivery failed inside the consumer")

	// Said in a program's words.
	_, plan, err = Plan([]string{idemcheck.CheckFailedAttempt}, Defaults, idemcheck.IETF(), e, nil,
		map[idemcheck.Field]idemcheck.Word{"Powers": {Name: "--cmd", Set: "--cmd or --image"}})
	require.NoError(t, err)
	assert.Contains(t, plan[0].Partial, "let idemcheck start it (--cmd or --image)")
}

// A hold is a one-attempt step whose statement a db-hold holds, with its
// retry as the next step; a database-write choice goes with a database
// fault; and every check's every step sends in a way round knows. Round
// refuses a hold without a retry step and a send it does not know.
func TestEveryStepSaysWhatItDoesInWaysRoundKnows(t *testing.T) {
	failing, invalid := idemcheck.MustTemplate(`{"a":2}`), idemcheck.MustTemplate(`{"a":3}`)
	e := Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`), FailingBody: &failing, InvalidBody: &invalid,
		Other: &OtherEndpoint{Method: "POST", Path: idemcheck.MustTemplate("/other")}}
	holds := 0
	for _, c := range Checks() {
		for _, sc := range c.build(Defaults, e, access{powers: true, downstream: true}) {
			for i, st := range sc.Steps {
				assert.NotEqual(t, "Send("+strconv.Itoa(int(st.Send))+")", st.Send.String(), "%s step %d", c.Name, i+1)
				if st.DBFaultAt != FaultsOwnWrite {
					assert.False(t, st.DBFault.IsNone(), "%s step %d: %v with no database fault", c.Name, i+1, st.DBFaultAt)
				}
				if !st.Send.holds() {
					continue
				}
				holds++
				assert.Equal(t, 1, st.Attempts, "%s step %d", c.Name, i+1)
				assert.Equal(t, "db-hold", st.DBFault.Name, "%s step %d", c.Name, i+1)
				assert.Less(t, i+1, len(sc.Steps), "%s step %d: a hold needs its retry step after it", c.Name, i+1)
			}
		}
	}
	assert.Equal(t, 4, holds, "crash-lease, crash-after-commit, in-flight-retry, lease-fencing")

	target := newSeenTarget(t)
	r := &Runner{Endpoint: Endpoint{Base: target.base, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
		Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)}, Policy: idemcheck.IETF(), Timeout: 5 * time.Second, Protocol: wire.ProtocolHTTP1}
	for _, st := range []Step{{Attempts: 1, Send: HoldInFlight}, {Attempts: 1, Send: Send(99)}} {
		err := r.Run(context.Background(), []Scenario{{Check: "made-up", Rounds: 1, Steps: []Step{st}}}, &idemcheck.History{})
		assert.ErrorContains(t, err, "step", "%v", st.Send)
	}
}
