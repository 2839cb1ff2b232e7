package suite

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// defaults are what the suite's top level gives every endpoint.
type defaults struct {
	url       string
	urlNode   *yaml.Node
	headers   []scenarios.Header
	db        string
	cmd       string
	instances int
	image     string
	dbImage   string
	env       []string
	log       string
	policy    idemcheck.Policy
	checks    []string
}

func (p *parser) suite(n *yaml.Node) (*Suite, error) {
	f, err := p.fields(n, "", "version", "target", "policy", "options", "checks", "endpoints")
	if err != nil {
		return nil, err
	}
	if v, ok := f["version"]; ok {
		if _, err := p.integer(v, "version", 1, 1); err != nil {
			return nil, err
		}
	}
	s := &Suite{Options: Options{Scenarios: scenarios.Defaults}}
	d := defaults{policy: idemcheck.IETF(), checks: scenarios.Names()}
	if t, ok := f["target"]; ok {
		if err := p.target(t, "target", &d); err != nil {
			return nil, err
		}
		s.Command, s.Instances = d.cmd, d.instances
		s.Image, s.DBImage, s.Env = d.image, d.dbImage, d.env
		s.Log = d.log
	}
	if pn, ok := f["policy"]; ok {
		if d.policy, err = p.policy(pn, "policy", d.policy); err != nil {
			return nil, err
		}
	}
	if c, ok := f["checks"]; ok {
		if d.checks, err = p.checks(c, "checks"); err != nil {
			return nil, err
		}
	}
	if o, ok := f["options"]; ok {
		if err := p.options(o, &s.Options); err != nil {
			return nil, err
		}
	}
	eps, ok := f["endpoints"]
	if !ok {
		return nil, p.errf(n, "endpoints", "missing: a suite needs a list of endpoints to certify")
	}
	if eps.Kind != yaml.SequenceNode || len(eps.Content) == 0 {
		return nil, p.errf(eps, "endpoints", "expected a non-empty list of endpoints, got %s", kindName(eps))
	}
	names := map[string]bool{}
	for i, en := range eps.Content {
		e, err := p.endpoint(en, fmt.Sprintf("endpoints[%d]", i), d)
		if err != nil {
			return nil, err
		}
		if names[e.Name] {
			return nil, p.errf(en, fmt.Sprintf("endpoints[%d].name", i), "%q is used by an earlier endpoint: names must be unique", e.Name)
		}
		names[e.Name] = true
		s.Endpoints = append(s.Endpoints, e)
	}
	return s, nil
}

func (p *parser) target(n *yaml.Node, field string, d *defaults) error {
	f, err := p.fields(n, field, "url", "headers", "db", "cmd", "instances", "image", "db_image", "env", "log")
	if err != nil {
		return err
	}
	if u, ok := f["url"]; ok {
		if d.url, err = p.str(u, join(field, "url")); err != nil {
			return err
		}
		d.urlNode = u
	}
	if h, ok := f["headers"]; ok {
		if d.headers, err = p.headers(h, join(field, "headers"), d.headers); err != nil {
			return err
		}
	}
	if v, ok := f["db"]; ok {
		if d.db, err = p.str(v, join(field, "db")); err != nil {
			return err
		}
	}
	if v, ok := f["cmd"]; ok {
		if d.cmd, err = p.str(v, join(field, "cmd")); err != nil {
			return err
		}
		if d.url != "" {
			return p.errf(v, join(field, "cmd"), "give url or cmd, not both: with cmd idemcheck starts the target and knows its URL")
		}
	}
	if v, ok := f["image"]; ok {
		if d.image, err = p.str(v, join(field, "image")); err != nil {
			return err
		}
		if d.url != "" || d.cmd != "" {
			return p.errf(v, join(field, "image"), "give one of url, cmd and image: with image idemcheck starts the container and knows its URL")
		}
	}
	if v, ok := f["db_image"]; ok {
		if d.dbImage, err = p.str(v, join(field, "db_image")); err != nil {
			return err
		}
		if d.image == "" {
			return p.errf(v, join(field, "db_image"), "db_image goes with image")
		}
	}
	if v, ok := f["log"]; ok {
		if d.log, err = p.str(v, join(field, "log")); err != nil {
			return err
		}
		if d.cmd == "" && d.image == "" {
			return p.errf(v, join(field, "log"), "log goes with cmd or image: idemcheck keeps the output of a target it starts")
		}
	}
	if v, ok := f["env"]; ok {
		if d.image == "" {
			return p.errf(v, join(field, "env"), "env goes with image: a started command inherits idemcheck's environment")
		}
		if v.Kind != yaml.MappingNode {
			return p.errf(v, join(field, "env"), "expected a mapping of NAME: value, got %s", kindName(v))
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			val, err := p.str(v.Content[i+1], join(field, "env."+v.Content[i].Value))
			if err != nil {
				return err
			}
			kv := v.Content[i].Value + "=" + val
			if _, err := targets.ParseEnv([]string{kv}); err != nil {
				return p.errf(v.Content[i], join(field, "env."+v.Content[i].Value), "%v", err)
			}
			d.env = append(d.env, kv)
		}
	}
	d.instances = 1
	if v, ok := f["instances"]; ok {
		if d.cmd == "" {
			return p.errf(v, join(field, "instances"), "instances needs cmd: idemcheck can only run replicas of a target it starts")
		}
		if d.instances, err = p.integer(v, join(field, "instances"), 1, 16); err != nil {
			return err
		}
	}
	return nil
}

