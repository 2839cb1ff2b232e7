package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// round sends one round of sc with a fresh intent. It reports whether one
// of its bursts was loose.
func (s *session) round(ctx context.Context, sc scenarios.Scenario, round int) (loose bool, err error) {
	if kills(sc) {
		// Work still landing for the check's earlier intents (their
		// background jobs) lands first: a kill now would strand it, where
		// the round means to break its own intent's. (A fault on the
		// link meets only the round's intent's writes: see marks.go.)
		if err := s.awaitLanded(ctx, s.pending); err != nil {
			return false, err
		}
	}
	in := s.newIntent(sc.Check, round)
	// acted: an earlier step of the intent may have taken effect (it was
	// answered with success, or its reply was cut, or its database write
	// was let through before a fault), so a later success may be a replay,
	// which writes less than an execution: its writes are not counted (do).
	acted := false
	for i := 0; i < len(sc.Steps); i++ {
		s.step = nil
		st := s.resolve(sc.Check, sc.Steps[i], round)
		req, key := s.request(in, st.Variant)
		if !slices.Contains(s.keys, key) {
			s.keys = append(s.keys, key)
		}
		addr, err := s.addr(st.Fault)
		if err != nil {
			return false, fmt.Errorf("fault %s: %w", st.Fault.Name, err)
		}
		base := idemcheck.Attempt{
			Intent: in.ID, Key: key, Check: sc.Check, Round: round, Step: i + 1, Variant: st.Variant,
			Fault: stepFault(st), FaultLinks: stepLinks(st),
		}
		s.describe(&base, req, scenarios.Fingerprint(req.Method, req.Path, req.Body))
		if st.DelayBefore > 0 {
			if err := sleep(ctx, st.DelayBefore); err != nil {
				return false, err
			}
		}
		switch st.Send {
		case scenarios.HoldCrash, scenarios.HoldStall, scenarios.HoldKillAfterCommit, scenarios.HoldInFlight:
			// The held step and the retry that meets it are one piece of
			// choreography: the retry is the next step.
			if i+1 >= len(sc.Steps) {
				return false, fmt.Errorf("scenario %s: a held step needs a retry step after it", sc.Check)
			}
			if err := s.holdAndRetry(ctx, in, st, sc.Steps[i+1], addr, req, base); err != nil {
				return false, err
			}
			i++
		case scenarios.Together, scenarios.TogetherInTurn:
			l, err := s.burst(ctx, in, st, addr, req, base)
			if err != nil {
				return false, err
			}
			loose = loose || l
		case scenarios.OneByOne, scenarios.RetryWhileInProgress:
			if err := s.oneByOne(ctx, st, addr, req, base, !acted); err != nil {
				return false, err
			}
		default:
			return false, fmt.Errorf("scenario %s step %d: unknown send %v", sc.Check, i+1, st.Send)
		}
		if err := s.afterStep(ctx, st, req, base); err != nil {
			return false, err
		}
		answered := true
		for _, a := range s.step {
			answered = answered && a.Outcome == idemcheck.Replied
			acted = acted || a.Outcome == idemcheck.Replied && a.Status >= 200 && a.Status < 300
		}
		acted = acted || !st.Fault.IsNone() || !st.DBFault.IsNone() && st.DBFault.Name != "db-cut"
		if err := s.watch(ctx, idemcheck.Event{Check: sc.Check, Intent: in.ID, Round: round, Step: i + 1}, answered); err != nil {
			return false, err
		}
		if s.Progress != nil {
			s.Progress(Progress{Check: sc.Check, Round: round, Rounds: sc.Rounds, Sent: s.sent, Total: s.total})
		}
	}
	s.takeCalls(in)
	if s.cut {
		placed := idemcheck.Event{Check: sc.Check, Intent: in.ID, Round: round, Step: len(sc.Steps)}
		if err := s.recovered(ctx, placed, s.cutSQL); err != nil {
			return false, err
		}
	}
	return loose, s.observe(ctx, in)
}

