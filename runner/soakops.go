package runner

import (
	"context"
	"net/url"
	"sync"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// A soak with a settle bound follows status monitors as a certification
// does (operations.go), with the same reads: where the policy names its
// StatusPointer, each accepted intent's monitor (its 202's Location, or
// the policy's StatusURLPointer in its body) is noted as its attempt is
// recorded and spooled with the intent; each settle pass (soaksettle.go)
// reads once every monitor not over yet, before it counts the batch, at
// most SettleParallel reads in flight, so a monitor costs one GET a pass
// and the passes are bounded by the settle bound. A pass settles the
// counts only once no monitor is still pending, and an accepted intent
// whose monitor said the operation is over is no longer awaited at zero:
// the API itself said whether its effect is owed. What each monitor last
// said is recorded with its intent's count (Settle.Operations) and judged
// as a certification judges it (assert.SoakTally).

// soakOp is one accepted attempt's status monitor as a soak spools and
// carries it from pass to pass: its record, and the absolute URL it is
// read at ("" when the reply named none idemcheck may read; Rec.Error
// says why). The URL is kept unscrubbed, in the soak's own temporary
// files only (removed when it ends): the history gets Rec, scrubbed.
type soakOp struct {
	Rec idemcheck.Operation `json:"rec"`
	URL string              `json:"url,omitempty"`
}

// monitor notes the status monitor of a, recorded from res, when the soak
// follows monitors and a was answered with an accepted status; nil
// otherwise. A soak intent has at most one accepted attempt: a retry is
// sent only after a first attempt that got no reply.
func (r *soakRun) monitor(a idemcheck.Attempt, res wire.Result) *soakOp {
	if r.sk.Policy.StatusPointer == "" || r.sk.Effects == nil || r.sk.Settle <= 0 || !r.accepted(a) {
		return nil
	}
	op := &soakOp{Rec: idemcheck.Operation{Attempt: a.ID}}
	u, err := r.s.monitorURL(res)
	if err != nil {
		op.Rec.Error = r.s.scrub(err.Error())
		return op
	}
	op.URL, op.Rec.URL = u.String(), r.s.scrub(u.RequestURI())
	return op
}

// opOver reports whether op needs no more reads: none was noted, it is
// over, or it names no monitor to read.
func opOver(op *soakOp) bool { return op == nil || op.Rec.Over != "" || op.URL == "" }

// opDecided reports whether op's monitor said the operation finished or
// failed: whether its effect is owed is then the API's word, not a count
// still to wait for.
func opDecided(op *soakOp) bool { return op != nil && op.Rec.Over != "" }

// readSoakOps reads once, concurrently, the monitor of every op of ops
// not over yet (ops[j] is b[j]'s), each read holding one of sem's places,
// and updates the ops with what the monitors said.
func (s *session) readSoakOps(ctx context.Context, b []spoolEntry, ops []*soakOp, sem chan struct{}) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ops))
	for j, so := range ops {
		if opOver(so) {
			continue
		}
		u, err := url.Parse(so.URL)
		if err != nil {
			so.URL, so.Rec.Error = "", s.scrub(err.Error())
			continue
		}
		op := &operation{rec: so.Rec, url: u, header: s.monitorHeader(b[j].in, idemcheck.Original)}
		wg.Go(func() {
			errs[j] = s.readOperation(ctx, op, sem)
			so.Rec = op.rec
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
