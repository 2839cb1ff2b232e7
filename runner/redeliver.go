package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// redeliver is a webhook sender's answer to a step none of whose
// deliveries (sent) was acknowledged: it delivers the same request again,
// through the clean link, after the backoff of scenarios.Redelivery, until a
// delivery is acknowledged or scenarios.MaxRedeliveries were made. A 5xx, any other
// status outside the policy's successes, and no reply at all (a timeout, a
// reset) are not acknowledgements.
func (s *session) redeliver(ctx context.Context, req wire.Request, base idemcheck.Attempt, sent []idemcheck.Attempt) error {
	acked := func(a idemcheck.Attempt) bool { return a.Outcome == idemcheck.Replied && s.Policy.Replay(a.Status) }
	if slices.ContainsFunc(sent, acked) {
		return nil
	}
	addr, err := s.addr(faults.None)
	if err != nil {
		return fmt.Errorf("redeliver: %w", err)
	}
	base.Fault, base.FaultLinks, base.Burst = "", nil, 0
	for n := 1; n <= scenarios.MaxRedeliveries; n++ {
		t := time.NewTimer(scenarios.Redelivery(s.Policy, n))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if err := s.pace.wait(ctx, 1); err != nil {
			return err
		}
		a := base
		a.Redelivery = n
		if acked(s.record(a, s.client.Do(ctx, addr, req))) {
			return nil
		}
	}
	return nil
}
