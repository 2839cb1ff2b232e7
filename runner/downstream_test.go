package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

// A call that names an intent's id belongs to it, whole ids only; one
// that names none belongs to the round that ran while it arrived.
func TestMapCall(t *testing.T) {
	intents := []idemcheck.Intent{
		{ID: "ic-r-1", Check: idemcheck.CheckConcurrentBurst, Round: 1},
		{ID: "ic-r-12", Check: idemcheck.CheckLostReply, Round: 2},
		{ID: "ic-r-13", Check: idemcheck.CheckCrashLease, Round: 1},
	}
	cur := intents[2]
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		body, want, how string
	}{
		{`{"amount":4000,"metadata":{"intent":"ic-r-1"}}`, "ic-r-1", idemcheck.MappedByID},
		{`{"metadata":{"intent":"ic-r-12"}}`, "ic-r-12", idemcheck.MappedByID},
		{`{"metadata":{"intent":"ic-r-1x"}}`, "ic-r-1", idemcheck.MappedByID},
		{`{"amount":4000}`, "ic-r-13", idemcheck.MappedByWindow},
		{`{"metadata":{"intent":"ic-r-123"}}`, "ic-r-13", idemcheck.MappedByWindow},
	} {
		ev := MapCall(idemcheck.ProviderCall{Body: c.body, Start: at}, intents, cur)
		assert.Equal(t, idemcheck.ProviderCalled, ev.Kind)
		assert.Equal(t, c.want, ev.Intent, c.body)
		assert.Equal(t, c.how, ev.Call.Mapped, c.body)
		assert.Equal(t, at, ev.Time)
		for _, in := range intents {
			if in.ID == c.want {
				assert.Equal(t, in.Check, ev.Check)
				assert.Equal(t, in.Round, ev.Round)
			}
		}
	}
}
