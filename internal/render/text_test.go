package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

func report() idemcheck.Report {
	a := func(intent string) idemcheck.Anomaly {
		ev := []idemcheck.Evidence{}
		for i := 1; i <= 6; i++ {
			ev = append(ev, idemcheck.Evidence{Attempt: i, Step: 1, Status: 201, Body: `{"orderId":"o` + string(rune('0'+i)) + `"}`})
		}
		return idemcheck.Anomaly{Kind: idemcheck.DuplicateEffect, Check: "concurrent-burst", Intent: intent, Key: "k-" + intent,
			Explanation: "32 attempts sent key k for one intent, and the effect query counts 2 effects.",
			Attempts:    []int{1, 2, 3, 4, 5, 6}, Evidence: ev}
	}
	return idemcheck.Report{
		Verdict: idemcheck.Fail,
		Target:  idemcheck.Target{Name: "orders", URL: "http://127.0.0.1:8080", Method: "POST", Path: "/orders", Database: "db"},
		Checks: []idemcheck.CheckResult{
			{Name: "concurrent-burst", Status: idemcheck.Fail, Anomalies: []int{0, 1}, Intents: 5, Attempts: 160},
			{Name: "cross-endpoint", Status: idemcheck.Skip, Reason: "no second endpoint"},
		},
		Anomalies: []idemcheck.Anomaly{a("ic-1"), a("ic-2")},
		Stats:     idemcheck.Stats{Attempts: 160, DurationMS: 1500, BurstSpreadMedianUS: 9, BurstProtocol: "h2"},
	}
}

func TestWriteGroupsAnomaliesAndCapsEvidence(t *testing.T) {
	var b bytes.Buffer
	WriteText(&b, report(), false)
	out := b.String()
	assert.NotContains(t, out, "\033[", "no colour when asked for none")
	assert.Contains(t, out, "FAIL     concurrent-burst   5 intents, 160 attempts, 2 anomalies (duplicate-effect x2)")
	assert.Contains(t, out, "SKIP     cross-endpoint     no second endpoint")
	assert.Equal(t, 1, strings.Count(out, "duplicate-effect in concurrent-burst"), "one anomaly of a kind in full")
	assert.Contains(t, out, "and in 1 more intent of concurrent-burst: ic-2")
	assert.Contains(t, out, "… 2 more witnesses: attempts 5, 6", "evidence capped at MaxEvidence")
	assert.Contains(t, out, "verdict FAIL: 2 anomalies, 160 attempts in 1.5s, client burst release spread 9 us (median, h2)\n")
	assert.NotContains(t, out, "seed", "a certification makes no random choice: no seed is reported")

	b.Reset()
	WriteText(&b, report(), true)
	assert.Contains(t, b.String(), "\033[31m", "colour on a terminal")
}

func TestProgressOffTerminalPrintsALinePerCheck(t *testing.T) {
	var b bytes.Buffer
	p := &Progress{W: &b, Label: "orders"}
	for _, c := range []string{"concurrent-burst", "concurrent-burst", "lost-reply"} {
		p.Update(Step{Check: c, Round: 1, Rounds: 2, Sent: 1, Total: 10})
	}
	p.Done()
	assert.Equal(t, "orders: concurrent-burst ...\norders: lost-reply ...\n", b.String())
}

func TestWriteInconclusive(t *testing.T) {
	r := idemcheck.Report{
		Verdict: idemcheck.Inconclusive,
		Target:  idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Checks: []idemcheck.CheckResult{
			{Name: "failed-attempt", Status: idemcheck.Inconclusive, Reason: "its fault never landed"},
			{Name: "sequential-replay", Status: idemcheck.Pass, Proof: "3 of 3 rounds happened as meant"},
		},
	}
	var b bytes.Buffer
	WriteText(&b, r, false)
	out := b.String()
	assert.Contains(t, out, "INCONCL  failed-attempt     its fault never landed")
	assert.Contains(t, out, "3 of 3 rounds happened as meant")
	assert.Contains(t, out, "verdict INCONCLUSIVE (some check's scenario did not happen)")
}