// kills reports whether a round of sc kills the target.
func kills(sc scenarios.Scenario) bool {
	for _, st := range sc.Steps {
		if st.Send == scenarios.HoldCrash || st.Send == scenarios.HoldKillAfterCommit || st.Then.Has(scenarios.KillAndRestart) {
			return true
		}
	}
	return false
}

// newIntent starts the round's intent, with a fresh key, records it, and
// clears what the session knows of the round before.
func (s *session) newIntent(check string, round int) idemcheck.Intent {
	in := idemcheck.Intent{
		ID:    fmt.Sprintf("ic-%s-%d", s.run, len(s.intents)+1),
		Key:   uuid.NewString(),
		Seq:   len(s.intents) + 1,
		Check: check,
		Round: round,
	}
	s.intents = append(s.intents, in)
	s.rec.intent(in)
	s.cut = false
	s.keys = nil
	s.accepted.Store(false)
	s.acceptedKeys = nil
	s.takeOperations()
	return in
}

// resolve fixes the faults of a step whose faults depend on the round or
// on what the run learnt of the target: the database write it acts on
// (DBFaultAt) and the round's provider fault (ProviderFaults, of which it
// leaves the round's alone).
func (s *session) resolve(check string, st scenarios.Step, round int) scenarios.Step {
	switch st.DBFaultAt {
	case scenarios.FaultsOwnWrite:
		// DBFault acts where its own match and nth say.
	case scenarios.NthByRound:
		st.DBFault = s.nthByRound(check, st.DBFault, round, st.Send == scenarios.HoldKillAfterCommit)
	case scenarios.LastWrite:
		st.DBFault = withNth(st.DBFault, max(s.writes, 1))
	case scenarios.WorkerWrite:
		st.DBFault = withNth(st.DBFault, max(s.writes, 1)+1)
	case scenarios.WorkStart:
		if s.lastKind == idemcheck.LandedAutocommitWrite {
			// A handler that never opens a transaction has no BEGIN to
			// stop at: its work is its last write, which commits on its
			// own.
			st.DBFault = faults.DBHold("", max(s.writes, 1))
		}
	}
	if n := len(st.ProviderFaults); n > 1 {
		i := (round - 1) % n
		st.ProviderFaults = st.ProviderFaults[i : i+1]
	}
	return st
}

// providerFault is the provider fault a resolved step arms (resolve
// leaves at most one), or none.
func providerFault(st scenarios.Step) provider.Fault {
	if len(st.ProviderFaults) == 0 {
		return provider.Fault{}
	}
	return st.ProviderFaults[0]
}

// holdAndRetry sends a held step (st, its attempt base) and next, the
// retry that meets the hold, as step base.Step+1.
func (s *session) holdAndRetry(ctx context.Context, in idemcheck.Intent, st, next scenarios.Step, addr string, req wire.Request, base idemcheck.Attempt) error {
	retry := base
	retry.Step, retry.Fault, retry.FaultLinks, retry.Variant = base.Step+1, stepFault(next), stepLinks(next), next.Variant
	var err error
	if st.Send == scenarios.HoldKillAfterCommit {
		err = s.killAfterCommit(ctx, in, st, addr, req, base, retry)
	} else {
		err = s.held(ctx, st, addr, req, base, retry)
	}
	if err != nil {
		return err
	}
	// A webhook sender redelivers what the retry left unacknowledged, as
	// after any other step.
	if next.Then.Has(scenarios.RedeliverUntilAck) {
		return s.redeliver(ctx, req, retry, s.step)
	}
	return nil
}