// tenants reads two clients' credentials, each "Name: value".
func (p *parser) tenants(n *yaml.Node, field string) ([]scenarios.Header, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) != 2 {
		return nil, p.errf(n, field, "expected a list of two credentials such as [\"Authorization: Bearer ${TOKEN_A}\", \"Authorization: Bearer ${TOKEN_B}\"]")
	}
	var out []scenarios.Header
	for i, c := range n.Content {
		s, err := p.str(c, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		h, err := ParseHeader(s)
		if err != nil {
			return nil, p.errf(c, fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
		out = append(out, h)
	}
	return out, nil
}

// ParseHeader parses "Name: value", the value a template.
//
// Its errors never quote the value, nor a text without a colon, which may
// be a credential typed without its separator.
func ParseHeader(s string) (scenarios.Header, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return scenarios.Header{}, fmt.Errorf("is not a header: write it as 'Name: value' (the text is not shown: it may hold a credential)")
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return scenarios.Header{}, fmt.Errorf("%s: the value holds a line break or NUL, which would split the request", name)
	}
	if !idemcheck.ValidHeaderName(name) {
		return scenarios.Header{}, fmt.Errorf("%q is not an HTTP header name (%s)", name, idemcheck.HeaderNameRule)
	}
	t, err := idemcheck.ParseTemplate(strings.TrimSpace(value))
	if err != nil {
		return scenarios.Header{}, fmt.Errorf("%s: %v", name, err)
	}
	return scenarios.Header{Name: name, Value: t}, nil
}

func (p *parser) headers(n *yaml.Node, field string, base []scenarios.Header) ([]scenarios.Header, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "expected a mapping of header names to values, got %s", kindName(n))
	}
	out := append([]scenarios.Header(nil), base...)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !idemcheck.ValidHeaderName(k.Value) {
			return nil, p.errf(k, field, "%q is not an HTTP header name (%s)", k.Value, idemcheck.HeaderNameRule)
		}
		t, err := p.template(v, join(field, k.Value))
		if err != nil {
			return nil, err
		}
		// An endpoint's header replaces the target's header of that name.
		out = slicesDeleteHeader(out, k.Value)
		out = append(out, scenarios.Header{Name: k.Value, Value: t})
	}
	return out, nil
}

func slicesDeleteHeader(hs []scenarios.Header, name string) []scenarios.Header {
	var out []scenarios.Header
	for _, h := range hs {
		if !strings.EqualFold(h.Name, name) {
			out = append(out, h)
		}
	}
	return out
}