// A target that died on its own: the report names its output file and
// shows each exit with its status, and the last output of the first few.
func TestWriteShowsTargetExits(t *testing.T) {
	r := report()
	r.Target.Log = "/tmp/target.log"
	exit := func(round int) idemcheck.Event {
		return idemcheck.Event{Kind: idemcheck.TargetExited, Check: "failed-attempt", Round: round, Step: 1,
			ExitStatus: "exit status 1", LogTail: "orders: serving\norders: database connection terminated unexpectedly: EOF"}
	}
	for round := 1; round <= MaxExitTails+1; round++ {
		r.TargetExits = append(r.TargetExits, exit(round))
	}
	var b bytes.Buffer
	WriteText(&b, r, false)
	out := b.String()
	assert.Contains(t, out, "  target output in /tmp/target.log\n")
	assert.Contains(t, out, "the target exited on its own 4 times")
	for round := 1; round <= MaxExitTails+1; round++ {
		assert.Contains(t, out, "instance 0 during failed-attempt round "+string(rune('0'+round))+" step 1: exit status 1\n")
	}
	assert.Equal(t, MaxExitTails, strings.Count(out, "      | orders: database connection terminated unexpectedly: EOF\n"), "the tail of the first few exits")
	assert.Contains(t, out, "    its whole output: /tmp/target.log\n")
	assert.Less(t, strings.Index(out, "exited on its own"), strings.Index(out, "verdict FAIL"))

	b.Reset()
	WriteText(&b, report(), false)
	assert.NotContains(t, b.String(), "exited on its own", "nothing about exits when the target lived")
	assert.NotContains(t, b.String(), "target output", "no log line without a log")
}

func TestColourFollowsNoColorAndForceColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	var buf bytes.Buffer // not a terminal
	assert.False(t, Colour(false, &buf, env()), "no terminal, no colour")
	assert.True(t, Colour(false, &buf, env("FORCE_COLOR", "1")))
	assert.True(t, Colour(false, &buf, env("FORCE_COLOR", "true")))
	assert.False(t, Colour(false, &buf, env("FORCE_COLOR", "0")))
	assert.False(t, Colour(false, &buf, env("FORCE_COLOR", "1", "NO_COLOR", "1")), "NO_COLOR wins")
	assert.False(t, Colour(true, &buf, env("FORCE_COLOR", "1")), "--no-color wins")
}

// A soak's report: the figures, the estimate as an assumption, the
// verdict; and without an effect query, that duplicates went uncounted.
func TestWriteSoak(t *testing.T) {
	res := &idemcheck.SoakResult{Intents: 400, Attempts: 440, Cut: 40, Counted: 400, Duplicates: 1, Rate: 200, Throughput: 190,
		Success: 0.9, TimeoutRate: 0.1, SucceededShare: 1, DuplicatesPerMillion: 2500, Duration: 2 * time.Second}
	rep := idemcheck.SoakReport{Verdict: idemcheck.Fail, Seed: 3, Soak: res,
		Target:   idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Estimate: &idemcheck.Cost{Inputs: idemcheck.CostInputs{RequestsPerDay: 200 * 86400, TimeoutRate: 0.1, SucceededShare: 1}, DuplicatesPerDay: 1728000}}
	var b strings.Builder
	WriteSoak(&b, rep, true)
	out := b.String()
	assert.Contains(t, out, "soak of POST http://127.0.0.1:1/orders, seed 3\n")
	assert.Contains(t, out, "  400 intents in 2.0s: 200 requests/s sent, 190/s answered with success (90.0%)\n")
	assert.Contains(t, out, "  40 replies cut after commit and retried with the same key (10.00%); 100% of those retries were replays; 0 never answered\n")
	assert.Contains(t, out, "  effects counted for 400 intents: 1 duplicated, 0 lost: 2500.0 duplicates per million intents\n")
	assert.Contains(t, out, "the cut share was injected by this soak")
	assert.True(t, strings.HasSuffix(out, "  verdict FAIL\n"), out)

	b.Reset()
	rep.Estimate, rep.Verdict = nil, idemcheck.Pass
	WriteSoak(&b, rep, false)
	assert.Contains(t, b.String(), "effects not counted (no --effect-sql)")
	assert.NotContains(t, b.String(), "cut share was injected")
	assert.True(t, strings.HasSuffix(b.String(), "  verdict PASS\n"))

	// Cut replies alone: no list of faults, the cut line as it always was.
	res.Faults = []idemcheck.SoakFaultResult{{Fault: "cut-reply", Link: idemcheck.LinkClient, Share: 0.1, Attempts: 40, Retried: 40, Replayed: 40}}
	b.Reset()
	WriteSoak(&b, rep, true)
	assert.Contains(t, b.String(), "  40 replies cut after commit and retried")
	assert.NotContains(t, b.String(), "faults:")
}

