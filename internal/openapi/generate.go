package openapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// DefaultMethods are the methods certified unless told otherwise: the
// unsafe ones whose retries are not idempotent by definition. PUT and
// DELETE are idempotent by RFC 9110 and certified when asked.
var DefaultMethods = []string{"POST", "PATCH"}

// KnownMethods are the methods Generate may be asked for.
var KnownMethods = []string{"POST", "PATCH", "PUT", "DELETE"}

// DefaultKeyHeader is the key header of an operation that declares none.
const DefaultKeyHeader = "Idempotency-Key"

// Options choose what Generate makes endpoints of.
type Options struct {
	// Methods are the methods certified (DefaultMethods when empty).
	Methods []string
}

// Endpoint is one operation to certify.
type Endpoint struct {
	Name        string
	OperationID string
	Method      string
	// SpecPath is the path as the description writes it; Path has its
	// parameters filled (and any required query parameter appended).
	SpecPath string
	Path     string
	// ContentType is the body's media type; Body its text, a template
	// holding {{intent}} at IntentAt (a JSON pointer, or a form field).
	ContentType string
	Body        string
	IntentAt    string
	// BodyFrom says where the body came from.
	BodyFrom string
	// Headers are required header parameters with their examples.
	Headers [][2]string
	// KeyHeader is the idempotency key header; KeyFrom says how it was
	// found; KeyRequired is whether the description requires it.
	KeyHeader   string
	KeyFrom     string
	KeyRequired bool
	KeyDeclared bool
	// Policy hints from the declared responses.
	CreatedStatuses []int
	MismatchStatus  int
	MismatchFrom    string
	Declares409     bool
	// ReplayHeader is a header a success declares that marks a replay
	// (one whose name says "replay").
	ReplayHeader string
	// Other is the path of another endpoint of the same method, where
	// cross-endpoint sends this one's key: "" when there is none.
	Other string
	// Effect, when found, counts the operation's effects through a list
	// operation of the API.
	Effect *Effect
	// Notes say what the user must still check or fill in.
	Notes []string
}

// Effect is an HTTP read-back: a GET whose answer counts one intent's
// effects (the length of the array at Count, or the number there).
type Effect struct {
	Path  string // "/orders?customerId={{intent}}"
	Count string // a JSON pointer; "" is the whole answer
	From  string // the list operation it came from
}

// Skip is an operation that cannot be certified, and why.
type Skip struct {
	Method, Path, OperationID, Reason string
}

// Result is what Generate made of a description.
type Result struct {
	Title, Version, OpenAPI string
	// Operations counts every operation in the description; NotAsked
	// those of a method not asked for (GET and other safe methods among
	// them).
	Operations int
	NotAsked   int
	Endpoints  []Endpoint
	Skipped    []Skip
}

var methodOrder = []string{"POST", "PUT", "PATCH", "DELETE"}

// Generate makes an endpoint of every operation of the methods asked for,
// or says why it cannot. It never fails: a description it cannot use
// yields skips.
func Generate(doc *openapi3.T, o Options) (res Result) {
	methods := o.Methods
	if len(methods) == 0 {
		methods = DefaultMethods
	}
	if doc.Info != nil {
		res.Title, res.Version = doc.Info.Title, doc.Info.Version
	}
	res.OpenAPI = doc.OpenAPI
	if doc.Paths == nil {
		return res
	}
	paths := doc.Paths.Keys()
	sort.Strings(paths)
	b := &budget{left: MaxDocSteps}
	for _, p := range paths {
		item := doc.Paths.Value(p)
		if item == nil {
			continue
		}
		ops := item.Operations()
		res.Operations += len(ops)
		for _, m := range methodOrder {
			op := ops[m]
			if op == nil {
				continue
			}
			if !slices.Contains(methods, m) {
				res.NotAsked++
				continue
			}
			ep, reason := endpoint(doc, b, p, item, m, op)
			if reason != "" {
				res.Skipped = append(res.Skipped, Skip{Method: m, Path: p, OperationID: op.OperationID, Reason: reason})
				continue
			}
			res.Endpoints = append(res.Endpoints, ep)
		}
		res.NotAsked += len(ops) - countMethods(ops)
	}
	// cross-endpoint sends an endpoint's key to the next endpoint of its
	// method: a key belongs to one operation.
	for i := range res.Endpoints {
		for j := 1; j < len(res.Endpoints); j++ {
			o := res.Endpoints[(i+j)%len(res.Endpoints)]
			if o.Method == res.Endpoints[i].Method && o.SpecPath != res.Endpoints[i].SpecPath {
				res.Endpoints[i].Other = o.Path
				break
			}
		}
	}
	// Unique names: a suite refuses two endpoints of one name.
	seen := map[string]int{}
	for i := range res.Endpoints {
		n := res.Endpoints[i].Name
		seen[n]++
		if seen[n] > 1 {
			res.Endpoints[i].Name = fmt.Sprintf("%s (%d)", n, seen[n])
		}
	}
	return res
}