func (p *parser) checks(n *yaml.Node, field string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "expected a list of checks, got %s", kindName(n))
	}
	var out []string
	for i, c := range n.Content {
		name, err := p.str(c, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		if _, err := scenarios.Lookup(name); err != nil {
			return nil, p.errf(c, fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
		out = append(out, name)
	}
	return out, nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// policyFields are the keys of a policy block: a preset and its overrides.
var policyFields = []string{"preset", "key_header", "created_statuses", "replay_statuses", "in_progress_status", "in_progress_statuses", "mismatch_status",
	"missing_key_status", "replay_errors", "replay_header", "lease", "ignore_fields", "resource_id", "key_pointer", "ack_only",
	"save_rejected", "invalid_key_status"}

// policy reads a policy block over base: a preset replaces base, and each
// override then replaces one field.
//
// A scalar names a preset ("stripe") or a policy file, relative to the
// suite's folder, as --policy does.
func (p *parser) policy(n *yaml.Node, field string, base idemcheck.Policy) (idemcheck.Policy, error) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		v, err := p.str(n, field)
		if err != nil {
			return base, err
		}
		if pol, err := idemcheck.Preset(v); err == nil {
			return pol, nil
		}
		path := v
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(p.file), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return base, p.errf(n, field, "%q is neither a preset (%s) nor a readable policy file: %v", n.Value, strings.Join(idemcheck.PresetNames(), ", "), unwrapPathErr(err))
		}
		pol, err := ParsePolicy(path, b, p.lookup)
		if err != nil {
			return base, p.errf(n, field, "%v", err)
		}
		return pol, nil
	}
	f, err := p.fields(n, field, policyFields...)
	if err != nil {
		return base, err
	}
	pol := base
	if v, ok := f["preset"]; ok {
		name, err := p.str(v, join(field, "preset"))
		if err != nil {
			return base, err
		}
		if pol, err = idemcheck.Preset(name); err != nil {
			return base, p.errf(v, join(field, "preset"), "%v", err)
		}
	}
	for _, k := range policyFields[1:] {
		v, ok := f[k]
		if !ok {
			continue
		}
		fk := join(field, k)
		switch k {
		case "key_header":
			pol.KeyHeader, err = p.str(v, fk)
		case "created_statuses":
			pol.CreatedStatuses, err = p.statuses(v, fk)
		case "replay_statuses":
			pol.ReplayStatuses, err = p.statuses(v, fk)
		case "in_progress_status":
			var st int
			if st, err = p.status(v, fk); err == nil {
				pol.SetInProgress(st)
			}
		case "in_progress_statuses":
			// Every status that says "still in progress", the main one
			// first: 409 for a duplicate, 423 for a lock timeout.
			var sts []int
			if _, both := f["in_progress_status"]; both {
				err = p.errf(v, fk, "give in_progress_status or in_progress_statuses, not both")
			} else if sts, err = p.statuses(v, fk); err == nil {
				pol.SetInProgress(sts...)
			}
		case "mismatch_status":
			pol.MismatchStatus, err = p.status(v, fk)
		case "missing_key_status":
			pol.MissingKeyStatus, err = p.status(v, fk)
		case "replay_errors":
			pol.ReplayErrors, err = p.boolean(v, fk)
		case "replay_header":
			pol.ReplayHeader, err = p.str(v, fk)
		case "lease":
			pol.Lease, err = p.duration(v, fk)
		case "ignore_fields":
			if pol.IgnoreFields, err = p.strings(v, fk); err == nil {
				for _, ptr := range pol.IgnoreFields {
					if e := assert.ValidatePointer(ptr); e != nil {
						err = p.errf(v, fk, "%v", e)
					}
				}
			}
		case "key_pointer":
			if pol.KeyPointer, err = p.str(v, fk); err == nil {
				if e := assert.ValidatePointer(pol.KeyPointer); e != nil || pol.KeyPointer == "" {
					err = p.errf(v, fk, "expected a JSON pointer such as /eventId")
				}
			}
		case "ack_only":
			pol.AckOnly, err = p.boolean(v, fk)
		case "save_rejected":
			pol.SaveRejected, err = p.boolean(v, fk)
		case "invalid_key_status":
			pol.InvalidKeyStatus, err = p.status(v, fk)
		case "resource_id":
			if pol.ResourceID, err = p.str(v, fk); err == nil {
				if e := assert.ValidatePointer(pol.ResourceID); e != nil {
					err = p.errf(v, fk, "%v", e)
				}
			}
		}
		if err != nil {
			return base, err
		}
	}
	if err := pol.Validate(); err != nil {
		// Point at the field's own line when this block gave it.
		var pe *idemcheck.PolicyError
		if errors.As(err, &pe) {
			if v, ok := f[pe.Field]; ok {
				return base, p.errf(v, join(field, pe.Field), "%s", pe.Msg)
			}
		}
		return base, p.errf(n, field, "%v", err)
	}
	return pol, nil
}

