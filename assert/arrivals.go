package assert

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
)

// A burst's release spread is measured at the client: how tightly its
// attempts left idemcheck. Across a network, or into a target whose intake
// takes requests one after another, they arrive further apart. A target
// that says when it received each request (Policy.ArrivalHeader, in its
// replies, by its own clock) lets the burst's proof state the arrival
// spread too, so a user can tell a tight release from a tight arrival. The
// history keeps every reply's headers, so the arrivals are read from it,
// and `idemcheck check` states the same offline.

// arrivalProof states how tightly the check's bursts arrived at the target,
// by the arrival header of their replies; "" when the policy names none, or
// no burst had two replies that carried it.
func arrivalProof(h *idemcheck.History, check string) string {
	name := h.Run.Policy.ArrivalHeader
	if name == "" {
		return ""
	}
	byBurst := map[int][]time.Time{}
	bursts := map[int]bool{}
	bad := ""
	for _, a := range h.Attempts {
		if a.Check != check || a.Burst == 0 {
			continue
		}
		bursts[a.Burst] = true
		v := a.RespHeader.Get(name)
		if a.Outcome != idemcheck.Replied || v == "" {
			continue
		}
		t, err := ParseArrival(v)
		if err != nil {
			bad = fmt.Sprintf("attempt %d's %s: %v", a.ID, name, err)
			continue
		}
		byBurst[a.Burst] = append(byBurst[a.Burst], t)
	}
	var spreads, gaps []time.Duration
	for _, ts := range byBurst {
		if len(ts) < 2 {
			continue
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		spreads = append(spreads, ts[len(ts)-1].Sub(ts[0]))
		gaps = append(gaps, ts[1].Sub(ts[0]))
	}
	if len(spreads) == 0 {
		if bad != "" {
			return fmt.Sprintf("arrival at the target not known: %s", bad)
		}
		return fmt.Sprintf("arrival at the target not known: no burst had two replies carrying %s", name)
	}
	slices.Sort(spreads)
	slices.Sort(gaps)
	return fmt.Sprintf("arrived at the target (its %s, by its own clock) within median %s, max %s, the first two %s apart at the median, over %d of %d bursts",
		name, fmtSpread(spreads[len(spreads)/2]), fmtSpread(spreads[len(spreads)-1]), fmtSpread(gaps[len(gaps)/2]), len(spreads), len(bursts))
}

// ParseArrival reads an arrival header's value (Policy.ArrivalHeader):
// Unix time as an integer or decimal in seconds, milliseconds,
// microseconds or nanoseconds, told apart by its size, or RFC 3339 with
// any fraction of a second.
func ParseArrival(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	whole, frac, _ := strings.Cut(v, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, fmt.Errorf("%q is neither Unix time nor RFC 3339", v)
	}
	f := 0.0
	if frac != "" {
		if f, err = strconv.ParseFloat("0."+frac, 64); err != nil {
			return time.Time{}, fmt.Errorf("%q is neither Unix time nor RFC 3339", v)
		}
	}
	// Seconds since 1970 have 10 digits until 2286; each finer unit adds 3.
	var unit time.Duration
	switch digits := len(whole); {
	case digits <= 10:
		unit = time.Second
	case digits <= 13:
		unit = time.Millisecond
	case digits <= 16:
		unit = time.Microsecond
	default:
		unit = time.Nanosecond
	}
	return time.Unix(0, 0).Add(time.Duration(n)*unit + time.Duration(f*float64(unit))), nil
}
