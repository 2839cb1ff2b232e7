package assert

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// effectQueryText says how an intent's effects were counted, for an
// explanation: the query with its arguments, and for a query stated per
// key that ran once for each of the intent's keys, that its count is
// their sum, with each key's own.
func effectQueryText(o *idemcheck.Observation) string {
	if len(o.Keys) == 0 {
		return fmt.Sprintf("%s with %s", o.Query, strings.Join(o.Args, ", "))
	}
	parts := make([]string, len(o.Keys))
	for i, k := range o.Keys {
		parts[i] = fmt.Sprintf("%d for %s", k.Effects, k.Key)
	}
	return fmt.Sprintf("%s, run once for each of the intent's %d keys and summed: %s", o.Query, len(o.Keys), strings.Join(parts, ", "))
}

// effectsByKey is each key's count, for an anomaly's observed values.
func effectsByKey(o *idemcheck.Observation) map[string]int64 {
	m := make(map[string]int64, len(o.Keys))
	for _, k := range o.Keys {
		m[k.Key] += k.Effects
	}
	return m
}

// checkEffects compares the database's count with what the wire promised.
// Effects that a more specific anomaly already explains (a changed request
// that was executed) are not counted again as duplicates.
func (c *intentCheck) checkEffects(succ []success, v variantEffects) {
	if c.obs == nil {
		return
	}
	n := c.obs.Effects
	observed := map[string]any{"effects": n, "query": c.obs.Query, "args": c.obs.Args, "statuses": c.statusCounts()}
	if len(c.obs.Keys) > 0 {
		observed["effects_by_key"] = effectsByKey(c.obs)
	}
	allowed, promised := effectBounds(c, succ, v)
	defer c.checkLate(allowed, promised)
	// The witnesses of a duplicate are the attempts that created distinct
	// resources when the wire shows them, else every attempt that was sent.
	witness := ids(c.attempts)
	if cr := creators(succ); len(cr) > 1 {
		witness = witnesses(cr)
	}
	switch {
	case n > allowed && len(v.refusedSigned) > 0 && len(succ) == 0:
		// Every delivery was refused for its signature, and the work was
		// done anyway: the signature is checked after the work.
		c.add(idemcheck.BadSignatureAccepted, ids(v.refusedSigned),
			fmt.Sprintf("%d deliveries with a forged or stale signature were refused (%s), yet the effect query counts %d effects (%s with %s): "+
				"the consumer did the work before it checked the signature, so a forged delivery is applied while its sender is told no.",
				len(v.refusedSigned), statusesOf(v.refusedSigned), n, c.obs.Query, strings.Join(c.obs.Args, ", ")),
			observed)
	case n > allowed:
		c.add(idemcheck.DuplicateEffect, witness,
			fmt.Sprintf("%d attempts sent key %s for one intent, and the effect query counts %d effects where %d may exist (%s). One intent must leave exactly one effect.%s",
				len(c.attempts), c.intent.Key, n, allowed, effectQueryText(c.obs), c.scheduleText()+c.cutAfterText()),
			observed)
	case n < promised && c.effectsPending(promised) != "":
		// Not lost yet: the effect may still land (the round is
		// undecided, see gatherEvidence).
	case n < promised:
		first := c.attempts[0].ID
		if len(succ) > 0 {
			first = succ[0].att.ID
		}
		if c.policy.AckOnly {
			if a, ok := c.firstAck(); ok {
				c.add(idemcheck.LostEffect, []int{a.ID},
					fmt.Sprintf("attempt %d delivered event %s and was acknowledged with %d, so the sender will not deliver it again; yet the effect query counts %d "+
						"where %d acknowledged events must have left theirs (%s): the event was skipped, and nothing will ever apply it.",
						a.ID, a.Key, a.Status, n, promised, effectQueryText(c.obs)),
					observed)
				return
			}
		}
		c.add(idemcheck.LostEffect, []int{first},
			fmt.Sprintf("the client was told of %d successful executions (attempt %d first), yet the effect query counts %d (%s): work the client was promised is not there.",
				promised, first, n, effectQueryText(c.obs)),
			observed)
	}
}

// scheduleText says, for an intent whose race was scheduled, what the
// database link did: "" otherwise.
func (c *intentCheck) scheduleText() string {
	b := c.scheduled
	if b == nil {
		return ""
	}
	if b.InTurn {
		return c.inTurnText()
	}
	return fmt.Sprintf(" The race was scheduled, not timed: the database link held the first write of each of %d attempts until %s, "+
		"then released them together, so all %d had read the key before any wrote it (write-held and writes-released events of burst %d).",
		b.Held, releaseText[b.Release], b.Held, b.ID)
}

// cutAfterText says, for an intent whose attempt failed because the
// database link was cut after its effect write committed (db-cut-after),
// why that failure left an effect: "" otherwise.
func (c *intentCheck) cutAfterText() string {
	for _, a := range c.attempts {
		if !strings.HasPrefix(a.Fault, "db-cut-after") && !strings.Contains(a.Fault, "+db-cut-after") {
			continue
		}
		var got string
		switch {
		case a.Outcome != idemcheck.Replied:
			got = "got no reply (the target died of the dropped connection, or dropped the request)"
		case a.Status >= 200 && a.Status < 300:
			continue
		default:
			got = fmt.Sprintf("was answered %d", a.Status)
		}
		return fmt.Sprintf(" Attempt %d's effect write reached the database, which committed it, and the database link was then cut before "+
			"the answer reached the target, as a dropped connection does; the attempt %s, and the retry with the same key was executed "+
			"again: the target took a database error for \"nothing happened\" (it released the key, or kept it only in the memory of a "+
			"process that died), where the effect had committed.", a.ID, got)
	}
	return ""
}

// inTurnText says, for an intent whose burst's writes were released one at
// a time, what the database link did: "" otherwise.
func (c *intentCheck) inTurnText() string {
	b := c.scheduled
	if b == nil || !b.InTurn {
		return ""
	}
	order := ""
	if len(c.turns) > 1 {
		conns := make([]string, len(c.turns))
		for i, e := range c.turns {
			conns[i] = fmt.Sprint(e.Conn)
		}
		order = fmt.Sprintf(" (the writes of connections %s, in that order)", strings.Join(conns, ", "))
	}
	return fmt.Sprintf(" The race was scheduled, not timed: the database link held the first write of each of %d attempts until %s, "+
		"so all %d had read the key before any wrote it, then released them one at a time, the last held first%s, each once the database "+
		"had answered the one before and the target had gone quiet: every attempt wrote after the ones before it had written and finished, "+
		"which is when a write that overwrites another's (a claim or a saved reply taken by last writer wins) shows "+
		"(write-held and writes-released events of burst %d).",
		b.Held, releaseText[b.Release], b.Held, order, b.ID)
}

// turns returns the write-held events of intent that were released, in
// the order they were.
func turns(evs []idemcheck.Event, intent string) []idemcheck.Event {
	var out []idemcheck.Event
	for _, e := range evs {
		if e.Kind == idemcheck.WriteHeld && e.Intent == intent && e.Order > 0 {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b idemcheck.Event) int { return a.Order - b.Order })
	return out
}
