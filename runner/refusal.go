package runner

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// A refusal (idemcheck.IsRefusal: a 429, or a 503 with Retry-After) is a
// rate limiter or a load shedder in front of the handler saying "not now":
// the request never reached the idempotency layer. A client honours it and
// sends the request again later, and so does the runner, within bounds,
// so that a correct service behind a limiter is judged on the attempts its
// handler took, and a round refused too often says so (assert) instead of
// being judged on the refusals.

// RefusalResends is how many times at most one attempt refused before the
// handler is sent again, each after its Retry-After (RefusalWait). Every
// refused attempt stays in the history, marked by its status.
const RefusalResends = 3

// RefusalRepeats is how many times at most a burst round in which fewer
// than two attempts were admitted (the others refused) is repeated with a
// fresh intent and a fresh release, after the refusals' Retry-After.
const RefusalRepeats = 2

// MaxRefusalWait bounds one wait on a refusal's Retry-After: a limiter
// that asks for more is not waited out, and its rounds say so.
const MaxRefusalWait = 5 * time.Second

// refusal reports whether res is a refusal before the handler.
func refusal(res wire.Result) bool {
	return res.Err == nil && idemcheck.IsRefusal(res.Status, res.Header)
}

// RefusalWait is how long a client waits after a refusal with header h
// before sending again: its Retry-After (seconds or an HTTP date), 1 s
// where it gives none, never more than MaxRefusalWait.
func RefusalWait(h http.Header, now time.Time) time.Duration {
	wait := time.Second
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			wait = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			wait = t.Sub(now)
		}
	}
	return min(max(wait, 50*time.Millisecond), MaxRefusalWait)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// doRecorded sends one attempt and records it, and while the target
// refuses it before its handler, waits its Retry-After and sends it again,
// up to RefusalResends times; each send is recorded. It returns the last
// result.
func (s *session) doRecorded(ctx context.Context, addr string, req wire.Request, base idemcheck.Attempt, count bool) (wire.Result, error) {
	for resend := 0; ; resend++ {
		res := s.do(ctx, addr, req, count)
		s.record(base, res)
		if !refusal(res) || resend == RefusalResends {
			return res, nil
		}
		if err := sleep(ctx, RefusalWait(res.Header, time.Now())); err != nil {
			return res, err
		}
		s.total++
		if err := s.pace.wait(ctx, 1); err != nil {
			return res, err
		}
	}
}

// burstRefused says whether a burst's round must be sent again because of
// refusals: fewer than two of its attempts were admitted (answered with
// anything but a refusal) and at least one was refused. wait is the
// longest Retry-After its refusals asked for (bounded).
func burstRefused(results []wire.Result) (again bool, wait time.Duration) {
	admitted, refused := 0, 0
	now := time.Now()
	for _, r := range results {
		switch {
		case refusal(r):
			refused++
			wait = max(wait, RefusalWait(r.Header, now))
		case r.Err == nil:
			admitted++
		}
	}
	return refused > 0 && admitted < 2, wait
}
