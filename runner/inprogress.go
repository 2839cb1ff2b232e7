package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// retryWhileInProgress sends the attempt, and again while the answer is the
// policy's in-progress status, honouring Retry-After, until the lease plus
// a margin has passed: a key left running by a dead attempt must become
// retakable within its lease.
func (s *session) retryWhileInProgress(ctx context.Context, addr string, req wire.Request, base idemcheck.Attempt, count bool) error {
	deadline := time.Now().Add(s.Policy.Lease + scenarios.LeaseMargin)
	for {
		res, err := s.doRecorded(ctx, addr, req, base, count)
		if err != nil {
			return err
		}
		inProgress := res.Err == nil && s.Policy.InProgress(res.Status) && !refusal(res)
		if !inProgress || !time.Now().Before(deadline) {
			return nil
		}
		if err := waitToRetry(ctx, res, deadline); err != nil {
			return err
		}
	}
}

// waitToRetry waits before the next retry of an attempt told the key is
// in progress: its Retry-After, else 200 ms, and never past deadline.
func waitToRetry(ctx context.Context, res wire.Result, deadline time.Time) error {
	wait := 200 * time.Millisecond
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && ra > 0 {
		wait = time.Duration(ra) * time.Second
	}
	wait = min(wait, time.Until(deadline))
	t := time.NewTimer(max(wait, 10*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// takeOver sends the retry of an attempt frozen past the lease, and again
// while it is told the key is in progress, until by: a target whose lease
// ran out lets it take the key over. It returns the answers that told the
// key is in progress (recorded after the frozen attempt, by releaseHeld)
// and the last answer, or nil and the channel of a retry still unanswered
// at by (waiting on the frozen attempt's locks, most likely).
func (s *session) takeOver(ctx context.Context, c *wire.Client, addr string, req wire.Request, by time.Time) (told []wire.Result, last *wire.Result, pending <-chan wire.Result) {
	for {
		done := make(chan wire.Result, 1)
		go func() { done <- c.Do(ctx, addr, req) }()
		t := time.NewTimer(time.Until(by))
		select {
		case r := <-done:
			t.Stop()
			if r.Err != nil || !s.Policy.InProgress(r.Status) || !time.Now().Before(by) {
				return told, &r, done
			}
			if waitToRetry(ctx, r, by) != nil {
				return told, &r, done
			}
			told = append(told, r)
		case <-t.C:
			return told, nil, done
		}
	}
}
