package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// RecoveryProbes is how many fresh requests follow a round whose db-cut
// landed, released together as a burst on connections opened first. A
// target may answer from several worker processes behind one port
// (gunicorn's sync workers, say), each with its own database connection,
// and only the one whose connection was cut may be broken: each idle
// worker takes one of the connections opened together, so up to this many
// workers each answer one probe.
const RecoveryProbes = 4

// recovered asks whether the target recovered from a database link cut in
// the round placed names (failed-attempt): it sends RecoveryProbes plain
// requests together, each for a fresh intent with a fresh key, as the
// pre-flight does, and not recorded as attempts. A target that answers one
// with a 5xx, or not at all, kept the dead connection (a worker with one
// global connection opened at start, and nothing that reconnects): every
// later request it takes fails, the retry's failure included, which would
// otherwise pass for a saved error. The history then records a
// TargetUnrecovered event at the round's last step, which makes the round
// unjudgeable, and the target is killed and started again, so the checks
// after it meet a working target, as after an exit.
func (s *session) recovered(ctx context.Context, placed idemcheck.Event, cutSQL string) error {
	if s.Powers == nil || s.Policy.AckOnly {
		// Under an ack-only policy (a webhook consumer) a 5xx is a
		// consumer's "not now, deliver it again", a fresh event's included:
		// it proves nothing about recovery, and a consumer that never
		// recovers is found by the redeliveries (never-acknowledged).
		return nil
	}
	reqs := make([]wire.Request, RecoveryProbes)
	for i := range reqs {
		in := idemcheck.Intent{ID: fmt.Sprintf("ic-%s-probe-%d-%d", s.run, placed.Round, i+1), Key: uuid.NewString()}
		reqs[i], _ = s.request(in, "")
		s.scrubRequest(reqs[i])
	}
	if err := s.pace.wait(ctx, len(reqs)); err != nil {
		return err
	}
	results := s.client.SendBurst(ctx, s.direct, reqs).Results
	// Their calls to provider doubles are not the checks'.
	s.dropCalls()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, res := range results {
		if res.Err == nil && res.Status < 500 {
			continue
		}
		if res.Err != nil {
			// No reply: a target that is dying (its process exits on the
			// cut) is let finish, and its exit, recorded and revived as
			// after any step, is the finding.
			exited, err := s.watchExits(ctx, placed, false)
			if err != nil {
				return err
			}
			if exited {
				return nil
			}
		}
		got := "no reply: " + errText(res)
		if res.Err == nil {
			got = fmt.Sprintf("%d %s", res.Status, s.scrub(oneLine(string(res.Body), 60)))
		}
		ev := placed
		ev.Kind, ev.Time = idemcheck.TargetUnrecovered, time.Now()
		ev.SQL = clip(s.scrub(cutSQL), eventSQL)
		ev.Detail = fmt.Sprintf("after its database link was cut at %q, the target answered a fresh request (a new key, probe %d of %d sent together) %s: "+
			"it did not recover its database connection, so every request it takes fails, retries included",
			short(s.scrub(cutSQL)), i+1, len(results), got)
		s.rec.event(ev)
		if err := s.Powers.Kill(); err != nil {
			return fmt.Errorf("%s: kill the target that did not recover: %w", placed.Check, err)
		}
		if err := s.Powers.Restart(ctx); err != nil {
			return fmt.Errorf("%s: restart the target that did not recover from its cut database link: %w", placed.Check, err)
		}
		r := placed
		r.Kind, r.Time = idemcheck.TargetRestarted, time.Now()
		r.Detail = "the harness killed and restarted the target after it did not recover from its cut database link, so the steps after it meet a working target"
		s.rec.event(r)
		return nil
	}
	return nil
}

// oneLine folds white space runs into single spaces and clips to n bytes.
func oneLine(v string, n int) string {
	return clip(strings.Join(strings.Fields(v), " "), n)
}
