package bench

import (
	"fmt"
	"slices"
)

// Stat is one figure over the runs of a benchmark.
type Stat []float64

// Median is the middle value, the mean of the two middle ones for an even
// count, and 0 for none.
func (s Stat) Median() float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// Format prints the median with the range in brackets, each with the
// verb f: "12.3 [11.0–14.1]"; one value alone, "n/a" for none.
func (s Stat) Format(f string) string {
	if len(s) == 0 {
		return "n/a"
	}
	if len(s) == 1 {
		return fmt.Sprintf(f, s[0])
	}
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.Median(), slices.Min(s), slices.Max(s))
}