// A soak of effects that land after the reply says how they settled, the
// late duplicates its recount found (the first ones with both counts),
// what it could not judge, and the estimate with the measured late
// duplicates said apart and passed on to idemcheck estimate.
func TestWriteSoakSettle(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	late := func(intent string) idemcheck.Anomaly {
		return idemcheck.Anomaly{Kind: idemcheck.LateDuplicateEffect, Check: idemcheck.CheckSoak, Intent: intent,
			Observed: map[string]any{"effects": int64(1), "effects_at": at, "late_effects": int64(2), "late_at": at.Add(9876 * time.Millisecond)}}
	}
	res := &idemcheck.SoakResult{Intents: 400, Attempts: 440, Cut: 40, Counted: 400, Rate: 200, Throughput: 190,
		Success: 0.9, TimeoutRate: 0.1, SucceededShare: 1, Duration: 2 * time.Second,
		Recounted: 400, LateDuplicates: 4, LateDuplicateRate: 0.01, Pending: 2,
		Anomalies: []idemcheck.Anomaly{late("ic-1"), late("ic-2"), late("ic-3"), late("ic-4")}}
	rep := idemcheck.SoakReport{Verdict: idemcheck.Fail, Seed: 3, Soak: res,
		Target: idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/payments"},
		Estimate: &idemcheck.Cost{Inputs: idemcheck.CostInputs{RequestsPerDay: 200 * 86400, TimeoutRate: 0.1, SucceededShare: 1, LateDuplicateRate: 0.01},
			LateDuplicatesPerDay: 172800, DuplicatesPerDay: 1728000 + 172800}}
	var b strings.Builder
	WriteSoak(&b, rep, true)
	out := b.String()
	assert.Contains(t, out, "  effects counted for 400 intents: 0 duplicated, 0 lost: 0.0 duplicates per million intents\n"+
		"  effects counted again for 400 intents once the settle bound had passed after the load: 4 late duplicates (1.00%), effects that appeared after their intent was judged\n"+
		"    late-duplicate-effect ic-1: 1 effects when judged, 2 when counted again 9.876s later\n"+
		"    late-duplicate-effect ic-2: 1 effects when judged, 2 when counted again 9.876s later\n"+
		"    late-duplicate-effect ic-3: 1 effects when judged, 2 when counted again 9.876s later\n"+
		"    and 1 more\n"+
		"  not judged: 2 intents answered with an accepted status whose effect may still be pending, 0 whose count was still changing at the settle bound\n", out)
	assert.Contains(t, out, "would make 1900800 duplicates a day (172800 of them late duplicates, the 1.00% of intents this soak measured done again after the reply)")
	assert.Contains(t, out, "    idemcheck estimate --requests-per-day N --timeout-rate SHARE --succeeded-share 1.00 --late-duplicate-rate 0.0100\n")

	// Counted once settled after the load: the passes, and whether the
	// bound ran out first.
	res.Recounted, res.LateDuplicates, res.Anomalies, res.Pending, res.Unsettled = 0, 0, nil, 0, 3
	res.Settle = &idemcheck.SoakSettle{Bound: 10 * time.Second, Quiet: time.Second, Passes: 4, Waited: 3456789 * time.Microsecond, Settled: false}
	rep.Estimate = nil
	b.Reset()
	WriteSoak(&b, rep, true)
	assert.Contains(t, b.String(), "  effects counted once settled: 4 passes over 3.457s after the load (bound 10s, quiet period 1s); the bound ran out with counts still changing\n"+
		"  not judged: 0 intents answered with an accepted status whose effect may still be pending, 3 whose count was still changing at the settle bound\n")
	res.Settle.Settled, res.Settle.Passes, res.Unsettled = true, 1, 0
	b.Reset()
	WriteSoak(&b, rep, true)
	assert.Contains(t, b.String(), "  effects counted once settled: 1 pass over 3.457s after the load (bound 10s, quiet period 1s); settled: the last pass counted what the one before it did\n")
	assert.NotContains(t, b.String(), "not judged")

	// No cut reply, late duplicates measured: the estimate rests on them
	// alone.
	res.Cut, res.TimeoutRate, res.Settle = 0, 0, nil
	rep.Estimate = &idemcheck.Cost{Inputs: idemcheck.CostInputs{RequestsPerDay: 200 * 86400, LateDuplicateRate: 0.01}, LateDuplicatesPerDay: 172800, DuplicatesPerDay: 172800}
	b.Reset()
	WriteSoak(&b, rep, true)
	assert.Contains(t, b.String(), "  1.00% of this soak's intents were done again after the reply (measured). At 17280000 requests a day that is\n"+
		"  172800 duplicates a day, whatever the client does.")
	assert.NotContains(t, b.String(), "injected")
}

