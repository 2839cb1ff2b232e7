package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Every fault of the faults package is reachable: a soak runs it (the
// command's --fault) or a check sends it. A fault added to the registry
// with neither fails here: wire it to one, or leave it out.
func TestEveryFaultIsReachable(t *testing.T) {
	uses := scenarios.FaultUses()
	for _, name := range faults.Names() {
		if name == "none" {
			continue
		}
		_, soakErr := ParseSoakFault(name)
		if soakErr != nil && len(uses[name]) == 0 {
			t.Errorf("fault %s is reachable from no soak and no check: a soak refuses it (%v) and no check sends it", name, soakErr)
		}
	}
	// And the soak's own list names only faults the package knows.
	for name := range soakUse {
		_, err := faults.Parse(name)
		assert.NoError(t, err, "the soak lists %s", name)
	}
	// The checks that send faults today, so a check that stops sending
	// one is seen too.
	assert.Contains(t, uses["cut-reply"], "lost-reply")
	assert.Contains(t, uses["db-cut"], "failed-attempt")
	assert.Contains(t, uses["db-hold"], "crash-lease")
}

func TestParseSoakFault(t *testing.T) {
	for _, c := range []struct {
		spec, want string
		share      float64
	}{
		{"reset@0.02", "reset@0.02", 0.02},
		{"reset@2%", "reset@0.02", 0.02},
		{"timeout", "timeout@0.01", DefaultSoakShare},
		{"cut-request@0", "cut-request@0", 0},
		{"cut-reply@1", "cut-reply@1", 1},
		{"slow-reply:delay=3s@0.1", "slow-reply:delay=3s@0.1", 0.1},
		{"latency:ms=20", "latency:jitter=0,ms=20", 0},
		{"bandwidth", "bandwidth:kbps=64", 0},
		{"db-latency:ms=5", "db-latency:ms=5", 0},
	} {
		f, err := ParseSoakFault(c.spec)
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.want, f.String(), c.spec)
		assert.InDelta(t, c.share, f.Share, 1e-12, c.spec)
		again, err := ParseSoakFault(f.String())
		require.NoError(t, err)
		assert.Equal(t, f.String(), again.String(), "String reads back")
	}
	for _, c := range []struct{ spec, want string }{
		{"nope", `unknown fault "nope" (known: `},
		{"latency:ms=x", `latency: ms="x": want whole milliseconds`},
		{"reset:x=1", `reset: unknown parameter "x"`},
		{"reset@2", `share "2" is out of range: use 0 to 1`},
		{"reset@-0.1", `share "-0.1" is out of range`},
		{"reset@lots", `share "lots" is out of range`},
		{"reset@NaN", `share "NaN" is out of range`},
		{"latency:ms=5@0.1", `latency acts on the whole client link, every attempt, not on a share of them: leave out "@0.1"`},
		{"db-latency@0.1", `db-latency acts on the whole database link`},
		{"db-cut", "db-cut is not a soak's fault: it acts once, on one chosen statement"},
		{"db-hold", "the checks crash-lease, "},
		{"none", "none is clean traffic, not a fault: leave Faults out"},
		{"db-cut", "reach it, on a target idemcheck starts (set Powers)"},
	} {
		_, err := ParseSoakFault(c.spec)
		if assert.Error(t, err, c.spec) {
			assert.Contains(t, err.Error(), c.want, c.spec)
			assert.NotContains(t, err.Error(), "faults: ", "the package's prefix is left out: the caller names its flag")
		}
	}
}

func TestCheckSoakFaults(t *testing.T) {
	parse := func(specs ...string) []SoakFault {
		var out []SoakFault
		for _, s := range specs {
			f, err := ParseSoakFault(s)
			require.NoError(t, err, s)
			out = append(out, f)
		}
		return out
	}
	assert.NoError(t, CheckSoakFaults(parse("cut-reply@0.5", "reset@0.5", "latency", "bandwidth"), false, false))
	assert.NoError(t, CheckSoakFaults(parse("db-latency"), true, false))
	assert.NoError(t, CheckSoakFaults(nil, false, false))
	assert.NoError(t, CheckSoakFaults(parse("timeout@0.1", "latency", "bandwidth"), false, true), "over TLS")
	for _, c := range []struct {
		fs     []SoakFault
		powers bool
		want   string
	}{
		{parse("reset@0.6", "timeout@0.5"), false, "the shares of first attempts add up to 1.1 (reset@0.6, timeout@0.5): at most 1"},
		{parse("reset@0.1", "reset@0.2"), false, "reset is given twice"},
		{parse("db-latency:ms=5"), false, "db-latency acts on the target's database link, which idemcheck holds only for a target it starts"},
		{[]SoakFault{{Fault: faults.Latency(0, 0), Share: 0.5}}, false, "takes no share"},
		{[]SoakFault{{Fault: faults.Reset, Share: 1.5}}, false, "share 1.5 is out of range"},
		{[]SoakFault{{Fault: faults.DBCut("", 1)}}, true, "db-cut is not a soak's fault"},
		{[]SoakFault{{Fault: faults.None}}, false, "none is clean traffic"},
	} {
		err := CheckSoakFaults(c.fs, c.powers, false)
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
	// Over TLS, the faults that act at a point of the HTTP exchange would
	// act in the handshake instead.
	for _, spec := range []string{"cut-reply@0.1", "cut-request@0.1", "reset@0.1", "slow-reply@0.1"} {
		err := CheckSoakFaults(parse("latency", spec), false, true)
		if assert.Error(t, err, spec) {
			assert.Contains(t, err.Error(), "over https:// falls in the TLS handshake")
		}
	}
}

// cut-reply is drawn first, whatever the order given, so that a seed cuts
// the same intents with or without the other faults.
func TestSoakPlanDrawsCutReplyFirst(t *testing.T) {
	single, client, db := soakPlan([]SoakFault{
		{Fault: faults.Reset, Share: 0.1}, {Fault: faults.Latency(0, 0)}, {Fault: faults.CutReply, Share: 0.1},
		{Fault: faults.DBLatency(0)}, {Fault: faults.Timeout, Share: 0.1},
	})
	var names []string
	for _, f := range single {
		names = append(names, f.Fault.Name)
	}
	assert.Equal(t, []string{"cut-reply", "reset", "timeout"}, names)
	require.Len(t, client, 1)
	assert.Equal(t, "latency", client[0].Fault.Name)
	require.Len(t, db, 1)
	assert.Equal(t, "db-latency", db[0].Fault.Name)
}
