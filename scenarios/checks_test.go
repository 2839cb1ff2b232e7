package scenarios

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
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
				if !st.Send.Holds() {
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

}
