package openapi

import (
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// findEffect looks for a list operation on the same collection: GET on
// the path (a POST /orders is counted by GET /orders), answering an array
// or an object with an array member. filters maps each body member name a
// query parameter of it matches to that parameter.
func findEffect(doc *openapi3.T, b *budget, specPath, method string) (*Effect, map[string]string) {
	if method != "POST" {
		return nil, nil
	}
	item := doc.Paths.Value(specPath)
	if item == nil || item.Get == nil || strings.Contains(specPath, "{") {
		return nil, nil
	}
	get := item.Get
	count, ok := countPointer(b, get)
	if !ok {
		return nil, nil
	}
	filters := map[string]string{}
	for _, p := range mergeParams(item.Parameters, get.Parameters) {
		if p.In != openapi3.ParameterInQuery || p.Schema == nil || p.Schema.Value == nil || !freeString(p.Schema.Value) {
			continue
		}
		filters[p.Name] = p.Name
		// customer_id filters customerId, and the other way round.
		filters[camel(p.Name)] = p.Name
		filters[snake(p.Name)] = p.Name
	}
	if len(filters) == 0 {
		return nil, nil
	}
	return &Effect{Path: specPath, Count: count, From: "GET " + specPath}, filters
}

// countPointer finds, in a list operation's 200 answer, the array whose
// length counts: the answer itself, or its first array member
// (data, items, results before the others).
func countPointer(b *budget, get *openapi3.Operation) (string, bool) {
	if get.Responses == nil {
		return "", false
	}
	r := get.Responses.Status(200)
	if r == nil || r.Value == nil {
		return "", false
	}
	var schema *openapi3.SchemaRef
	for ct, m := range r.Value.Content {
		if strings.Contains(ct, "json") && m != nil && m.Schema != nil {
			schema = m.Schema
			break
		}
	}
	if schema == nil || schema.Value == nil {
		return "", false
	}
	f, err := newGen(b).flatten(schema.Value)
	if err != nil {
		return "", false
	}
	if slices.Contains(f.types, "array") {
		return "", true
	}
	names := slices.Clone(f.order)
	sort.SliceStable(names, func(i, j int) bool { return listScore(names[i]) > listScore(names[j]) })
	for _, n := range names {
		pr := f.props[n]
		if pr != nil && pr.Value != nil && pr.Value.Type != nil && slices.Contains(pr.Value.Type.Slice(), "array") {
			return "/" + escapePointer(n), true
		}
	}
	return "", false
}

func listScore(n string) int {
	switch strings.ToLower(n) {
	case "data", "items", "results":
		return 1
	}
	return 0
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func snake(s string) string {
	var b strings.Builder
	for i, c := range s {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(c + 'a' - 'A')
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
