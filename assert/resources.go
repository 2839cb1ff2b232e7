package assert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// creators returns the first success of each distinct resource, in the
// order the client saw them.
func creators(succ []success) []success {
	seen := map[string]bool{}
	var out []success
	for _, s := range succ {
		if !seen[s.resource] {
			seen[s.resource] = true
			out = append(out, s)
		}
	}
	return out
}

func (c *intentCheck) successes() []success {
	var out []success
	for _, a := range c.attempts {
		if a.Outcome != idemcheck.Replied || !c.policy.Replay(a.Status) || !a.Variant.SameRequest() {
			continue
		}
		if c.policy.AckOnly {
			// An acknowledgement names no resource: every success is the same.
			out = append(out, success{att: a, resource: "ack", idField: "ack"})
			continue
		}
		body := canonicalBody(a.RespBody, c.policy.IgnoreFields)
		id, ptr := resourceID(a.RespBody, a.Body, c.policy.ResourceID)
		s := success{att: a, resource: id, idField: ptr, body: body}
		if ptr == "" {
			s.resource = "body:" + body
		}
		out = append(out, s)
	}
	// The original is the success the client saw first.
	sort.SliceStable(out, func(i, j int) bool { return out[i].att.End.Before(out[j].att.End) })
	return out
}

// checkResources compares every success with the first one: another
// resource means another execution; the same resource told differently
// means a replay that is not the saved reply.
func (c *intentCheck) checkResources(succ []success) {
	if len(succ) == 0 {
		return
	}
	first := succ[0]
	var concurrent, fresh, mismatch []success
	seen := map[string]bool{first.resource: true}
	for _, s := range succ[1:] {
		switch {
		case s.resource != first.resource && !seen[s.resource]:
			seen[s.resource] = true
			if s.att.Start.After(first.att.End) {
				fresh = append(fresh, s)
			} else {
				concurrent = append(concurrent, s)
			}
		case s.resource == first.resource && c.policy.AckOnly:
			// Acknowledgements are not replays: nothing to compare.
		case s.resource == first.resource:
			if s.att.Status != first.att.Status || s.body != first.body {
				mismatch = append(mismatch, s)
			} else if h := c.policy.ReplayHeader; h != "" && s.att.Start.After(first.att.End) && !headerTrue(s.att.RespHeader.Get(h)) {
				mismatch = append(mismatch, s)
			}
		}
	}
	field := first.idField
	if field == "" {
		field = "the body"
	}
	if len(concurrent) > 0 {
		w := append([]success{first}, concurrent...)
		c.add(idemcheck.MultipleCreated, witnesses(w),
			fmt.Sprintf("%d attempts with key %s were in flight together and %d distinct resources came back as successes (%s: %s): "+
				"each of those attempts executed. Concurrent duplicates must get %s or a replay of the one resource.%s",
				c.overlapping(), c.intent.Key, len(w), field, resources(w), inProgressText(c.policy), c.inTurnText()),
			map[string]any{"distinct_resources": len(w), "statuses": c.statusCounts()})
	}
	if len(fresh) > 0 {
		w := append([]success{first}, fresh...)
		c.add(idemcheck.FreshResultOnReplay, witnesses(w),
			fmt.Sprintf("attempt %d succeeded with %s %s; attempt %d sent the same key after that reply had arrived and got %d with a new resource %s: "+
				"the retry was executed again instead of replayed, and the client cannot tell a duplicate exists.",
				first.att.ID, field, short(first.resource), fresh[0].att.ID, fresh[0].att.Status, short(fresh[0].resource)),
			map[string]any{"distinct_resources": len(w)})
	}
	if len(mismatch) > 0 {
		m := mismatch[0]
		why := fmt.Sprintf("status %d, body %s", m.att.Status, short(m.att.RespBody))
		if m.att.Status == first.att.Status && m.body == first.body {
			why = fmt.Sprintf("the same body but no %q header", c.policy.ReplayHeader)
		}
		c.add(idemcheck.ReplayMismatch, witnesses([]success{first, m}),
			fmt.Sprintf("attempt %d got status %d, body %s; attempt %d, a replay of the same resource, got %s. "+
				"A replay must return the saved status and body (fields ignored by policy: %s).",
				first.att.ID, first.att.Status, short(first.att.RespBody), m.att.ID, why, ignored(c.policy.IgnoreFields)),
			map[string]any{"replays_differing": len(mismatch)})
	}
}

func witnesses(s []success) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.att.ID
	}
	return out
}

func resources(s []success) string {
	var r []string
	for i, x := range s {
		if i == 3 {
			r = append(r, fmt.Sprintf("and %d more", len(s)-3))
			break
		}
		r = append(r, short(x.resource))
	}
	return strings.Join(r, ", ")
}
