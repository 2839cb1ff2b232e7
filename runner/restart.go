package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// stepFault names what a step's first attempt goes through: the kill the
// step deals the target, if any, then its link faults.
func stepFault(st scenarios.Step) string {
	var names []string
	switch {
	case st.Then.Has(scenarios.KillAndRestart):
		names = append(names, scenarios.KillAfterReply)
	case st.Send == scenarios.HoldCrash:
		names = append(names, scenarios.KillAtCommit)
	case st.Send == scenarios.HoldKillAfterCommit:
		names = append(names, scenarios.KillAfterCommit, faults.HoldReply)
	}
	if f := faultNames(st.Fault, st.DBFault); f != "" {
		names = append(names, f)
	}
	if pf := providerFault(st); !pf.IsNone() {
		names = append(names, pf.Name())
	}
	return strings.Join(names, "+")
}

// stepLinks are the links a step's first attempt has faults on
// (Attempt.FaultLinks), client link first: the reply hold of a kill after
// commit and st.Fault on the client link, st.DBFault on the database
// link. A kill alone acts on none.
func stepLinks(st scenarios.Step) []string {
	links := faultLinks(st.Fault, st.DBFault)
	if st.Send == scenarios.HoldKillAfterCommit && !slices.Contains(links, idemcheck.LinkClient) {
		links = append([]string{idemcheck.LinkClient}, links...)
	}
	if !providerFault(st).IsNone() {
		links = append(links, idemcheck.LinkProvider)
	}
	return links
}

// event records something that happened to the target during attempt a's
// step.
func (s *session) event(kind idemcheck.EventKind, a idemcheck.Attempt, fault, landing, sql, detail string) {
	s.rec.event(idemcheck.Event{
		Kind: kind, Time: time.Now(), Check: a.Check, Intent: a.Intent, Round: a.Round, Step: a.Step,
		Fault: fault, Landing: landing, SQL: sql, Detail: detail,
	})
}

// kill crashes the target on purpose and records it. It reports false
// when the target could not be confirmed dead (notDead): the round then
// goes on without a restart, its fault recorded as missed.
func (s *session) kill(a idemcheck.Attempt, landing, sql, detail string) (bool, error) {
	if err := s.Powers.Kill(); err != nil {
		if s.notDead(a, err) {
			return false, nil
		}
		return false, fmt.Errorf("%s: kill the target: %w", a.Check, err)
	}
	s.event(idemcheck.TargetKilled, a, a.Fault, landing, sql, detail)
	return true, nil
}

// notDead records, when err says the target outlived its kill (a process
// it started is still running, or its port still accepts connections),
// that attempt a's kill did not happen as meant, and reports whether it
// did: a retry would meet the old process, not a restarted one, so the
// round cannot count either way.
func (s *session) notDead(a idemcheck.Attempt, err error) bool {
	if !errors.Is(err, targets.ErrNotDead) {
		return false
	}
	s.event(idemcheck.TargetNotDead, a, a.Fault, "", "",
		"the target was told to die and could not be confirmed dead, so its retry met the old process: "+err.Error())
	return true
}

// restart starts the target again after a kill and records it.
func (s *session) restart(ctx context.Context, a idemcheck.Attempt) error {
	if err := s.Powers.Restart(ctx); err != nil {
		return fmt.Errorf("%s: restart the target after the kill: %w", a.Check, err)
	}
	s.event(idemcheck.TargetRestarted, a, "", "", "", "the target was started again and answered its readiness probe")
	return nil
}

// killAndRestart kills the target after step a's attempts were answered
// and starts it again (restart-replay).
func (s *session) killAndRestart(ctx context.Context, a idemcheck.Attempt) error {
	if s.Powers == nil {
		return fmt.Errorf("%s needs control of the target's process", a.Check)
	}
	last := s.last
	what := "ended without a reply (" + string(last.Outcome) + ")"
	if last.Outcome == idemcheck.Replied {
		what = fmt.Sprintf("was answered %d", last.Status)
	}
	killed, err := s.kill(a, LandedAfterReply, "", fmt.Sprintf("killed after attempt %d %s, before the retry", last.ID, what))
	if err != nil || !killed {
		return err
	}
	return s.restart(ctx, a)
}

// Landings of the harness's kills, as target-killed events record them.
const (
	// LandedAfterReply: the attempt had its whole reply when the target
	// was killed.
	LandedAfterReply = "after-reply"
	// LandedAfterCommit: an effect write (a COMMIT or an autocommitted
	// write) had committed in the database and its answer was held on the
	// database link, before the target received it.
	LandedAfterCommit = "after-commit"
	// LandedHeldStatement: a statement (COMMIT, by default) was held on the
	// database link, before it reached the database.
	LandedHeldStatement = "held-statement"
)

// landingOf says what kind of statement a database-link fault held.
func landingOf(sql string) string {
	switch {
	case commitSQL.MatchString(sql):
		return idemcheck.LandedCommit
	case writeSQL.MatchString(sql):
		return idemcheck.LandedAutocommitWrite
	}
	return LandedHeldStatement
}