func countMethods(ops map[string]*openapi3.Operation) int {
	n := 0
	for _, m := range methodOrder {
		if ops[m] != nil {
			n++
		}
	}
	return n
}

// endpoint builds one operation's endpoint, or returns why it cannot.
func endpoint(doc *openapi3.T, b *budget, specPath string, item *openapi3.PathItem, method string, op *openapi3.Operation) (ep Endpoint, reason string) {
	defer func() {
		// The generator walks a third party's description: whatever it
		// trips on is that operation's skip, never idemcheck's crash.
		if r := recover(); r != nil {
			reason = fmt.Sprintf("idemcheck could not read this operation: %v", r)
		}
	}()
	ep = Endpoint{Method: method, SpecPath: specPath, OperationID: op.OperationID, KeyHeader: DefaultKeyHeader}
	ep.Name = op.OperationID
	if ep.Name == "" {
		ep.Name = method + " " + specPath
	}

	if !strings.HasPrefix(specPath, "/") {
		return ep, "the path does not start with /"
	}
	if strings.Contains(specPath, "{{") || strings.ContainsFunc(specPath, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return ep, "the path holds spaces, control characters or {{, which a request line cannot carry"
	}
	params := mergeParams(item.Parameters, op.Parameters)
	path := specPath
	var query url.Values
	keyFromExt := keyHeaderExtension(op.Extensions)
	for _, prm := range params {
		if isKeyHeader(prm, keyFromExt) {
			ep.KeyHeader, ep.KeyFrom, ep.KeyRequired, ep.KeyDeclared = prm.Name, "the operation's header parameter "+prm.Name, prm.Required, true
			continue
		}
		switch prm.In {
		case openapi3.ParameterInPath:
			v, from := paramValue(b, prm)
			if from == "generated" {
				ep.Notes = append(ep.Notes, fmt.Sprintf("path parameter {%s} was generated (%s): replace it with one the target knows", prm.Name, v))
			}
			path = strings.ReplaceAll(path, "{"+prm.Name+"}", url.PathEscape(v))
		case openapi3.ParameterInQuery:
			if !prm.Required {
				continue
			}
			v, from := paramValue(b, prm)
			if from == "generated" {
				return ep, fmt.Sprintf("required query parameter %q has no example", prm.Name)
			}
			if query == nil {
				query = url.Values{}
			}
			query.Set(prm.Name, v)
		case openapi3.ParameterInHeader:
			if !prm.Required || strings.EqualFold(prm.Name, "Content-Type") || strings.EqualFold(prm.Name, "Authorization") {
				continue
			}
			v, from := paramValue(b, prm)
			if from == "generated" {
				return ep, fmt.Sprintf("required header parameter %q has no example", prm.Name)
			}
			ep.Headers = append(ep.Headers, [2]string{prm.Name, v})
		case openapi3.ParameterInCookie:
			if prm.Required {
				return ep, fmt.Sprintf("required cookie parameter %q: idemcheck sends no cookies of its own", prm.Name)
			}
		}
	}
	if strings.Contains(path, "{") {
		return ep, "a path parameter is used in the path but not declared"
	}
	if keyFromExt != "" && !ep.KeyDeclared {
		ep.KeyHeader, ep.KeyFrom, ep.KeyDeclared = keyFromExt, "the operation's idempotency extension", true
	}
	if ep.KeyFrom == "" {
		ep.KeyFrom = "the default: the description declares no key header"
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	ep.Path = path

	if op.RequestBody == nil || op.RequestBody.Value == nil || len(op.RequestBody.Value.Content) == 0 {
		return ep, "no request body schema: idemcheck tells intents apart by a field of the body"
	}
	ctype, media, why := pickMedia(op.RequestBody.Value.Content)
	if media == nil {
		return ep, why
	}
	ep.ContentType = ctype

	effect, filters := findEffect(doc, b, specPath, method)
	var body any
	var at string
	if ex, ok := mediaExample(media); ok {
		body, at = placeInExample(b, sanitize(ex), media.Schema, filters)
		if at != "" {
			ep.BodyFrom = "the description's example"
		}
	}
	if at == "" {
		if media.Schema == nil {
			return ep, "no request body schema, and its example has no string member to carry {{intent}}"
		}
		g := newGen(b)
		v, err := g.value(media.Schema, "", 0)
		if err != nil {
			return ep, "cannot build a body from the schema: " + err.Error()
		}
		body, at = g.place(v, filters)
		if at == "" {
			return ep, "the body has no free string member (no enum, format or pattern) to carry {{intent}}, so intents cannot be told apart"
		}
		ep.BodyFrom = "a minimal valid instance of the schema"
	}
	ep.IntentAt = at
	text, err := encodeBody(ctype, body)
	if err != nil {
		return ep, err.Error()
	}
	ep.Body = text
	if effect != nil && len(at) > 1 && !strings.Contains(at[1:], "/") {
		if q, ok := filters[at[1:]]; ok {
			effect.Path = effect.Path + "?" + url.QueryEscape(q) + "=" + IntentHole
			ep.Effect = effect
		}
	}

	hints(&ep, op)
	if sec := security(doc, op); sec != "" {
		ep.Notes = append(ep.Notes, fmt.Sprintf("the description asks for credentials (%s): set them under target.headers, such as Authorization: Bearer ${API_TOKEN}", sec))
	}
	return ep, ""
}

func mergeParams(item, op openapi3.Parameters) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	key := func(p *openapi3.Parameter) string { return p.In + "\x00" + p.Name }
	byKey := map[string]int{}
	for _, list := range []openapi3.Parameters{item, op} {
		for _, r := range list {
			if r == nil || r.Value == nil {
				continue
			}
			if i, ok := byKey[key(r.Value)]; ok {
				out[i] = r.Value
				continue
			}
			byKey[key(r.Value)] = len(out)
			out = append(out, r.Value)
		}
	}
	return out
}

