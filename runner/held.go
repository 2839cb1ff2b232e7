package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// holdTimeout bounds the wait for a target to reach the held statement.
const holdTimeout = 15 * time.Second

// held runs a step whose database fault holds the target's statement
// (db-hold), then does what the step says to the target at that moment,
// and sends the retry step:
//
//   - HoldCrash: the target is killed while its transaction waits at
//     COMMIT, the statement is dropped (the database rolls it back), the
//     target restarts, and the retry keeps trying while the key is in
//     progress, up to the lease plus a margin;
//   - HoldStall: the held attempt stays frozen past the lease, the retry
//     is sent then (and may take the key over), and the held attempt
//     resumes once the retry has answered or a few seconds have passed.
func (s *session) held(ctx context.Context, st scenarios.Step, addr string, req wire.Request, first, retry idemcheck.Attempt) error {
	if s.Powers == nil {
		return fmt.Errorf("%s needs control of the target", first.Check)
	}
	disarm, err := s.armCarrying(st.DBFault)
	if err != nil {
		return err
	}
	defer disarm()
	patient := s.patient()
	firstDone := make(chan wire.Result, 1)
	go func() { firstDone <- patient.Do(ctx, addr, req) }()
	var ev faults.HoldEvent
	select {
	case ev = <-s.Powers.Held():
	case res := <-firstDone:
		// The target answered without reaching the held statement: there
		// was no window to break. Recorded as it is, with the fault's miss;
		// the retry still runs, on a clean link.
		missed := dbMissed(st.DBFault)
		if res.Err == nil {
			missed += failedFirst(res.Status)
		}
		if l := disarm(); l.Acted() {
			// It held a statement the attempt did not wait for (a
			// background job's): let that one go, and say so.
			missed = fmt.Sprintf("the target answered while the fault held another of its statements, not this attempt's: %s", clip(l.SQL, eventSQL))
			select {
			case ev := <-s.Powers.Held():
				_ = ev.Release()
			case <-time.After(time.Second):
			}
		}
		s.landed(first, st.DBFault.String(), "", "", time.Time{}, missed, 0)
		s.record(first, res)
		return s.retryWhileInProgress(ctx, addr, req, retry, true)
	case <-time.After(holdTimeout):
		return fmt.Errorf("%s: the target did not reach %q within %v", first.Check, st.DBFault.Params["match"], holdTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.landed(first, st.DBFault.String(), ev.Landing, ev.SQL, time.Now(), "", ev.Conn)
	switch st.Send {
	case scenarios.HoldCrash:
		killed, err := s.kill(first, LandedHeldStatement, ev.SQL, "killed while its statement was held on the database link, before it reached the database")
		if err != nil {
			_ = ev.Cut()
			return err
		}
		_ = ev.Cut()
		s.record(first, <-firstDone)
		if !killed {
			return s.retryWhileInProgress(ctx, addr, req, retry, true)
		}
		if err := s.restart(ctx, first); err != nil {
			return err
		}
		return s.retryWhileInProgress(ctx, addr, req, retry, true)
	case scenarios.HoldInFlight:
		retryDone := make(chan wire.Result, 1)
		go func() { retryDone <- patient.Do(ctx, addr, req) }()
		rres, err := s.awaitInFlight(ctx, retryDone)
		if err != nil {
			_ = ev.Cut()
			return err
		}
		s.releaseHeld(ev, firstDone, retryDone, rres, first, retry)
		return nil
	case scenarios.HoldStall:
		frozen := time.Now()
		stall := time.NewTimer(s.Policy.Lease + scenarios.LeaseMargin/4)
		select {
		case <-ctx.Done():
			stall.Stop()
			_ = ev.Cut()
			return ctx.Err()
		case <-stall.C:
		}
		// The retry goes past the lease, and again while it is told the
		// key is in progress (a lease measured a little longer than
		// declared), for up to the margin; one still unanswered then is
		// waiting, on the held attempt's locks most likely: the original
		// resumes and the two race for the key.
		told, rres, retryDone := s.takeOver(ctx, patient, addr, req, frozen.Add(s.Policy.Lease+scenarios.LeaseMargin+scenarios.LeaseMargin/4))
		if ctx.Err() != nil {
			_ = ev.Cut()
			return ctx.Err()
		}
		s.releaseHeld(ev, firstDone, retryDone, rres, first, retry, told...)
		return nil
	}
	return fmt.Errorf("%v is no hold", st.Send)
}

// releaseHeld lets the held first attempt go on, waits for it and for the
// retry sent while it was held (rres, when already answered), and records
// them: the first, the retries told the key was in progress before (told),
// then the last retry.
func (s *session) releaseHeld(ev faults.HoldEvent, firstDone, retryDone <-chan wire.Result, rres *wire.Result, first, retry idemcheck.Attempt, told ...wire.Result) {
	// Recorded before the release, so that a retry answered after it
	// (waiting on the first's locks) is never taken for a takeover.
	s.event(idemcheck.HoldReleased, first, first.Fault, "", "", "the held attempt was let go on")
	_ = ev.Release()
	fres := <-firstDone
	if rres == nil {
		r := <-retryDone
		rres = &r
	}
	s.record(first, fres)
	for _, r := range told {
		s.record(retry, r)
	}
	s.record(retry, *rres)
}