var (
	commitSQL = regexp.MustCompile(`(?i)^\s*(COMMIT|END)\b`)
	writeSQL  = regexp.MustCompile(`(?i)^\s*(INSERT|UPDATE|DELETE|MERGE)\b`)
)

// patient is the client of an attempt that must outlive a hold: a client
// that gave up first would close the connection and kill the work the
// check is about.
func (s *session) patient() *wire.Client {
	p := *s.client
	p.Timeout = max(s.client.Timeout, s.Policy.Lease+2*scenarios.LeaseMargin+holdTimeout)
	return &p
}

// replyHold returns the session's reply-holding proxy, starting it on
// first use.
func (s *session) replyHold() (*faults.ReplyHold, error) {
	if s.replies == nil {
		rh, err := faults.NewReplyHold(Upstream(s.Endpoint.Base))
		if err != nil {
			return nil, fmt.Errorf("start the reply hold: %w", err)
		}
		s.replies = rh
	}
	return s.replies, nil
}

// killAfterCommit runs a scenarios.HoldKillAfterCommit step and the retry after it
// (crash-after-commit). The first attempt goes through a proxy that holds
// its reply at the first byte, and st.DBFault (a db-hold on the round's
// effect write: a COMMIT or an autocommitted write) is armed on the
// database link. When the write is held it is let through with the
// database's answer held on its way back, and the target is killed at
// the first of the two holds to land: the answer (the write has committed
// in the database and the target has not learnt it, so it has done
// nothing after it, in this database or in a key store the link does not
// see, such as Redis), or its reply (the handler committed and is
// answering, and the client has not received a byte). Then both holds are
// dropped, the target restarts, and the retry keeps trying while the key
// is in progress, up to the lease plus a margin.
func (s *session) killAfterCommit(ctx context.Context, in idemcheck.Intent, st scenarios.Step, addr string, req wire.Request, first, retry idemcheck.Attempt) error {
	if s.Powers == nil {
		return fmt.Errorf("%s needs control of the target", first.Check)
	}
	rh, err := s.replyHold()
	if err != nil {
		return err
	}
	disarmReply := rh.Arm()
	defer disarmReply()
	disarmDB := func() faults.Landing { return faults.Landing{} }
	if !st.DBFault.IsNone() {
		// Without it (no database link to act on) the kill waits for the
		// reply alone.
		if disarmDB, err = s.armCarrying(st.DBFault); err != nil {
			return err
		}
	}
	defer func() { disarmDB() }()

	// Where the effect is a background worker's (WorkerWrite), the
	// attempt's reply goes straight to the client, and the kill waits for
	// the worker's write after it, up to the settle bound more.
	worker := st.DBFaultAt == scenarios.WorkerWrite
	to, bound := rh.Addr(), holdTimeout
	if worker {
		to, bound = addr, holdTimeout+s.Settle
	}
	firstDone := make(chan wire.Result, 1)
	patient := s.patient()
	go func() { firstDone <- patient.Do(ctx, to, req) }()
	timeout := time.NewTimer(bound)
	defer timeout.Stop()

	h, ended, err := s.awaitCommit(ctx, first, rh, firstDone, timeout.C, worker)
	defer func() {
		if h.answer != nil {
			h.answer.Drop()
		}
	}()
	if err != nil {
		return err
	}
	if ended != nil {
		// The attempt ended with no reply to hold: the target closed
		// the connection, or died on its own. Nothing to kill.
		disarmDB()
		disarmReply()
		s.record(first, *ended)
		s.event(idemcheck.FaultMissed, first, first.Fault, "", "",
			"the first attempt ended before its reply or the answer to its effect write could be held: the target was not killed")
		return s.retryWhileInProgress(ctx, addr, req, retry, false)
	}
	if h.missed {
		disarmDB()
		s.event(idemcheck.FaultMissed, first, first.Fault, "", "",
			fmt.Sprintf("the attempt was accepted, and no write of its effect after it was held within %v: the target was not killed", bound))
		return s.retryWhileInProgress(ctx, addr, req, retry, false)
	}
	detail := h.detailFmt
	if h.commit != nil {
		detail = fmt.Sprintf(h.detailFmt, short(h.commit.SQL)) + h.unquiet
	}
	killErr := s.Powers.Kill()
	if killErr != nil && !errors.Is(killErr, targets.ErrNotDead) {
		if h.reply != nil {
			_ = h.reply.Cut()
		}
		return fmt.Errorf("%s: kill the target: %w", first.Check, killErr)
	}
	if h.answer != nil {
		h.answer.Drop()
	}
	if h.reply != nil {
		_ = h.reply.Cut()
	}
	disarmDB()
	disarmReply()
	if s.Effects != nil {
		// What had committed when the target died: the kill was after the
		// effect only if it is there.
		if o, err := s.Effects.CountKeys(ctx, in, s.keys); err == nil {
			detail += fmt.Sprintf("; effects counted right after the kill: %d", o.Effects)
		}
	}
	if s.notDead(first, killErr) {
		if !h.replied {
			s.record(first, <-firstDone)
		}
		return s.retryWhileInProgress(ctx, addr, req, retry, false)
	}
	s.event(idemcheck.TargetKilled, first, first.Fault, h.landing, h.sql, detail)
	if !h.replied {
		s.record(first, <-firstDone)
	}
	if err := s.restart(ctx, first); err != nil {
		return err
	}
	return s.retryWhileInProgress(ctx, addr, req, retry, false)
}

