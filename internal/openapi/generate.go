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
	if why := ep.placeParams(b, specPath, item, op); why != "" {
		return ep, why
	}
	if why := ep.placeBody(doc, b, specPath, method, op); why != "" {
		return ep, why
	}
	hints(&ep, op)
	if sec := security(doc, op); sec != "" {
		ep.Notes = append(ep.Notes, fmt.Sprintf("the description asks for credentials (%s): set them under target.headers, such as Authorization: Bearer ${API_TOKEN}", sec))
	}
	return ep, ""
}

// placeParams fills the endpoint's path (its parameters filled in, its
// required query parameters added), headers and key header from the
// operation's parameters, or returns why it cannot.
func (ep *Endpoint) placeParams(b *budget, specPath string, item *openapi3.PathItem, op *openapi3.Operation) string {
	path := specPath
	var query url.Values
	keyFromExt := keyHeaderExtension(op.Extensions)
	for _, prm := range mergeParams(item.Parameters, op.Parameters) {
		if isKeyHeader(prm, keyFromExt) {
			ep.KeyHeader, ep.KeyFrom, ep.KeyRequired, ep.KeyDeclared = prm.Name, "the operation's header parameter "+prm.Name, prm.Required, true
			continue
		}
		if why := ep.placeParam(b, prm, &path, &query); why != "" {
			return why
		}
	}
	if strings.Contains(path, "{") {
		return "a path parameter is used in the path but not declared"
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
	return ""
}

// placeParam places one parameter other than the key header: in the path,
// in the query or the headers when it is required, or returns why it
// cannot.
func (ep *Endpoint) placeParam(b *budget, prm *openapi3.Parameter, path *string, query *url.Values) string {
	switch prm.In {
	case openapi3.ParameterInPath:
		v, from := paramValue(b, prm)
		if from == "generated" {
			ep.Notes = append(ep.Notes, fmt.Sprintf("path parameter {%s} was generated (%s): replace it with one the target knows", prm.Name, v))
		}
		*path = strings.ReplaceAll(*path, "{"+prm.Name+"}", url.PathEscape(v))
	case openapi3.ParameterInQuery:
		if !prm.Required {
			return ""
		}
		v, from := paramValue(b, prm)
		if from == "generated" {
			return fmt.Sprintf("required query parameter %q has no example", prm.Name)
		}
		if *query == nil {
			*query = url.Values{}
		}
		query.Set(prm.Name, v)
	case openapi3.ParameterInHeader:
		if !prm.Required || strings.EqualFold(prm.Name, "Content-Type") || strings.EqualFold(prm.Name, "Authorization") {
			return ""
		}
		v, from := paramValue(b, prm)
		if from == "generated" {
			return fmt.Sprintf("required header parameter %q has no example", prm.Name)
		}
		ep.Headers = append(ep.Headers, [2]string{prm.Name, v})
	case openapi3.ParameterInCookie:
		if prm.Required {
			return fmt.Sprintf("required cookie parameter %q: idemcheck sends no cookies of its own", prm.Name)
		}
	}
	return ""
}

// placeBody fills the endpoint's body, from the description's example or
// a minimal valid instance of its schema, with the place of the intent in
// it, and the effect read that filters on that place, or returns why it
// cannot.
func (ep *Endpoint) placeBody(doc *openapi3.T, b *budget, specPath, method string, op *openapi3.Operation) string {
	if op.RequestBody == nil || op.RequestBody.Value == nil || len(op.RequestBody.Value.Content) == 0 {
		return "no request body schema: idemcheck tells intents apart by a field of the body"
	}
	ctype, media, why := pickMedia(op.RequestBody.Value.Content)
	if media == nil {
		return why
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
			return "no request body schema, and its example has no string member to carry {{intent}}"
		}
		g := newGen(b)
		v, err := g.value(media.Schema, "", 0)
		if err != nil {
			return "cannot build a body from the schema: " + err.Error()
		}
		body, at = g.place(v, filters)
		if at == "" {
			return "the body has no free string member (no enum, format or pattern) to carry {{intent}}, so intents cannot be told apart"
		}
		ep.BodyFrom = "a minimal valid instance of the schema"
	}
	ep.IntentAt = at
	text, err := encodeBody(ctype, body)
	if err != nil {
		return err.Error()
	}
	ep.Body = text
	if effect != nil && len(at) > 1 && !strings.Contains(at[1:], "/") {
		if q, ok := filters[at[1:]]; ok {
			effect.Path = effect.Path + "?" + url.QueryEscape(q) + "=" + IntentHole
			ep.Effect = effect
		}
	}
	return ""
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
