package openapi

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// MaxDepth bounds how deep a generated instance nests, and MaxSteps how
// many schemas one operation's generation may visit: a recursive schema or
// a graph of allOf that fans out stops there instead of hanging.
// MaxDocSteps bounds the same over a whole description: without it, every
// one of thousands of operations could spend MaxSteps on one shared wide
// schema (2,000 of them took 37 s); past it, the operations left are
// skipped with the reason. It is far above what real descriptions use
// (the 400 operations of TestLargeDescription visit 2,000).
const (
	MaxDepth    = 12
	MaxSteps    = 20000
	MaxDocSteps = 1_000_000
)

// budget is what a description has left of MaxDocSteps.
type budget struct{ left int }

// IntentHole is the text that carries an intent's id in a generated body.
const IntentHole = "{{intent}}"

// intentLen is the longest intent id a run makes ("ic-" + 8 hex + "-" +
// a sequence), with room to spare; a string field shorter than that
// cannot carry one.
const intentLen = 24

// errBudget is a generation that ran past MaxSteps or MaxDepth on a
// required member.
type genError struct{ msg string }

func (e *genError) Error() string { return e.msg }

// gen builds minimal valid instances of schemas.
type gen struct {
	steps int
	// doc is the description's budget, shared by its operations' gens;
	// nil for none.
	doc *budget
	// stack holds the schemas being generated, to see recursion.
	stack map[*openapi3.Schema]int
	// slots are the free string members found (JSON pointers), in the
	// order generation met them: where {{intent}} may go.
	slots []slot
	// optional are free string members left out because they are not
	// required, nearest the top first.
	optional []optSlot
}

type slot struct {
	ptr  string
	name string
}

type optSlot struct {
	ptr    string // the object's pointer
	name   string
	depth  int
	schema *openapi3.Schema
}

func newGen(b *budget) *gen { return &gen{stack: map[*openapi3.Schema]int{}, doc: b} }

func (g *gen) step() error {
	g.steps++
	if g.steps > MaxSteps {
		return &genError{fmt.Sprintf("the schema is too large to build a body from (more than %d schemas visited)", MaxSteps)}
	}
	if g.doc != nil {
		if g.doc.left--; g.doc.left < 0 {
			return &genError{fmt.Sprintf("the description is too large to generate from whole (its operations visited more than %d schemas): this operation and those after it are skipped; pass --methods or split the description", MaxDocSteps)}
		}
	}
	return nil
}

// flat is a schema with its allOf merged in: the members of an object, its
// required names, its type and constraints.
type flat struct {
	s        *openapi3.Schema // the first schema with a type, else the root
	props    map[string]*openapi3.SchemaRef
	order    []string
	required []string
	types    []string
	oneOf    openapi3.SchemaRefs
	addl     *openapi3.SchemaRef
}

