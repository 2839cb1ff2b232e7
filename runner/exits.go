package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// explain adds to an error that stopped the run the target's exits that
// came before it, which are often its cause (a target that died before it
// reached a held statement), and records them.
func (s *session) explain(ctx context.Context, err error, placed idemcheck.Event) error {
	if s.Powers == nil || ctx.Err() != nil {
		return err
	}
	evs, werr := s.Powers.Exits(ctx, true)
	if werr != nil || len(evs) == 0 {
		return err
	}
	s.recordExits(placed, evs, "during")
	last := evs[len(evs)-1]
	return fmt.Errorf("%w; the target (instance %d) had exited on its own (%s); its last output:\n%s", err, last.Instance, last.ExitStatus, s.scrub(clipTail(last.LogTail, MaxLogTail)))
}

// MaxLogTail is how many of the target's last output lines an exit event
// keeps.
const MaxLogTail = 20

// watch records the target's exits that happened up to the end of a step
// (at placed's step) and restarts the instances they took down, so that
// the steps after them meet a live target. With answered false (some
// attempt of the step got no reply) it first lets a dying target finish
// dying, so its exit is placed at the step it broke. A target that cannot
// be restarted stops the run.
func (s *session) watch(ctx context.Context, placed idemcheck.Event, answered bool) error {
	_, err := s.watchExits(ctx, placed, answered)
	return err
}

// watchExits is watch, and says whether the target had exited.
func (s *session) watchExits(ctx context.Context, placed idemcheck.Event, answered bool) (bool, error) {
	if s.Powers == nil {
		return false, nil
	}
	s.lastStep = placed
	evs, err := s.Powers.Exits(ctx, !answered)
	if err != nil {
		return false, fmt.Errorf("watch the target: %w", err)
	}
	if len(evs) == 0 {
		return false, nil
	}
	s.recordExits(placed, evs, "during")
	seen := map[int]bool{}
	for _, ev := range evs {
		if seen[ev.Instance] {
			continue
		}
		seen[ev.Instance] = true
		restarted, err := s.Powers.Revive(ctx, ev.Instance)
		if err != nil {
			return true, fmt.Errorf("the target (instance %d) exited on its own during %s round %d step %d (%s) and could not be restarted: %w; its last output:\n%s",
				ev.Instance, placed.Check, placed.Round, placed.Step, ev.ExitStatus, err, s.scrub(clipTail(ev.LogTail, MaxLogTail)))
		}
		if restarted {
			r := placed
			r.Kind, r.Time, r.Instance = idemcheck.TargetRestarted, time.Now(), ev.Instance
			r.Detail = fmt.Sprintf("the harness restarted instance %d after it exited on its own (%s), so the steps after it meet a live target", ev.Instance, ev.ExitStatus)
			s.rec.event(r)
		}
	}
	return true, nil
}

// recordExits puts exit events in the history, placed at a step; when says
// how they relate to it ("during", or "after" the run's last step).
func (s *session) recordExits(placed idemcheck.Event, evs []idemcheck.Event, when string) {
	for _, ev := range evs {
		ev.Kind = idemcheck.TargetExited
		ev.Check, ev.Intent, ev.Round, ev.Step = placed.Check, placed.Intent, placed.Round, placed.Step
		// The target's output may quote what it was sent: a credential.
		ev.LogTail = s.scrub(clipTail(ev.LogTail, MaxLogTail))
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		where := fmt.Sprintf("%s %s round %d step %d", when, placed.Check, placed.Round, placed.Step)
		if ev.Detail == "" {
			ev.Detail = fmt.Sprintf("instance %d of the target exited on its own (%s) %s", ev.Instance, ev.ExitStatus, where)
		} else {
			ev.Detail += " " + where
		}
		s.rec.event(ev)
	}
}

// clipTail keeps the last n lines of a log tail.
func clipTail(tail string, n int) string {
	tail = strings.TrimRight(tail, "\n")
	lines := strings.Split(tail, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