// A soak under many faults states each with what it hit, and no longer
// calls every lost reply a cut one.
func TestWriteSoakFaults(t *testing.T) {
	res := &idemcheck.SoakResult{Intents: 400, Attempts: 480, Cut: 80, Counted: 400, Rate: 200, Throughput: 190,
		Success: 0.8, TimeoutRate: 0.2, SucceededShare: 0.5, Duration: 2 * time.Second,
		Faults: []idemcheck.SoakFaultResult{
			{Fault: "cut-reply", Link: idemcheck.LinkClient, Share: 0.1, Attempts: 40, Retried: 40, Replayed: 40},
			{Fault: "cut-request", Link: idemcheck.LinkClient, Share: 0.1, Attempts: 40, Retried: 40},
			{Fault: "slow-reply:delay=2s", Link: idemcheck.LinkClient, Share: 0.05, Attempts: 20},
			{Fault: "latency:jitter=0,ms=20", Link: idemcheck.LinkClient, WholeLink: true, Attempts: 480},
			{Fault: "db-latency:ms=5", Link: idemcheck.LinkDB, WholeLink: true, Attempts: 480},
		}}
	rep := idemcheck.SoakReport{Verdict: idemcheck.Pass, Seed: 3, Soak: res,
		Target:   idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Estimate: &idemcheck.Cost{Inputs: idemcheck.CostInputs{RequestsPerDay: 200 * 86400, TimeoutRate: 0.2, SucceededShare: 0.5}}}
	var b strings.Builder
	WriteSoak(&b, rep, true)
	out := b.String()
	assert.Contains(t, out, "  80 first attempts left without a reply and retried with the same key (20.00%); 50% of those retries were replays; 0 never answered\n"+
		"  faults:\n"+
		"    cut-reply               40 first attempts (10.00%, share 0.1): 40 left without a reply and retried, 40 of those retries replays\n"+
		"    cut-request             40 first attempts (10.00%, share 0.1): 40 left without a reply and retried, 0 of those retries replays\n"+
		"    slow-reply:delay=2s     20 first attempts (5.00%, share 0.05): 0 left without a reply and retried\n"+
		"    latency:jitter=0,ms=20  the whole client link: every attempt (480)\n"+
		"    db-latency:ms=5         the whole database link: every attempt (480)\n", out)
	assert.Contains(t, out, "the share of first attempts without a reply was injected by this soak, not measured from the API. If 20.00% of your real requests timed out\n")

	// First attempts that lost their reply to no fault are said apart.
	res.Cut = 83
	b.Reset()
	WriteSoak(&b, rep, true)
	assert.Contains(t, b.String(), "  faults:\n    no fault                3 first attempts left without a reply and retried\n    cut-reply  ")
}

// A target that outlived a cut database link without recovering is listed
// with the exits, in its own words: what the fresh request got, and no
// exit status it never had.
func TestWriteShowsTargetThatDidNotRecover(t *testing.T) {
	r := report()
	r.TargetExits = []idemcheck.Event{
		{Kind: idemcheck.TargetExited, Check: "failed-attempt", Round: 1, Step: 1, ExitStatus: "exit status 1"},
		{Kind: idemcheck.TargetUnrecovered, Check: "failed-attempt", Round: 2, Step: 2,
			Detail: "after its database link was cut at \"COMMIT\", the target answered a fresh request (a new key, probe 1 of 4 sent together) 500 connection already closed"},
	}
	var b bytes.Buffer
	WriteText(&b, r, false)
	out := b.String()
	assert.Contains(t, out, "the target exited on its own 1 time, and did not recover from a cut database link 1 time (it failed fresh requests until restarted)")
	assert.Contains(t, out, "    instance 0 during failed-attempt round 1 step 1: exit status 1\n")
	assert.Contains(t, out, "    during failed-attempt round 2 step 2: after its database link was cut at \"COMMIT\", the target answered a fresh request (a new key, probe 1 of 4 sent together) 500 connection already closed\n")
	assert.NotContains(t, out, "ended")
}