// flatten merges s with everything its allOf names, depth first, each
// schema once.
func (g *gen) flatten(s *openapi3.Schema) (*flat, error) {
	f := &flat{s: s, props: map[string]*openapi3.SchemaRef{}}
	seen := map[*openapi3.Schema]bool{}
	var walk func(x *openapi3.Schema, depth int) error
	walk = func(x *openapi3.Schema, depth int) error {
		if x == nil || seen[x] || depth > MaxDepth {
			return nil
		}
		seen[x] = true
		if err := g.step(); err != nil {
			return err
		}
		if x.Type != nil && len(*x.Type) > 0 && len(f.types) == 0 {
			f.types = x.Type.Slice()
			if f.s == s {
				f.s = x
			}
		}
		names := make([]string, 0, len(x.Properties))
		for k := range x.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if _, ok := f.props[k]; !ok {
				f.order = append(f.order, k)
			}
			f.props[k] = x.Properties[k]
		}
		for _, r := range x.Required {
			if !slices.Contains(f.required, r) {
				f.required = append(f.required, r)
			}
		}
		if len(f.oneOf) == 0 {
			if len(x.OneOf) > 0 {
				f.oneOf = x.OneOf
			} else if len(x.AnyOf) > 0 {
				f.oneOf = x.AnyOf
			}
		}
		if f.addl == nil && x.AdditionalProperties.Schema != nil {
			f.addl = x.AdditionalProperties.Schema
		}
		for _, a := range x.AllOf {
			if a != nil {
				if err := walk(a.Value, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(s, 0); err != nil {
		return nil, err
	}
	if len(f.types) == 0 && len(f.props) > 0 {
		f.types = []string{"object"}
	}
	return f, nil
}

// value is a minimal valid instance of r at ptr. A schema met again while
// it is being generated (recursion) yields nil and ok false: the caller
// leaves an optional member out, and fails on a required one.
func (g *gen) value(r *openapi3.SchemaRef, ptr string, depth int) (any, error) {
	if r == nil || r.Value == nil {
		return "example", nil
	}
	s := r.Value
	if err := g.step(); err != nil {
		return nil, err
	}
	if depth > MaxDepth {
		return nil, &genError{fmt.Sprintf("%s: nests deeper than %d levels", pointerOrRoot(ptr), MaxDepth)}
	}
	if g.stack[s] > 0 {
		return nil, &genError{fmt.Sprintf("%s: a required member refers back to its own schema (%s), so no finite body has it", pointerOrRoot(ptr), refName(r))}
	}
	g.stack[s]++
	defer func() { g.stack[s]-- }()

	if v, ok := fixed(s); ok {
		return sanitize(v), nil
	}
	f, err := g.flatten(s)
	if err != nil {
		return nil, err
	}
	if f.s != s {
		if v, ok := fixed(f.s); ok {
			return sanitize(v), nil
		}
	}
	if len(f.oneOf) > 0 && len(f.props) == 0 {
		return g.firstAlternative(f.oneOf, ptr, depth)
	}
	typ := pickType(f.types)
	switch typ {
	case "object", "":
		if typ == "" && len(f.props) == 0 && len(f.oneOf) == 0 {
			return "example", nil
		}
		return g.object(f, ptr, depth)
	case "array":
		n := int(min(f.s.MinItems, 3))
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := g.value(f.s.Items, fmt.Sprintf("%s/%d", ptr, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case "integer":
		return number(f.s, true), nil
	case "number":
		return number(f.s, false), nil
	case "boolean":
		return false, nil
	case "null":
		return nil, nil
	default:
		return stringValue(f.s), nil
	}
}

// firstAlternative is the value of the first alternative of a oneOf that
// can be built, else the first alternative's error.
func (g *gen) firstAlternative(alts openapi3.SchemaRefs, ptr string, depth int) (any, error) {
	var firstErr error
	for _, alt := range alts {
		v, err := g.value(alt, ptr, depth+1)
		if err == nil {
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// object is a minimal instance of the object f at ptr: its required
// members, read-only ones left out; its optional free strings are noted
// as slots a key or filter may fill.
func (g *gen) object(f *flat, ptr string, depth int) (any, error) {
	obj := map[string]any{}
	for _, name := range f.order {
		pr := f.props[name]
		if pr == nil || pr.Value == nil || pr.Value.ReadOnly {
			continue
		}
		cptr := ptr + "/" + escapePointer(name)
		if !slices.Contains(f.required, name) {
			if freeString(pr.Value) {
				g.optional = append(g.optional, optSlot{ptr: ptr, name: name, depth: depth, schema: pr.Value})
			}
			continue
		}
		v, err := g.value(pr, cptr, depth+1)
		if err != nil {
			return nil, err
		}
		if freeString(pr.Value) {
			g.slots = append(g.slots, slot{ptr: cptr, name: name})
		}
		obj[name] = v
	}
	// A required name without a declared schema: any string.
	for _, name := range f.required {
		if _, ok := obj[name]; !ok {
			if pr, declared := f.props[name]; !declared || pr == nil {
				obj[name] = "example"
			}
		}
	}
	// Properties beside a oneOf: the first alternative's members join
	// them.
	for _, alt := range f.oneOf {
		v, err := g.value(alt, ptr, depth+1)
		if err != nil {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				if _, ok := obj[k]; !ok {
					obj[k] = x
				}
			}
		}
		break
	}
	return obj, nil
}

// fixed is a value the schema gives: const, an example, a default, the
// first enum member.
func fixed(s *openapi3.Schema) (any, bool) {
	switch {
	case s.Const != nil:
		return s.Const, true
	case s.Example != nil:
		return s.Example, true
	case len(s.Examples) > 0 && s.Examples[0] != nil:
		return s.Examples[0], true
	case s.Default != nil:
		return s.Default, true
	case len(s.Enum) > 0:
		for _, e := range s.Enum {
			if e != nil {
				return e, true
			}
		}
	}
	return nil, false
}

func pickType(ts []string) string {
	for _, t := range ts {
		if t != "null" {
			return t
		}
	}
	if len(ts) > 0 {
		return ts[0]
	}
	return ""
}

func number(s *openapi3.Schema, integer bool) any {
	v := 1.0
	if s.Min != nil {
		v = math.Max(v, *s.Min)
		if s.ExclusiveMin.IsTrue() && v == *s.Min {
			v++
		}
	}
	if s.ExclusiveMin.Value != nil && v <= *s.ExclusiveMin.Value {
		v = math.Floor(*s.ExclusiveMin.Value) + 1
	}
	if s.Max != nil && v > *s.Max {
		v = *s.Max
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		v = math.Ceil(v / *s.MultipleOf) * *s.MultipleOf
	}
	if integer {
		return int64(math.Ceil(v))
	}
	return v
}

// stringValue is a string the schema accepts, by format where one is set.
func stringValue(s *openapi3.Schema) string {
	var v string
	switch s.Format {
	case "date-time":
		v = "2026-01-01T00:00:00Z"
	case "date":
		v = "2026-01-01"
	case "time":
		v = "00:00:00Z"
	case "email":
		v = "user@example.com"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	case "uri", "url":
		v = "https://example.com/"
	case "hostname":
		v = "example.com"
	case "ipv4":
		v = "192.0.2.1"
	case "ipv6":
		v = "2001:db8::1"
	case "byte":
		v = "ZXhhbXBsZQ=="
	default:
		v = "example"
	}
	if s.MinLength > uint64(len(v)) {
		v += strings.Repeat("x", int(min(s.MinLength, 4096))-len(v))
	}
	if s.MaxLength != nil && uint64(len(v)) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	return v
}

// freeString says a string member takes any text, so {{intent}} may go
// there: no enum, const, pattern or format, and room for an intent id.
func freeString(s *openapi3.Schema) bool {
	if s == nil || s.Type == nil || pickType(s.Type.Slice()) != "string" {
		return false
	}
	if len(s.Enum) > 0 || s.Const != nil || s.Pattern != "" || s.ReadOnly {
		return false
	}
	switch s.Format {
	case "", "string", "text":
	default:
		return false
	}
	if s.MaxLength != nil && *s.MaxLength < intentLen {
		return false
	}
	return s.MinLength <= 10
}

// sanitize keeps a value from the description out of idemcheck's template
// syntax: "{{" in an example would be read as a template hole.
func sanitize(v any) any {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, "{{", "{ {")
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[strings.ReplaceAll(k, "{{", "{ {")] = sanitize(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = sanitize(x)
		}
		return out
	}
	return v
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the body"
	}
	return p
}

func refName(r *openapi3.SchemaRef) string {
	if r.Ref != "" {
		return r.Ref
	}
	return "an inline schema"
}
