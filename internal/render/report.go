package render

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck"
)

// suiteName names a report in CI: the target's label, or its method and URL.
func suiteName(r idemcheck.Report) string {
	if r.Target.Name != "" {
		return r.Target.Name
	}
	return strings.TrimSpace(r.Target.Method + " " + targetURL(r.Target))
}

// stableName names a report the same on every run of the same target: the
// target's label, or its method and path. A URL would carry the port a
// started target got, which changes from run to run, and CI servers would
// see new tests every time.
func stableName(r idemcheck.Report) string {
	if r.Target.Name != "" {
		return r.Target.Name
	}
	return strings.TrimSpace(r.Target.Method + " " + r.Target.Path)
}

func targetURL(t idemcheck.Target) string {
	return strings.TrimSuffix(t.URL, "/") + t.Path
}

// checkAnomalies returns the anomalies a check points at. An index outside
// the report is an error rather than a panic: a report read from a file
// may have been edited by hand.
func checkAnomalies(r idemcheck.Report, ch idemcheck.CheckResult) ([]idemcheck.Anomaly, error) {
	out := make([]idemcheck.Anomaly, 0, len(ch.Anomalies))
	for _, i := range ch.Anomalies {
		if i < 0 || i >= len(r.Anomalies) {
			return nil, fmt.Errorf("report %q, check %s: anomaly index %d is outside the report's %d anomalies",
				suiteName(r), ch.Name, i, len(r.Anomalies))
		}
		out = append(out, r.Anomalies[i])
	}
	return out, nil
}

func checkStatus(r idemcheck.Report, ch idemcheck.CheckResult) error {
	switch ch.Status {
	case idemcheck.Pass, idemcheck.Fail, idemcheck.Skip, idemcheck.Inconclusive:
		return nil
	}
	return fmt.Errorf("report %q, check %s: unknown status %q (want pass, fail, skip or inconclusive)", suiteName(r), ch.Name, ch.Status)
}

// kindSummary counts anomalies by kind, in the order the kinds first
// appear, so the first kind named is the one a JUnit failure's type names.
func kindSummary(as []idemcheck.Anomaly) string {
	var order []idemcheck.Kind
	n := map[idemcheck.Kind]int{}
	for _, a := range as {
		if n[a.Kind] == 0 {
			order = append(order, a.Kind)
		}
		n[a.Kind]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = string(k)
		if n[k] > 1 {
			parts[i] += fmt.Sprintf(" x%d", n[k])
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// evidenceLine shows one witnessing attempt as a sentence on one line, its
// body cut to bodyMax bytes: the JSON report keeps bodies whole.
func evidenceLine(e idemcheck.Evidence, bodyMax int) string {
	line := fmt.Sprintf("Attempt %d (step %d) ", e.Attempt, e.Step)
	switch {
	case e.Error != "":
		line += "got no reply: " + oneLine(e.Error, bodyMax)
	case e.Status == 0:
		line += "got no reply"
	default:
		line += fmt.Sprintf("was answered %d", e.Status)
		if b := oneLine(e.Body, bodyMax); b != "" {
			line += " with " + b
		}
	}
	if e.Replayed != "" {
		line += " [replayed: " + oneLine(e.Replayed, 64) + "]"
	}
	return line
}

// callLine shows one call the target made to a provider double, the
// evidence of a provider-* anomaly, as one line: its number at the
// provider, its key (or none), what the provider did and how the call was
// tied to its intent.
func callLine(c idemcheck.ProviderCall, bodyMax int) string {
	key := "no key"
	if c.Key != "" {
		key = "key " + oneLine(c.Key, 80)
	}
	what := c.Did(fmt.Sprintf("answered %d", c.Status))
	if c.Fault != "" {
		what += " under " + c.Fault
	}
	line := fmt.Sprintf("Provider call %d to %s %s %s, %s: %s", c.Seq, c.Provider, c.Method, oneLine(c.Path, 80), key, what)
	if b := oneLine(c.Body, bodyMax); b != "" {
		line += "; body " + b
	}
	if c.Mapped == idemcheck.MappedByWindow {
		line += " (named no intent: tied by its time)"
	}
	return line
}

// observedLine shows an anomaly's observed figures as one sentence, keys
// sorted so the output is stable: "Observed: effects 2; statuses 201 x32."
func observedLine(o map[string]any) string {
	if len(o) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(o))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.ReplaceAll(k, "_", " ") + " " + observedValue(o[k])
	}
	return "Observed: " + clean(strings.Join(parts, "; ")) + "."
}

// observedValue writes a figure for people: a count by status as
// "201 x32, 409 x3", a list as "a, b", never Go's map[…] or […] syntax.
func observedValue(v any) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		type kv struct{ k, v string }
		var out []kv
		for it := rv.MapRange(); it.Next(); {
			out = append(out, kv{fmt.Sprint(it.Key().Interface()), observedValue(it.Value().Interface())})
		}
		sort.Slice(out, func(i, j int) bool {
			if len(out[i].k) != len(out[j].k) && isDigits(out[i].k) && isDigits(out[j].k) {
				return len(out[i].k) < len(out[j].k)
			}
			return out[i].k < out[j].k
		})
		parts := make([]string, len(out))
		for i, p := range out {
			parts[i] = p.k + " x" + p.v
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Sprintf("%s", v)
		}
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = observedValue(rv.Index(i).Interface())
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	case reflect.Invalid:
		return "none"
	}
	return fmt.Sprint(v)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// oneLine makes s printable and one line: whitespace runs become one
// space and it is cut to max bytes on a rune boundary.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(clean(s)), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes more)", len(s)-cut)
}

// clean makes s safe for XML 1.0 and for a terminal or a web page: bytes
// that are not UTF-8 and characters XML forbids or that steer a display
// (C0 and C1 controls besides tab, newline and carriage return, DEL,
// U+FFFE, U+FFFF) are shown as Go escapes (\x1b, \xff, \ufffe), so a
// reviewer still sees that they were there.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if !printable(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !printable(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !printable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r >= 0x80 && r < 0xa0:
		return false
	case r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff, r > 0x10ffff:
		return false
	}
	return true
}