// Two anomalies of one kind on the same intent (key-syntax finds one per
// malformed key) are both shown in full, never as "1 more" of the
// headline's own intent.
func TestWriteShowsAnotherAnomalyOfTheSameIntentInFull(t *testing.T) {
	r := report()
	r.Anomalies[1].Intent = r.Anomalies[0].Intent
	r.Anomalies[1].Explanation = "a second, different finding about the same intent."
	var b bytes.Buffer
	WriteText(&b, r, false)
	out := b.String()
	assert.Equal(t, 2, strings.Count(out, "duplicate-effect in concurrent-burst, intent ic-1"), out)
	assert.Contains(t, out, "a second, different finding")
	assert.NotContains(t, out, "more intents")
}

// remarksReport is a passing key-syntax check with two malformed keys
// accepted in its one intent: conformance remarks apart from the verdict.
func remarksReport() idemcheck.Report {
	remark := func(attempt int, what string) idemcheck.Anomaly {
		return idemcheck.Anomaly{Kind: idemcheck.MalformedKeyAccepted, Class: idemcheck.ConformanceFinding, Check: "key-syntax", Intent: "ks-1", Key: "k-1",
			Explanation: "attempt " + what + " was executed under a key that is not a valid key.", Attempts: []int{attempt},
			Evidence: []idemcheck.Evidence{{Attempt: attempt, Step: 1, Status: 201, Body: `{"id":"o1"}`}}}
	}
	return idemcheck.Report{
		Verdict: idemcheck.Pass,
		Target:  idemcheck.Target{URL: "http://127.0.0.1:8080", Method: "POST", Path: "/orders"},
		Checks: []idemcheck.CheckResult{
			{Name: "key-syntax", Status: idemcheck.Pass, Anomalies: []int{}, Remarks: []int{0, 1}, Intents: 1, Attempts: 5, Proof: "1 of 1 rounds happened as meant"},
		},
		Remarks: []idemcheck.Anomaly{remark(2, "2 (a key of 256 characters)"), remark(3, "3 (a key with a comma)")},
		Stats:   idemcheck.Stats{Attempts: 5, DurationMS: 100},
	}
}

func TestWriteShowsEveryRemarkApartFromTheVerdict(t *testing.T) {
	var b bytes.Buffer
	WriteText(&b, remarksReport(), false)
	out := b.String()
	assert.Contains(t, out, "PASS     key-syntax         1 intents, 5 attempts, 2 remarks apart from the verdict (malformed-key-accepted x2)")
	assert.Contains(t, out, "2 conformance remarks, apart from the verdict: nothing was lost or duplicated")
	// Both remarks are in one intent: each is shown in full, never as
	// "1 more" naming the intent already shown.
	assert.Contains(t, out, "attempt 2 (a key of 256 characters)")
	assert.Contains(t, out, "attempt 3 (a key with a comma)")
	assert.NotContains(t, out, "more intent")
	assert.Contains(t, out, "verdict PASS: 0 anomalies (and 2 remarks apart from it)")
}

// A check that passed on part of itself says, in every format, what it
// did not send; a skipped one says only why it was skipped.
func TestEveryFormatSaysWhatACheckDidNotSend(t *testing.T) {
	r := idemcheck.Report{
		Verdict: idemcheck.Pass,
		Target:  idemcheck.Target{URL: "http://127.0.0.1:1", Method: "POST", Path: "/orders"},
		Checks: []idemcheck.CheckResult{
			{Name: "failed-attempt", Status: idemcheck.Pass, Anomalies: []int{}, Intents: 2, Attempts: 4, Proof: "2 of 2 rounds happened as meant",
				Partial: "only failures the target answers were sent"},
			{Name: "crash-lease", Status: idemcheck.Skip, Anomalies: []int{}, Reason: "needs --cmd", Partial: "never shown"},
		},
	}
	var b bytes.Buffer
	WriteText(&b, r, false)
	assert.Contains(t, b.String(), "not sent: only failures the target answers were sent")
	for name, write := range map[string]func(*bytes.Buffer) error{
		"markdown": func(b *bytes.Buffer) error { return WriteMarkdown(b, []idemcheck.Report{r}) },
		"junit":    func(b *bytes.Buffer) error { return WriteJUnit(b, []idemcheck.Report{r}) },
		"html":     func(b *bytes.Buffer) error { return WriteHTML(b, []*HTMLPage{NewHTMLPage(r, nil)}) },
	} {
		b.Reset()
		assert.NoError(t, write(&b), name)
		assert.Contains(t, strings.ToLower(b.String()), "not sent: only failures the target answers were sent", name)
		assert.NotContains(t, b.String(), "never shown", name)
	}
}