func isKeyHeader(p *openapi3.Parameter, ext string) bool {
	if p.In != openapi3.ParameterInHeader {
		return false
	}
	if ext != "" && strings.EqualFold(p.Name, ext) {
		return true
	}
	return strings.Contains(strings.ToLower(p.Name), "idempot") || strings.EqualFold(p.Name, "PayPal-Request-Id")
}

// keyHeaderExtension reads an x-idempotency-key style extension: a string
// naming the header, or an object with a header (or name) member.
func keyHeaderExtension(ext map[string]any) string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.Contains(strings.ToLower(k), "idempot") {
			continue
		}
		switch v := ext[k].(type) {
		case string:
			if validHeaderName(v) {
				return v
			}
		case map[string]any:
			for _, f := range []string{"header", "name", "headerName"} {
				if s, ok := v[f].(string); ok && validHeaderName(s) {
					return s
				}
			}
		case bool:
			if v {
				return DefaultKeyHeader
			}
		}
	}
	return ""
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 126 || c <= 32 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

// paramValue is a parameter's value from its examples, else generated from
// its schema; from says which.
func paramValue(b *budget, p *openapi3.Parameter) (string, string) {
	if p.Example != nil {
		return scalar(p.Example), "example"
	}
	names := make([]string, 0, len(p.Examples))
	for k := range p.Examples {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		if e := p.Examples[n]; e != nil && e.Value != nil && e.Value.Value != nil {
			return scalar(e.Value.Value), "example"
		}
	}
	if p.Schema != nil && p.Schema.Value != nil {
		if v, ok := fixed(p.Schema.Value); ok {
			return scalar(v), "example"
		}
		g := newGen(b)
		if v, err := g.value(p.Schema, "", 0); err == nil {
			return scalar(v), "generated"
		}
	}
	return "example", "generated"
}

