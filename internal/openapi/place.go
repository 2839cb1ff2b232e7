package openapi

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// placeInExample puts {{intent}} in a string member of an example object:
// a member a list operation filters by first, then a free string member the
// example already sets, then one the schema declares and the example
// leaves out. It returns the example and the member's pointer, or "" when
// no member fits.
func placeInExample(b *budget, ex any, schema *openapi3.SchemaRef, filters map[string]string) (any, string) {
	obj, ok := ex.(map[string]any)
	if !ok {
		return ex, ""
	}
	var props map[string]*openapi3.SchemaRef
	if schema != nil && schema.Value != nil {
		g := newGen(b)
		if f, err := g.flatten(schema.Value); err == nil {
			props = f.props
			// The members of every alternative: the example is one of them.
			for _, alt := range f.oneOf {
				if alt == nil || alt.Value == nil {
					continue
				}
				if af, err := g.flatten(alt.Value); err == nil {
					for k, v := range af.props {
						if _, ok := props[k]; !ok {
							props[k] = v
						}
					}
				}
			}
			if len(props) == 0 {
				props = nil
			}
		}
	}
	fits := func(name string) bool {
		if pr, ok := props[name]; ok && pr != nil && pr.Value != nil {
			return freeString(pr.Value)
		}
		_, isString := obj[name].(string)
		return isString && props == nil
	}
	var names []string
	for k := range obj {
		names = append(names, k)
	}
	for k := range props {
		if _, ok := obj[k]; !ok {
			names = append(names, k)
		}
	}
	best := rank(names, fits, filters, func(n string) bool { _, ok := obj[n]; return ok })
	if best == "" {
		return ex, ""
	}
	obj[best] = IntentHole
	return obj, "/" + escapePointer(best)
}

// place puts {{intent}} in a generated instance: a top-level member a list
// operation filters by, else the best free string member set, else the
// best free optional member nearest the top.
func (g *gen) place(v any, filters map[string]string) (any, string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return v, ""
	}
	// Top-level members first, set or optional.
	var top []string
	free, set := map[string]bool{}, map[string]bool{}
	for _, s := range g.slots {
		if strings.Count(s.ptr, "/") == 1 {
			top = append(top, s.name)
			free[s.name], set[s.name] = true, true
		}
	}
	for _, s := range g.optional {
		if s.ptr == "" {
			top = append(top, s.name)
			free[s.name] = true
		}
	}
	// A member the body sets anyway comes before one it would add.
	if best := rank(top, func(n string) bool { return free[n] }, filters, func(n string) bool { return set[n] }); best != "" {
		obj[best] = IntentHole
		return obj, "/" + escapePointer(best)
	}
	// A nested member already set.
	for _, s := range g.slots {
		if setPointer(obj, s.ptr, IntentHole) {
			return obj, s.ptr
		}
	}
	// A nested optional member of an object that was built.
	opts := slices.Clone(g.optional)
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].depth < opts[j].depth })
	for _, s := range opts {
		if setPointer(obj, s.ptr+"/"+escapePointer(s.name), IntentHole) {
			return obj, s.ptr + "/" + escapePointer(s.name)
		}
	}
	return obj, ""
}

// rank picks, among names that fit, one a list operation filters by, then
// the one whose name best says it identifies the request.
func rank(names []string, fits func(string) bool, filters map[string]string, present func(string) bool) string {
	sort.Strings(names)
	best, bestScore := "", -1
	for _, n := range names {
		if !fits(n) {
			continue
		}
		s := nameScore(n)
		if _, ok := filters[n]; ok {
			s += 100
		}
		if present(n) {
			s += 10
		}
		if s > bestScore {
			best, bestScore = n, s
		}
	}
	return best
}

func nameScore(n string) int {
	l := strings.ToLower(n)
	switch {
	case strings.Contains(l, "reference") || strings.Contains(l, "ref"):
		return 6
	case strings.HasSuffix(l, "id"):
		return 5
	case strings.Contains(l, "description") || strings.Contains(l, "note") || strings.Contains(l, "memo"):
		return 4
	case strings.Contains(l, "name") || strings.Contains(l, "title") || strings.Contains(l, "label"):
		return 3
	}
	return 1
}

// setPointer sets the member at ptr (whose parent exists) to v.
func setPointer(root map[string]any, ptr string, v any) bool {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := any(root)
	for i, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = v
				return true
			}
			cur = c[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return false
			}
			if last {
				c[n] = v
				return true
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}
