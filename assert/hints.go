package assert

import (
	"strings"

	"github.com/idemcheck/idemcheck"
)

// DefaultReplayMarker is the replay marker looked for when the policy names
// none: the header most middlewares that mark replays set.
const DefaultReplayMarker = "Idempotent-Replayed"

// hintKeyHeader adds a hint to the first fresh-result-on-replay anomaly when
// every sequential replay of the run created a new resource and no reply
// ever carried a replay marker. A target that executes every retry anew and
// never says "replayed" is most often not reading the key at all: the
// harness sends it under a header the target does not look at. The hint
// names the policy's key header setting, in words; it changes no verdict.
func hintKeyHeader(h *idemcheck.History, out []idemcheck.Anomaly, words Words) []idemcheck.Anomaly {
	p := h.Run.Policy
	if p.KeyPointer != "" || p.AckOnly {
		return out // the key travels in the body, or replies are acknowledgements
	}
	marker := p.ReplayHeader
	if marker == "" {
		marker = DefaultReplayMarker
	}
	replayed := map[string]bool{}
	for in, atts := range h.ByIntent() {
		if hasSequentialReplay(p, atts) {
			replayed[in] = true
		}
	}
	for _, a := range h.Attempts {
		if a.Outcome == idemcheck.Replied && a.RespHeader != nil && headerTrue(a.RespHeader.Get(marker)) {
			return out // the target does mark replays: it reads the key
		}
	}
	fresh := map[string]bool{}
	first := -1
	for i, a := range out {
		if a.Kind == idemcheck.FreshResultOnReplay && replayed[a.Intent] {
			fresh[a.Intent] = true
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 || len(fresh) != len(replayed) {
		return out
	}
	a := &out[first]
	a.Explanation += idemcheck.Phrasef(" Hint: every one of the %d intents replayed in this run got a new resource, and no reply carried a replay marker (%s): "+
		"the target may not read the key at all. Check that it expects the key in %q; if it reads another header, name that header (%s).",
		len(replayed), marker, p.KeyHeader, idemcheck.Setting("Policy.KeyHeader")).In(words)
	obs := make(map[string]any, len(a.Observed)+1)
	for k, v := range a.Observed {
		obs[k] = v
	}
	obs["hint"] = "key-header"
	a.Observed = obs
	return out
}

// hasSequentialReplay reports whether the same request was answered with a
// success after an earlier success's reply had arrived.
func hasSequentialReplay(p idemcheck.Policy, atts []idemcheck.Attempt) bool {
	for _, a := range atts {
		if a.Outcome != idemcheck.Replied || !p.Replay(a.Status) || !a.Variant.SameRequest() {
			continue
		}
		for _, b := range atts {
			if b.ID != a.ID && b.Outcome == idemcheck.Replied && p.Replay(b.Status) && b.Variant.SameRequest() && a.End.Before(b.Start) {
				return true
			}
		}
	}
	return false
}

// headerTrue reports whether a header value says yes, as a replay header
// such as Idempotent-Replayed does: "true", "?1" (a structured boolean),
// "1" or "yes", in any case.
func headerTrue(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "true" || v == "?1" || v == "1" || v == "yes"
}
