package assert

import (
	"fmt"
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