func (p *parser) options(n *yaml.Node, o *Options) error {
	f, err := p.fields(n, "options", "burst", "burst_rounds", "rounds", "fault_rounds", "redeliveries", "retry_window",
		"timeout", "seed", "redact_headers", "allow_remote", "rate", "max_duration")
	if err != nil {
		return err
	}
	for k, v := range f {
		fk := "options." + k
		switch k {
		case "burst":
			o.Scenarios.BurstSize, err = p.integer(v, fk, 2, scenarios.MaxBurstSize)
		case "burst_rounds":
			o.Scenarios.BurstRounds, err = p.integer(v, fk, 1, scenarios.MaxRounds)
		case "rounds":
			o.Scenarios.Rounds, err = p.integer(v, fk, 1, scenarios.MaxRounds)
		case "fault_rounds":
			o.Scenarios.FaultRounds, err = p.integer(v, fk, 1, scenarios.MaxRounds)
		case "redeliveries":
			o.Scenarios.Redeliveries, err = p.integer(v, fk, 2, scenarios.MaxBurstSize)
		case "retry_window":
			o.Scenarios.RetryWindow, err = p.duration(v, fk)
		case "timeout":
			o.Timeout, err = p.duration(v, fk)
		case "max_duration":
			o.MaxDuration, err = p.duration(v, fk)
		case "seed":
			if v.Decode(&o.Seed) != nil {
				err = p.errf(v, fk, "expected a whole number, got %s", kindName(v))
			}
		case "redact_headers":
			o.Redact, err = p.strings(v, fk)
		case "allow_remote":
			o.AllowRemote, err = p.boolean(v, fk)
		case "rate":
			if v.Decode(&o.Rate) != nil || o.Rate <= 0 {
				err = p.errf(v, fk, "expected a positive number of requests per second, got %s", kindName(v))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) endpoint(n *yaml.Node, field string, d defaults) (Endpoint, error) {
	f, err := p.fields(n, field, "name", "url", "method", "path", "headers", "body", "mismatch_body", "failing_body", "tenants",
		"cross_endpoint", "invalid_body", "policy", "effect", "db", "checks")
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{Policy: d.policy, Checks: d.checks, DB: d.db}
	rawURL, urlNode, urlField, headers := d.url, d.urlNode, "target.url", d.headers
	if v, ok := f["name"]; ok {
		if e.Name, err = p.str(v, join(field, "name")); err != nil {
			return e, err
		}
	}
	if v, ok := f["url"]; ok {
		if rawURL, err = p.str(v, join(field, "url")); err != nil {
			return e, err
		}
		urlNode, urlField = v, join(field, "url")
	}
	if rawURL == "" && (d.cmd != "" || d.image != "") {
		rawURL = "http://127.0.0.1:0" // replaced by the started target's address
	}
	if rawURL == "" {
		return e, p.errf(n, join(field, "url"), "missing: give url here or under target (or cmd under target)")
	}
	// Errors quote the text as written, never its ${NAME} expansion,
	// which may hold a secret.
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return e, p.errf(urlNode, urlField, "%q is not an absolute http:// or https:// URL", urlNode.Value)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return e, p.errf(urlNode, urlField, "%q carries credentials, a query or a fragment, which idemcheck would not send: give the scheme and host:port only (a query goes in path, credentials in headers)", urlNode.Value)
	}
	e.Endpoint.Base = &url.URL{Scheme: u.Scheme, Host: u.Host}
	e.Endpoint.Method = "POST"
	if v, ok := f["method"]; ok {
		if e.Endpoint.Method, err = p.str(v, join(field, "method")); err != nil {
			return e, err
		}
		e.Endpoint.Method = strings.ToUpper(e.Endpoint.Method)
	}
	pathNode, ok := f["path"]
	if !ok {
		return e, p.errf(n, join(field, "path"), "missing: the request path, such as /orders")
	}
	if e.Endpoint.Path, err = p.template(pathNode, join(field, "path")); err != nil {
		return e, err
	}
	if !strings.HasPrefix(pathNode.Value, "/") {
		return e, p.errf(pathNode, join(field, "path"), "%q must start with /", pathNode.Value)
	}
	if e.Name == "" {
		e.Name = e.Endpoint.Method + " " + pathNode.Value
	}
	if v, ok := f["headers"]; ok {
		if headers, err = p.headers(v, join(field, "headers"), headers); err != nil {
			return e, err
		}
	}
	e.Endpoint.Header = headers
	if v, ok := f["body"]; ok {
		if e.Endpoint.Body, err = p.body(v, join(field, "body")); err != nil {
			return e, err
		}
	}
	if v, ok := f["mismatch_body"]; ok {
		t, err := p.body(v, join(field, "mismatch_body"))
		if err != nil {
			return e, err
		}
		e.Endpoint.MismatchBody = &t
	}
	if v, ok := f["failing_body"]; ok {
		t, err := p.body(v, join(field, "failing_body"))
		if err != nil {
			return e, err
		}
		e.Endpoint.FailingBody = &t
	}
	if v, ok := f["invalid_body"]; ok {
		t, err := p.body(v, join(field, "invalid_body"))
		if err != nil {
			return e, err
		}
		e.Endpoint.InvalidBody = &t
	}
	if v, ok := f["tenants"]; ok {
		if e.Endpoint.Tenants, err = p.tenants(v, join(field, "tenants")); err != nil {
			return e, err
		}
	}
	if v, ok := f["cross_endpoint"]; ok {
		if e.Endpoint.Other, err = p.crossEndpoint(v, join(field, "cross_endpoint"), e.Endpoint.Method); err != nil {
			return e, err
		}
	}
	if v, ok := f["policy"]; ok {
		if e.Policy, err = p.policy(v, join(field, "policy"), d.policy); err != nil {
			return e, err
		}
	}
	if v, ok := f["checks"]; ok {
		if e.Checks, err = p.checks(v, join(field, "checks")); err != nil {
			return e, err
		}
	}
	if v, ok := f["db"]; ok {
		if e.DB, err = p.str(v, join(field, "db")); err != nil {
			return e, err
		}
	}
	if v, ok := f["effect"]; ok {
		if err := p.effect(v, join(field, "effect"), &e); err != nil {
			return e, err
		}
		if e.EffectSQL != "" && e.DB == "" && d.cmd == "" && d.image == "" {
			return e, p.errf(v, join(field, "effect"), "needs a database: set db here or under target (such as db: ${DATABASE_URL})")
		}
	}
	return e, nil
}

func (p *parser) crossEndpoint(n *yaml.Node, field, method string) (*scenarios.OtherEndpoint, error) {
	f, err := p.fields(n, field, "method", "path", "body")
	if err != nil {
		return nil, err
	}
	o := &scenarios.OtherEndpoint{Method: method}
	if v, ok := f["method"]; ok {
		if o.Method, err = p.str(v, join(field, "method")); err != nil {
			return nil, err
		}
		o.Method = strings.ToUpper(o.Method)
	}
	v, ok := f["path"]
	if !ok {
		return nil, p.errf(n, join(field, "path"), "missing: the other endpoint's path")
	}
	if o.Path, err = p.template(v, join(field, "path")); err != nil {
		return nil, err
	}
	if v, ok := f["body"]; ok {
		t, err := p.body(v, join(field, "body"))
		if err != nil {
			return nil, err
		}
		o.Body = &t
	}
	return o, nil
}

func (p *parser) effect(n *yaml.Node, field string, e *Endpoint) error {
	f, err := p.fields(n, field, "sql", "args", "http", "count")
	if err != nil {
		return err
	}
	if v, ok := f["http"]; ok {
		if _, both := f["sql"]; both {
			return p.errf(v, join(field, "http"), "give sql or http, not both: one effect count per endpoint")
		}
		if _, ok := f["args"]; ok {
			return p.errf(f["args"], join(field, "args"), "args go with sql; http fills {{intent}} in its path")
		}
		s, err := p.str(v, join(field, "http"))
		if err != nil {
			return err
		}
		t, err := ParseEffectHTTP(s)
		if err != nil {
			return p.errf(v, join(field, "http"), "%v", err)
		}
		e.EffectHTTP = &t
		c, ok := f["count"]
		if !ok {
			return p.errf(n, join(field, "count"), "missing: the JSON pointer of the array (its length) or number that counts, such as /data (\"\" for the whole answer)")
		}
		if e.EffectCount, err = p.str(c, join(field, "count")); err != nil {
			return err
		}
		if err := assert.ValidatePointer(e.EffectCount); err != nil {
			return p.errf(c, join(field, "count"), "%v", err)
		}
		return nil
	}
	if v, ok := f["count"]; ok {
		return p.errf(v, join(field, "count"), "count goes with http")
	}
	v, ok := f["sql"]
	if !ok {
		return p.errf(n, join(field, "sql"), "missing: SQL returning one intent's effect count, such as SELECT count(*) FROM orders WHERE customer_id = $1 (or http: a GET of the API that counts, with count)")
	}
	if e.EffectSQL, err = p.str(v, join(field, "sql")); err != nil {
		return err
	}
	if a, ok := f["args"]; ok {
		if a.Kind != yaml.SequenceNode {
			return p.errf(a, join(field, "args"), "expected a list such as [\"{{intent}}\"], got %s", kindName(a))
		}
		for i, c := range a.Content {
			t, err := p.template(c, fmt.Sprintf("%s.args[%d]", field, i))
			if err != nil {
				return err
			}
			e.EffectArgs = append(e.EffectArgs, t)
		}
	}
	return nil
}

// ParseEffectHTTP reads an HTTP read-back, "GET /path?query" or "/path",
// the path a template: the read-back only ever sends GET.
func ParseEffectHTTP(s string) (idemcheck.Template, error) {
	s = strings.TrimSpace(s)
	if m, rest, ok := strings.Cut(s, " "); ok && !strings.HasPrefix(s, "/") {
		if !strings.EqualFold(m, "GET") {
			return idemcheck.Template{}, fmt.Errorf("%q: the effect read-back only sends GET, so it never changes the target: write GET /path", m)
		}
		s = strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \r\n\t") {
		return idemcheck.Template{}, fmt.Errorf("expected GET and a path such as 'GET /orders?customerId={{intent}}'")
	}
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return t, err
	}
	if !strings.Contains(s, "{{") {
		return t, fmt.Errorf("the path has no {{intent}}: it would count every intent's effects together, not one intent's")
	}
	return t, nil
}

// ParsePolicy reads a policy file: a preset and its overrides, the same
// block a suite's policy takes.
func ParsePolicy(file string, data []byte, lookup func(string) (string, bool)) (idemcheck.Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return idemcheck.Policy{}, &Error{File: file, Line: yamlErrLine(err), Msg: "not valid YAML: " + yamlErrText(err)}
	}
	if len(doc.Content) == 0 {
		return idemcheck.Policy{}, &Error{File: file, Msg: "the policy file is empty"}
	}
	p := &parser{file: file, lookup: lookup}
	return p.policy(doc.Content[0], "", idemcheck.IETF())
}