// burst sends st's attempts together, under the write barrier when the
// target's writes can be scheduled, and records the burst and its
// attempts. It reports whether the burst was loose: a round whose burst
// was loose is repeated.
func (s *session) burst(ctx context.Context, in idemcheck.Intent, st scenarios.Step, addr string, req wire.Request, base idemcheck.Attempt) (loose bool, err error) {
	if err := s.pace.wait(ctx, st.Attempts); err != nil {
		return false, err
	}
	disarm, err := s.arm(st.DBFault)
	if err != nil {
		return false, err
	}
	var unbar func() faults.Schedule
	if sch, ok := s.Powers.(targets.Scheduler); ok && !s.Timed && s.noDBLink == "" && st.DBFault.IsNone() {
		if unbar, err = sch.Barrier(st.Attempts, st.Send == scenarios.TogetherInTurn); err != nil {
			disarm()
			return false, fmt.Errorf("write barrier: %w", err)
		}
	}
	reqs := make([]wire.Request, st.Attempts)
	for j := range reqs {
		reqs[j] = req
	}
	br := s.client.SendBurst(ctx, addr, reqs)
	results := br.Results
	s.dbLanding(base, st.DBFault, disarm())
	burst := idemcheck.Burst{Attempts: len(results), Spread: br.Spread,
		Protocol: string(br.Protocol), Fallback: br.Fallback, Intent: in.ID, Check: base.Check, Round: base.Round,
		Loose:      br.Spread > s.looseAbove(len(results)),
		PrefixWait: br.Link.PrefixWait, PrefixAcked: br.Link.Acked,
		RTT: br.Link.RTT, Jitter: br.Link.Jitter, KernelRTT: br.Link.KernelRTT}
	if unbar != nil {
		sched := unbar()
		burst.Scheduled, burst.Held, burst.Release, burst.InTurn = true, sched.ReleasedTogether(), sched.Reason, sched.InTurn
		s.scheduled(base, sched)
	}
	// A scheduled race does not rest on the spread: its round is not
	// repeated when the spread was loose. A round in turn whose barrier
	// held fewer than two writes (the others had not reached the database
	// when it let the first go, on a busy machine) released nothing in
	// turn: it is repeated, like a loose one, with a fresh intent.
	loose = burst.Loose && !burst.RaceScheduled() || burst.InTurn && !burst.RaceScheduled()
	if again, wait := burstRefused(results); again {
		s.refusedWait = max(s.refusedWait, wait)
	}
	burst = s.rec.burst(burst)
	base.Burst = burst.ID
	for _, res := range results {
		s.record(base, res)
		s.replyLanding(base, st.Fault, res)
	}
	return loose, nil
}

// oneByOne sends st's attempts one after the other, each with its faults
// armed for it alone. A clean attempt's writes are counted (do) when
// count is set: no earlier step of the intent may have taken effect.
func (s *session) oneByOne(ctx context.Context, st scenarios.Step, addr string, req wire.Request, base idemcheck.Attempt, count bool) error {
	count = count && st.DBFault.IsNone()
	for range st.Attempts {
		if err := s.pace.wait(ctx, 1); err != nil {
			return err
		}
		disarm, err := s.arm(st.DBFault)
		if err != nil {
			return err
		}
		pdisarm, err := s.armProvider(providerFault(st))
		if err != nil {
			disarm()
			return err
		}
		if st.Send == scenarios.RetryWhileInProgress {
			err = s.retryWhileInProgress(ctx, addr, req, base, count)
		} else {
			var res wire.Result
			res, err = s.doRecorded(ctx, addr, req, base, count)
			s.replyLanding(base, st.Fault, res)
			if err == nil && st.DBFaultAt == scenarios.WorkerWrite {
				// The worker's write comes after the accepted reply.
				err = s.awaitOwed(ctx)
			}
		}
		s.dbLanding(base, st.DBFault, disarm())
		s.providerLanding(base, providerFault(st), pdisarm())
		if err != nil {
			return err
		}
	}
	return nil
}

// afterStep does what a step asks once its attempts were answered: a
// webhook sender's redeliveries, then a kill and restart of the target.
func (s *session) afterStep(ctx context.Context, st scenarios.Step, req wire.Request, base idemcheck.Attempt) error {
	if st.Then.Has(scenarios.RedeliverUntilAck) && !st.Send.Holds() {
		if err := s.redeliver(ctx, req, base, s.step); err != nil {
			return err
		}
	}
	if st.Then.Has(scenarios.KillAndRestart) {
		// The intent's accepted work makes its effect before the kill.
		if err := s.awaitOwed(ctx); err != nil {
			return err
		}
		return s.killAndRestart(ctx, base)
	}
	return nil
}

