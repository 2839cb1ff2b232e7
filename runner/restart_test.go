package runner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The restart-class scenarios: what each step does to the target, and the
// fault names their first attempts carry.
func TestRestartClassScenarios(t *testing.T) {
	rr := scenarios.RestartReplay(3)
	require.Len(t, rr.Steps, 2)
	assert.Equal(t, scenarios.KillAndRestart, rr.Steps[0].Then)
	assert.Equal(t, scenarios.KillAfterReply, stepFault(rr.Steps[0]))
	assert.Empty(t, stepFault(rr.Steps[1]))

	cac := scenarios.CrashAfterCommit(1)
	assert.Equal(t, 2, cac.Rounds, "one round per landing window at least")
	assert.Equal(t, scenarios.HoldKillAfterCommit, cac.Steps[0].Send)
	assert.Equal(t, scenarios.NthByRound, cac.Steps[0].DBFaultAt)
	assert.Equal(t, scenarios.RetryWhileInProgress, cac.Steps[1].Send)
	assert.Equal(t, "kill-after-commit+hold-reply+"+cac.Steps[0].DBFault.String(), stepFault(cac.Steps[0]))

	ifr := scenarios.InFlightRetry(2)
	assert.Equal(t, scenarios.HoldInFlight, ifr.Steps[0].Send)
	assert.Equal(t, ifr.Steps[0].DBFault.String(), stepFault(ifr.Steps[0]))
	assert.Equal(t, "kill-at-commit+"+scenarios.CrashLease(1).Steps[0].DBFault.String(), stepFault(scenarios.CrashLease(1).Steps[0]))

	// And the links those faults act on, as the attempts record them.
	assert.Nil(t, stepLinks(rr.Steps[0]), "a kill alone acts on no link")
	assert.Equal(t, []string{idemcheck.LinkClient, idemcheck.LinkDB}, stepLinks(cac.Steps[0]), "the reply hold and the COMMIT hold")
	assert.Equal(t, []string{idemcheck.LinkDB}, stepLinks(ifr.Steps[0]))
	assert.Equal(t, []string{idemcheck.LinkDB}, stepLinks(scenarios.CrashLease(1).Steps[0]))
	assert.Equal(t, []string{idemcheck.LinkClient}, stepLinks(scenarios.LostReply(1).Steps[0]))

	for _, sql := range []string{"COMMIT", " end;", "INSERT INTO t VALUES (1)", "select 1"} {
		assert.NotEmpty(t, landingOf(sql), sql)
	}
	assert.Equal(t, idemcheck.LandedCommit, landingOf("commit"))
	assert.Equal(t, idemcheck.LandedAutocommitWrite, landingOf("update t set a = 1"))
}

// Every step of every check's scenarios records the links its faults act
// on; a history without them (an older one) reads the same links from the
// fault's name.
func TestOlderHistoriesReadTheSameFaultLinks(t *testing.T) {
	assert.Equal(t, idemcheck.LinkClient, faults.LinkClient)
	assert.Equal(t, idemcheck.LinkDB, faults.LinkDB)
	failing := idemcheck.MustTemplate(`{"a":2}`)
	e := scenarios.Endpoint{Body: idemcheck.MustTemplate(`{"a":1}`), FailingBody: &failing}
	steps := 0
	// Every check that applies to a started target with a lease, so the
	// fault checks are all planned.
	p := idemcheck.IETF()
	p.Lease = time.Second
	scs, _, err := scenarios.Plan(scenarios.Names(), scenarios.Defaults, p, e, stubPowers{}, nil)
	require.NoError(t, err)
	for _, sc := range scs {
		for _, st := range sc.Steps {
			name := stepFault(st)
			if name == "" {
				continue
			}
			b, err := json.Marshal(idemcheck.Attempt{Check: sc.Check, Fault: name})
			require.NoError(t, err)
			var old idemcheck.Attempt
			require.NoError(t, json.Unmarshal(b, &old))
			assert.Equal(t, stepLinks(st), old.FaultLinks, "%s: %s", sc.Check, name)
			steps++
		}
	}
	assert.Greater(t, steps, 5)
	b, _ := json.Marshal(idemcheck.Attempt{Fault: faults.CutReply.String(), FaultLinks: faultLinks(faults.CutReply)})
	var soak idemcheck.Attempt
	require.NoError(t, json.Unmarshal(b, &soak))
	assert.Equal(t, []string{idemcheck.LinkClient}, soak.FaultLinks, "the soak's cut replies")
}

// stubPowers stands for a target the harness started, for planning only:
// the planner asks whether there are powers, never uses them.
type stubPowers struct{ targets.Powers }