func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, "{{", "{ {")
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(strings.Trim(string(b), `"`), "{{", "{ {")
}

const (
	mediaJSON = "application/json"
	mediaForm = "application/x-www-form-urlencoded"
)

// pickMedia chooses the body's media type: JSON first, then a form.
func pickMedia(c openapi3.Content) (string, *openapi3.MediaType, string) {
	types := make([]string, 0, len(c))
	for k := range c {
		types = append(types, k)
	}
	sort.Strings(types)
	for _, t := range types {
		mt := strings.ToLower(strings.TrimSpace(strings.Split(t, ";")[0]))
		if (mt == mediaJSON || strings.HasSuffix(mt, "+json")) && c[t] != nil {
			return mt, c[t], ""
		}
	}
	for _, t := range types {
		mt := strings.ToLower(strings.TrimSpace(strings.Split(t, ";")[0]))
		if mt == mediaForm && c[t] != nil {
			return mt, c[t], ""
		}
	}
	for _, t := range types {
		if strings.HasPrefix(strings.ToLower(t), "multipart/") {
			return "", nil, "multipart body (" + t + "): idemcheck sends one body template, not file parts"
		}
	}
	return "", nil, fmt.Sprintf("body only in %s: idemcheck builds JSON and form bodies", strings.Join(types, ", "))
}

func mediaExample(m *openapi3.MediaType) (any, bool) {
	if m.Example != nil {
		return m.Example, true
	}
	names := make([]string, 0, len(m.Examples))
	for k := range m.Examples {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		if e := m.Examples[n]; e != nil && e.Value != nil && e.Value.Value != nil {
			return e.Value.Value, true
		}
	}
	if m.Schema != nil && m.Schema.Value != nil && m.Schema.Value.Example != nil {
		if _, ok := m.Schema.Value.Example.(map[string]any); ok {
			return m.Schema.Value.Example, true
		}
	}
	return nil, false
}

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

// hints reads policy hints from the declared responses.
func hints(ep *Endpoint, op *openapi3.Operation) {
	if op.Responses == nil {
		return
	}
	declared := map[int]bool{}
	for _, k := range op.Responses.Keys() {
		if n, err := strconv.Atoi(k); err == nil {
			declared[n] = true
			if n >= 200 && n < 300 {
				ep.CreatedStatuses = append(ep.CreatedStatuses, n)
				if r := op.Responses.Value(k); r != nil && r.Value != nil && ep.ReplayHeader == "" {
					names := make([]string, 0, len(r.Value.Headers))
					for h := range r.Value.Headers {
						names = append(names, h)
					}
					sort.Strings(names)
					for _, h := range names {
						if strings.Contains(strings.ToLower(h), "replay") && validHeaderName(h) {
							ep.ReplayHeader = h
							break
						}
					}
				}
			}
		}
	}
	sort.Ints(ep.CreatedStatuses)
	ep.Declares409 = declared[409]
	switch {
	case declared[422]:
		ep.MismatchStatus, ep.MismatchFrom = 422, "the description declares 422"
	case declared[400]:
		ep.MismatchStatus, ep.MismatchFrom = 400, "the description declares 400 and no 422"
	}
}

// security names the credentials an operation needs, or "".
func security(doc *openapi3.T, op *openapi3.Operation) string {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var names []string
	for _, r := range reqs {
		if len(r) == 0 {
			return "" // an empty requirement: anonymous access allowed
		}
		for n := range r {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// encodeBody writes a body as JSON, or as a form with bracketed names for
// nested members.
func encodeBody(ctype string, v any) (string, error) {
	if ctype != mediaForm {
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("the body cannot be written as JSON: %v", err)
		}
		return string(b), nil
	}
	vals := url.Values{}
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, c := range t {
				name := k
				if prefix != "" {
					name = prefix + "[" + k + "]"
				}
				walk(name, c)
			}
		case []any:
			for i, c := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), c)
			}
		case nil:
		case string:
			vals.Add(prefix, t) // sanitized already, and maybe the hole
		default:
			vals.Add(prefix, scalar(t))
		}
	}
	walk("", v)
	enc := vals.Encode()
	// The hole survives encoding: intent ids are letters, digits and dashes.
	return strings.ReplaceAll(enc, url.QueryEscape(IntentHole), IntentHole), nil
}