// addr is where a step with client-link fault f sends: the target itself
// when f is None, else the fault proxy that applies f. A proxy in the path
// would cost a burst its tight release (each final byte then waits for a
// proxy goroutine pair before it reaches the target), and it adds nothing
// to a step it does not fault.
func (s *session) addr(f faults.Fault) (string, error) {
	if f.IsNone() {
		return s.direct, nil
	}
	return s.link.Addr(f)
}

// writeCounter is a db-cut whose nth is never reached: armed, it only
// counts the effect writes that pass.
var writeCounter = faults.DBCut("", 1<<31)

// do sends one attempt. With count, on a target whose database link the
// harness holds, it counts the effect writes the attempt caused, and the
// first attempt answered with success that wrote anything tells the
// session how many writes the handler makes (nthByRound). That first one
// is a fresh intent's: round counts no attempt after one that may have
// taken effect (a success, a cut reply: a replay writes less), and the
// first round of a fault check acts on the first write, the claim, so its
// retry starts afresh. Later attempts may take another path (a takeover
// writes more) and are not counted.
func (s *session) do(ctx context.Context, addr string, req wire.Request, count bool) wire.Result {
	if !count || len(s.intents) == 0 {
		return s.client.Do(ctx, addr, req)
	}
	return s.doCounting(ctx, addr, req, s.intents[len(s.intents)-1])
}

// doCounting sends req for in and, until the session knows how many
// effect writes the handler makes, counts those the attempt caused (the
// writes carrying in's marks where effects land after the reply).
func (s *session) doCounting(ctx context.Context, addr string, req wire.Request, in idemcheck.Intent) wire.Result {
	if s.Powers == nil || s.writes > 0 {
		return s.client.Do(ctx, addr, req)
	}
	var marks [][]byte
	if s.Settle > 0 {
		marks = s.marks(in)
	}
	disarm, err := s.Powers.ArmDB(writeCounter, marks...)
	if err != nil {
		return s.client.Do(ctx, addr, req)
	}
	res := s.client.Do(ctx, addr, req)
	l := disarm()
	if res.Err == nil && res.Status >= 200 && res.Status < 300 {
		s.writes, s.lastKind = l.Seen, l.LastKind
	}
	return res
}

// nthByRound chooses the effect write a round's db-cut, db-cut-after or
// db-hold acts on.
// A handler's writes come in order (a key's claim, the work's COMMIT, the
// key's finish), and the moment before each is a window a failure or a
// crash can fall in. The last is tried first, since everything before it
// has committed and it has not, which is where most bugs show; then the
// one before it, and so on, a round each. The number of writes comes from
// clean attempts (do); until one was counted, the first write is tried. A
// fault with an explicit match, or with alternate, alternates its 1st and
// 2nd match.
func (s *session) nthByRound(check string, f faults.Fault, round int, alternate bool) faults.Fault {
	_, explicit := f.Params["match"]
	nth := (round-1)%2 + 1
	if !explicit && alternate && s.Settle > 0 {
		// Where effects land after the reply, the intent's writes after
		// the attempt's own are its worker's (scenarios.WorkerWrite), whose
		// window WorkerKilledAfterEffect breaks: a kill here stays on the
		// attempt's writes (the first, until they were counted), not on a
		// reply the worker's job races.
		nth = min(nth, max(s.writes, 1))
	}
	if !explicit && !alternate {
		nth = 1
		if k := s.writes; k > 0 {
			nth = k - s.shifts[check]%k
			s.shifts[check]++
		}
	}
	return withNth(f, nth)
}

// withNth is f, a db-cut, db-cut-after or db-hold, acting on its nth match.
func withNth(f faults.Fault, nth int) faults.Fault {
	g := faults.Fault{Name: f.Name, Link: f.Link, Params: maps.Clone(f.Params)}
	if g.Params == nil {
		g.Params = map[string]string{}
	}
	g.Params["nth"] = strconv.Itoa(nth)
	return g
}
