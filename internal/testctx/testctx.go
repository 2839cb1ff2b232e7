// Package testctx gives tests a context for waits that must eventually
// succeed: starting a database, a process or a container.
//
// Such a wait has no right length. It takes seconds on a quiet machine and
// minutes on a loaded CI runner, so a fixed budget either fails under load or
// is too long to mean anything. The only bound is the test binary's own
// -timeout: the context ends a little before it, so a hung wait fails with
// the test's name and error rather than go test's goroutine dump.
//
// It is for tests only and imports nothing of idemcheck.
package testctx

import (
	"context"
	"testing"
	"time"
)

// margin is how long before the binary's deadline the context ends, left for
// the test's failure and cleanups.
const margin = 15 * time.Second

// UntilDeadline returns a context that ends shortly before the test binary's
// -timeout, or never when there is none. It is cancelled when the test ends.
func UntilDeadline(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := t.Deadline(); ok {
			cancel()
			ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-margin))
		}
	}
	tb.Cleanup(cancel)
	return ctx
}
