package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// takeCalls records the calls the target made to its provider doubles
// since the last take as events, each tied to an intent (MapCall); cur is
// the intent whose round ran meanwhile. A target without doubles has none.
func (s *session) takeCalls(cur idemcheck.Intent) {
	d, ok := s.Powers.(targets.Downstream)
	if !ok {
		return
	}
	for _, c := range d.ProviderCalls() {
		c.Body = s.scrub(c.Body)
		s.rec.event(MapCall(c, s.intents, cur))
	}
}

// armProvider puts f on the target's provider doubles for one attempt.
func (s *session) armProvider(f provider.Fault) (func() bool, error) {
	if f.IsNone() {
		return func() bool { return false }, nil
	}
	d, ok := s.Powers.(targets.Downstream)
	if !ok || len(d.ProviderNames()) == 0 {
		return nil, fmt.Errorf("fault %s needs a provider double handed to the target", f.Name())
	}
	return d.ArmProvider(f), nil
}

// providerLanding records whether a provider fault acted: the target
// called a double while it was armed.
func (s *session) providerLanding(a idemcheck.Attempt, f provider.Fault, acted bool) {
	if f.IsNone() {
		return
	}
	if acted {
		s.landed(a, f.Name(), idemcheck.LandedProviderCall, "", time.Now(), "", 0)
		return
	}
	missed := "the target called no provider double while the attempt ran"
	if d, ok := s.Powers.(targets.Downstream); ok {
		if names := d.ProviderNames(); len(names) == 1 {
			missed += ", though its URL was in " + names[0]
		} else {
			missed += ", though their URLs were in " + strings.Join(names, ", ")
		}
	}
	s.landed(a, f.Name(), "", "", time.Time{}, missed, 0)
}

// dropCalls forgets the calls made since the last take: the pre-flight's,
// which the history does not record.
func (s *session) dropCalls() {
	if d, ok := s.Powers.(targets.Downstream); ok {
		d.ProviderCalls()
	}
}

// MapCall ties a provider call to the intent that caused it and returns
// it as a ProviderCalled event.
//
// A call that names an intent's id (the {{intent}} of the request body,
// which a target forwards to the provider, in a charge's metadata, say)
// belongs to that intent, the newest one named when several are. A call
// that names none belongs to cur, the intent whose round ran while it
// arrived: rounds run one after another, so that round is the only client
// traffic it can stem from. That fallback is wrong for a target that calls
// the provider on its own time (a queue, a retry job, after it answered):
// such a call lands in whatever round runs then. docs/provider.md says so.
func MapCall(c idemcheck.ProviderCall, intents []idemcheck.Intent, cur idemcheck.Intent) idemcheck.Event {
	in, how := cur, idemcheck.MappedByWindow
	for i := len(intents) - 1; i >= 0; i-- {
		if names(c.Body, intents[i].ID) || names(c.Path, intents[i].ID) {
			in, how = intents[i], idemcheck.MappedByID
			break
		}
	}
	c.Mapped = how
	return idemcheck.Event{Kind: idemcheck.ProviderCalled, Time: c.Start, Check: in.Check, Intent: in.ID, Round: in.Round, Call: &c}
}

// names reports whether text holds id as a whole: not followed by a
// digit, so ic-x-1 is not found in ic-x-12.
func names(text, id string) bool {
	for off := 0; id != ""; {
		i := strings.Index(text[off:], id)
		if i < 0 {
			return false
		}
		end := off + i + len(id)
		if end == len(text) || text[end] < '0' || text[end] > '9' {
			return true
		}
		off = off + i + 1
	}
	return false
}
