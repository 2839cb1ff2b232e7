package assert

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// The downstream rules: what the target's own calls to a provider double
// (ProviderCalled events) show about one intent. A payment provider
// replays a key it has seen, so an intent is charged once however often
// the target retries, provided every call carries a key derived from the
// client's. The rules hold whatever the target's own table says: the
// effect they count is at the provider.

// callsByIntent gathers the provider calls of each intent, in arrival
// order.
func callsByIntent(h *idemcheck.History) map[string][]idemcheck.ProviderCall {
	m := map[string][]idemcheck.ProviderCall{}
	for _, e := range h.Events {
		if e.Kind == idemcheck.ProviderCalled && e.Call != nil {
			m[e.Intent] = append(m[e.Intent], *e.Call)
		}
	}
	return m
}

// checkProvider applies the downstream rules to the intent's calls.
func (c *intentCheck) checkProvider(calls []idemcheck.ProviderCall) {
	if len(calls) == 0 {
		return
	}
	var keyless []idemcheck.ProviderCall
	for _, call := range calls {
		if call.Key == "" {
			keyless = append(keyless, call)
		}
	}
	if len(keyless) > 0 {
		c.addCalls(idemcheck.ProviderCallWithoutKey, keyless, fmt.Sprintf(
			"the target called the provider %s %d time(s) with no idempotency key (%s): the provider cannot tell a retry of that call from a new charge, "+
				"so a timeout or a crash between the charge and the target's commit charges the customer again; forward a key derived from the client's Idempotency-Key",
			keyless[0].Provider, len(keyless), callList(keyless)), nil)
	}
	if !c.oneCharge() {
		return
	}
	var effective []idemcheck.ProviderCall
	keys := map[string]bool{}
	for _, call := range calls {
		if call.Effective() {
			effective = append(effective, call)
			keys[call.Key] = true
		}
	}
	if len(effective) < 2 {
		return
	}
	c.addCalls(idemcheck.ProviderDuplicateCharge, effective, fmt.Sprintf(
		"one client intent (key %s) caused %d charges at the provider %s (%s): the target reached it under %d distinct keys or without one, "+
			"so each of its retries was a new charge to the provider, whatever the API's own table shows; the key it forwards must be derived from the client's key, "+
			"the same for every attempt",
		c.intent.Key, len(effective), effective[0].Provider, callList(effective), len(keys)),
		map[string]any{"provider_charges": len(effective), "provider_calls": len(calls)})
}

// oneCharge reports whether the intent may charge at most once: every
// attempt it sent asks for the same thing (its own request, reordered, a
// failing body and its retries), none a second intent by contract (another
// key, another client, no key).
func (c *intentCheck) oneCharge() bool {
	for _, a := range c.attempts {
		if a.Outcome == idemcheck.NotSent {
			continue
		}
		if !a.Variant.SameRequest() && a.Variant != idemcheck.Failing {
			return false
		}
	}
	return true
}

// addCalls adds an anomaly witnessed by provider calls: its attempts are
// those in whose time a call arrived (all the intent's when none was).
func (c *intentCheck) addCalls(kind idemcheck.Kind, calls []idemcheck.ProviderCall, explanation string, observed map[string]any) {
	var atts []int
	for _, a := range c.attempts {
		for _, call := range calls {
			if !call.Start.Before(a.Start) && (a.End.IsZero() || !call.Start.After(a.End)) {
				atts = append(atts, a.ID)
				break
			}
		}
	}
	if len(atts) == 0 {
		atts = ids(c.attempts)
	}
	c.add(kind, atts, explanation, observed)
	c.out[len(c.out)-1].Calls = calls
}

// callList names each call: its number, key and what it did.
func callList(calls []idemcheck.ProviderCall) string {
	var parts []string
	for _, call := range calls {
		key := "no key"
		if call.Key != "" {
			key = "key " + short(call.Key)
		}
		what := call.Did("refused")
		if call.Fault != "" {
			what += " (" + call.Fault + ")"
		}
		parts = append(parts, fmt.Sprintf("call %d, %s, %s", call.Seq, key, what))
	}
	const max = 8
	if len(parts) > max {
		parts = append(parts[:max], fmt.Sprintf("%d more", len(parts)-max))
	}
	return strings.Join(parts, "; ")
}

// providerTraffic is the check's traffic at the provider doubles, nil when
// its intents caused none.
func providerTraffic(h *idemcheck.History, check string, calls map[string][]idemcheck.ProviderCall) *idemcheck.ProviderTraffic {
	var t idemcheck.ProviderTraffic
	intents := 0
	for _, in := range h.Intents {
		if in.Check != check {
			continue
		}
		intents++
		cs := calls[in.ID]
		t.Calls += len(cs)
		t.MaxCallsPerIntent = max(t.MaxCallsPerIntent, len(cs))
		for _, c := range cs {
			if c.Effective() {
				t.Charges++
			}
		}
	}
	if t.Calls == 0 || intents == 0 {
		return nil
	}
	t.CallsPerIntent = float64(int(float64(t.Calls)/float64(intents)*100+0.5)) / 100
	return &t
}