// commitHeld is what a crash-after-commit's first attempt had held when
// the kill came: the write let through and its answer held, or its reply
// held, and how the kill is told.
type commitHeld struct {
	commit    *faults.HoldEvent  // the write let through
	answer    *faults.AnswerHold // the database's answer to it, held
	reply     *faults.ReplyEvent
	landing   string
	sql       string
	detailFmt string
	// replied: the attempt was answered accepted and recorded before the
	// kill (its effect is a worker's, written after the reply); missed:
	// and no write of its effect was held within the bound.
	replied, missed bool
	// unquiet says, when the kill's write was let go while other
	// connections still had statements in flight, how many.
	unquiet string
}

// awaitCommit waits for the first of the two holds of killAfterCommit to
// land, letting the held write through with its answer held on the way
// back. It returns the attempt's result instead when the attempt ended
// first; with afterReply (the effect is a worker's) an attempt answered
// accepted is recorded and the wait goes on for the worker's write. The
// caller drops the answer it returns, whatever else it returns.
func (s *session) awaitCommit(ctx context.Context, first idemcheck.Attempt, rh *faults.ReplyHold, firstDone <-chan wire.Result, timeout <-chan time.Time, afterReply bool) (h commitHeld, ended *wire.Result, err error) {
	var answered <-chan struct{} // closed once the answer is held
	for {
		select {
		case ev := <-s.Powers.Held():
			h.commit = &ev
			landed := landedEvent(first, ev.Fault.String(), landingOf(ev.SQL), ev.SQL, time.Now(), ev.Conn)
			landed.Detail = fmt.Sprintf("the statement was held on the database link (match %d) and then let through, its answer held on the way back: the kill waits for the database to answer it", ev.Match)
			s.rec.event(landed)
			answer, rerr := ev.ReleaseHoldingAnswerFreezing()
			if rerr != nil {
				// The connection ended while held (the target died on
				// its own), or its answer cannot be held: the reply
				// hold or the attempt's end says what happens next.
				h.answer = nil
				if errors.Is(rerr, faults.ErrAnswerNotFollowed) {
					_ = ev.Release()
				}
				continue
			}
			h.answer = answer
			answered = answer.Held()
			if n := answer.Unquiet(); n > 0 {
				h.unquiet = fmt.Sprintf("; %d other connection(s) of the target still had a statement in flight at the database after %v and were let run on, so a statement of theirs may have run after this one", n, faults.QuiesceBound)
			}
		case <-answered:
			h.landing, h.sql = LandedAfterCommit, h.commit.SQL
			h.detailFmt = "killed after the database had committed its statement %q and before the target received the answer (held on the database link): the target had done nothing after it"
			if h.replied {
				h.detailFmt = "killed after the database had committed the worker's statement %q (the attempt was accepted before it) and before the worker received the answer (held on the database link): the job was never marked done"
			}
			return h, nil, nil
		case r := <-rh.Held():
			h.reply, h.landing = &r, idemcheck.LandedReply
			h.detailFmt = "killed while its reply was held at the first byte on the client link (the handler had finished its work and was answering; the client received nothing)"
			if h.commit != nil {
				h.detailFmt += ", after its statement %q went through"
			}
			return h, nil, nil
		case res := <-firstDone:
			if afterReply && res.Err == nil && s.Policy.Accepted(res.Status) {
				s.record(first, res)
				h.replied, firstDone = true, nil
				continue
			}
			return h, &res, nil
		case <-timeout:
			if h.replied {
				// The accepted work never wrote (or its write could not
				// be held): nothing to kill after it.
				h.missed = true
				return h, nil, nil
			}
			return h, nil, fmt.Errorf("%s: the target neither answered nor had its effect write answered by the database within %v", first.Check, holdTimeout)
		case <-ctx.Done():
			return h, nil, ctx.Err()
		}
	}
}

// InFlightWait bounds how long an in-flight retry is given, while the
// first attempt is held, to answer or to start waiting on a lock in the
// database; after it the first attempt is let go in any case.
const InFlightWait = 10 * time.Second

// awaitInFlight waits, while the first attempt is held, for the retry to
// answer (returned), or for it to wait on a lock in the database (nil: it
// queues behind the held attempt, most likely on its rows), or for
// InFlightWait. The lock is seen in pg_stat_activity through the effect
// query's pool, so a retry that would race past the first attempt once it
// is let go has already read what it read while the first was held.
func (s *session) awaitInFlight(ctx context.Context, retryDone <-chan wire.Result) (*wire.Result, error) {
	deadline := time.NewTimer(InFlightWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-retryDone:
			return &r, nil
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			if s.Effects == nil || s.Effects.Pool == nil {
				// Without the database a lock wait cannot be seen.
				continue
			}
			var waiting bool
			err := s.Effects.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
			if err == nil && waiting {
				return nil, nil
			}
		}
	}
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
