package suite

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/scenarios"
)

// defaults are what the suite's top level gives every endpoint: the
// target, its headers and database, the policy, the checks and the
// options, as a config.Spec, with where each was given.
type defaults struct {
	spec   config.Spec
	places places
}

func (p *parser) suite(n *yaml.Node) (*Suite, error) {
	f, err := p.fields(n, "", "version", "target", "policy", "options", "checks", "skip_checks", "endpoints")
	if err != nil {
		return nil, err
	}
	if v, ok := f["version"]; ok {
		if _, err := p.integer(v, "version", 1, 1); err != nil {
			return nil, err
		}
	}
	s := &Suite{Options: Options{Scenarios: scenarios.Defaults}}
	d := defaults{spec: config.Spec{Policy: idemcheck.IETF(), Options: scenarios.Defaults, Words: Words}, places: places{}}
	if t, ok := f["target"]; ok {
		if err := p.target(t, "target", &d); err != nil {
			return nil, err
		}
		s.Command, s.Instances = d.spec.Command, d.spec.Instances
		s.Image, s.DBImage, s.Env = d.spec.Image, d.spec.DBImage, d.spec.Env
		s.Log = d.spec.TargetLog
	}
	if pn, ok := f["policy"]; ok {
		r, err := p.policy(pn, "policy", d.spec.Policy)
		if err != nil {
			return nil, err
		}
		d.spec.Policy = r.policy
		r.signTo(&d.spec, d.places, place{pn, "policy"})
	}
	if c, ok := f["checks"]; ok {
		if d.spec.Checks, err = p.checks(c, "checks", d.places); err != nil {
			return nil, err
		}
	}
	if c, ok := f["skip_checks"]; ok {
		if d.spec.SkipChecks, err = p.list(c, "skip_checks", "SkipChecks", d.places, "a list of checks"); err != nil {
			return nil, err
		}
	}
	if o, ok := f["options"]; ok {
		if err := p.options(o, &s.Options, d.places); err != nil {
			return nil, err
		}
	}
	o := s.Options
	d.spec.Options, d.spec.Timeout, d.spec.Rate, d.spec.MaxDuration = o.Scenarios, o.Timeout, o.Rate, o.MaxDuration
	d.spec.Redact, d.spec.AllowRemote = o.Redact, o.AllowRemote
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
	f, err := p.fields(n, field, "url", "headers", "db", "cmd", "instances", "image", "db_image", "db_engine", "env", "log", "providers")
	if err != nil {
		return err
	}
	d.spec.Instances = 1
	if err := p.texts(f, field, d.places, text{key: "url", field: "URL", to: &d.spec.URL, url: true}, text{key: "db", field: "DSN", to: &d.spec.DSN, dsn: true},
		text{key: "cmd", field: "Command", to: &d.spec.Command}, text{key: "image", field: "Image", to: &d.spec.Image},
		text{key: "db_image", field: "DBImage", to: &d.spec.DBImage}, text{key: "db_engine", field: "DBEngine", to: &d.spec.DBEngine}, text{key: "log", field: "TargetLog", to: &d.spec.TargetLog}); err != nil {
		return err
	}
	if v, ok := f["url"]; ok {
		d.spec.URLText = v.Value
	}
	if h, ok := f["headers"]; ok {
		if d.spec.Headers, err = p.headers(h, join(field, "headers"), d.spec.Headers, d.places); err != nil {
			return err
		}
	}
	if v, ok := f["env"]; ok {
		if v.Kind != yaml.MappingNode {
			return p.errf(v, join(field, "env"), "expected a mapping of NAME: value, got %s", kindName(v))
		}
		d.places["Env"] = place{v, join(field, "env")}
		for i := 0; i+1 < len(v.Content); i += 2 {
			key := join(field, "env."+v.Content[i].Value)
			val, err := p.str(v.Content[i+1], key)
			if err != nil {
				return err
			}
			d.places[idemcheck.Field(fmt.Sprintf("Env[%d]", len(d.spec.Env)))] = place{v.Content[i], key}
			d.spec.Env = append(d.spec.Env, v.Content[i].Value+"="+val)
		}
	}
	if v, ok := f["providers"]; ok {
		key := join(field, "providers")
		if v.Kind != yaml.SequenceNode {
			return p.errf(v, key, "expected a list of variable names, such as [PROVIDER_URL], got %s", kindName(v))
		}
		d.places["Providers"] = place{v, key}
		for i, c := range v.Content {
			name, err := p.str(c, fmt.Sprintf("%s[%d]", key, i))
			if err != nil {
				return err
			}
			d.spec.Providers = append(d.spec.Providers, name)
		}
	}
	if v, ok := f["instances"]; ok {
		if d.spec.Instances, err = p.whole(v, join(field, "instances")); err != nil {
			return err
		}
		d.places["Instances"] = place{v, join(field, "instances")}
	}
	return nil
}

// ParseHeader parses "Name: value", the value a template, by
// config.ParseHeader's rule. Its errors never quote the value, nor a text
// without a colon, which may be a credential typed without its separator.
func ParseHeader(s string) (scenarios.Header, error) {
	h, err := config.ParseHeader("header", s)
	var fe *idemcheck.FieldError
	if errors.As(err, &fe) {
		return h, errors.New(strings.TrimPrefix(fe.Text(nil), "header "))
	}
	return h, err
}

// headers reads a mapping of header names to values over base: a header
// given here replaces base's header of that name.
func (p *parser) headers(n *yaml.Node, field string, base []config.Header, pl places) ([]config.Header, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "expected a mapping of header names to values, got %s", kindName(n))
	}
	type given struct {
		h  config.Header
		at place
	}
	var all []given
	for i, h := range base {
		all = append(all, given{h, pl[idemcheck.Field(fmt.Sprintf("Headers[%d]", i))]})
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		val, err := p.str(v, join(field, k.Value))
		if err != nil {
			return nil, err
		}
		all = slices.DeleteFunc(all, func(g given) bool { return strings.EqualFold(g.h.Name, k.Value) })
		all = append(all, given{config.Header{Name: k.Value, Value: val}, place{k, field}})
	}
	var out []config.Header
	for i, g := range all {
		pl[idemcheck.Field(fmt.Sprintf("Headers[%d]", i))] = g.at
		out = append(out, g.h)
	}
	return out, nil
}

func (p *parser) checks(n *yaml.Node, field string, pl places) ([]string, error) {
	return p.list(n, field, "Checks", pl, "a list of checks")
}

// text is a string field of a block: its key, the Spec field it sets (as
// config.Build's errors name it) and where it goes: to, or, for a field
// whose absence means something, opt. A body is a request body: a string,
// or YAML written out as JSON.
type text struct {
	key   string
	field idemcheck.Field
	to    *string
	opt   **string
	body  bool
	// url: the value is the target's address, printed in every report;
	// of what ${NAME} put in it only the secrets a URL carries stay
	// hidden (urlSecrets).
	url bool
	// dsn: the value is a database's DSN, printed with its password
	// hidden (targets.RedactDSN); of what ${NAME} put in it only that
	// password stays hidden (dsnSecrets).
	dsn bool
}

// dsnSecrets are the secrets of a DSN: its password. A DSN written as a
// URL (postgres://, mysql://) shows its user, host and database, as
// reports say where effects were counted; one in another form
// (key=value, user:pw@tcp(…)) stays hidden whole.
func dsnSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return []string{raw}
	}
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw, url.QueryEscape(pw))
	}
	for k, vs := range u.Query() {
		if strings.EqualFold(k, "password") {
			out = append(out, vs...)
		}
	}
	return out
}

// urlSecrets are the parts of a target URL that are secrets: its
// userinfo (the password above all) and its query values of 8 characters
// or more (a token; a shorter value is a setting such as ?v=1, which,
// hidden wherever it appears, would blank every report). Its scheme, host
// and path name where the run went, which every report must say.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: config.Build refuses it, quoting it; hide all of it.
		return []string{raw}
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.String())
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw, url.QueryEscape(pw))
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 8 {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	return out
}

// texts reads the string fields ts of a block whose fields are f, and
// records in pl where each was given.
func (p *parser) texts(f map[string]*yaml.Node, field string, pl places, ts ...text) error {
	for _, t := range ts {
		v, ok := f[t.key]
		if !ok {
			continue
		}
		read := p.str
		if t.body {
			read = p.body
		}
		before := len(p.secrets)
		s, err := read(v, join(field, t.key))
		if err != nil {
			return err
		}
		if t.url && len(p.secrets) > before {
			p.secrets = append(p.secrets[:before], urlSecrets(s)...)
		}
		if t.dsn && len(p.secrets) > before {
			p.secrets = append(p.secrets[:before], dsnSecrets(s)...)
		}
		if t.opt != nil {
			*t.opt = &s
		} else {
			*t.to = s
		}
		pl[t.field] = place{v, join(field, t.key)}
	}
	return nil
}

// list reads a list of strings, what the list holds for the error of a
// value that is not a list, and records in pl where each item was given,
// as name[i] (Checks[0], Tenants[1]).
func (p *parser) list(n *yaml.Node, field string, name idemcheck.Field, pl places, what string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "expected %s, got %s", what, kindName(n))
	}
	out := []string{}
	for i, c := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, err := p.str(c, f)
		if err != nil {
			return nil, err
		}
		pl[idemcheck.Field(fmt.Sprintf("%s[%d]", name, i))] = place{c, f}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) options(n *yaml.Node, o *Options, pl places) error {
	f, err := p.fields(n, "options", "burst", "burst_rounds", "rounds", "fault_rounds", "redeliveries", "retry_window",
		"settle", "timeout", "seed", "redact_headers", "allow_remote", "rate", "max_duration")
	if err != nil {
		return err
	}
	// into is where a number or duration of the options goes, and the
	// Spec field config.Build's errors name it by.
	type into[T any] struct {
		field idemcheck.Field
		to    *T
	}
	counts := map[string]into[int]{
		"burst": {"Options.BurstSize", &o.Scenarios.BurstSize}, "burst_rounds": {"Options.BurstRounds", &o.Scenarios.BurstRounds},
		"rounds": {"Options.Rounds", &o.Scenarios.Rounds}, "fault_rounds": {"Options.FaultRounds", &o.Scenarios.FaultRounds},
		"redeliveries": {"Options.Redeliveries", &o.Scenarios.Redeliveries},
	}
	durations := map[string]into[time.Duration]{
		"retry_window": {"Options.RetryWindow", &o.Scenarios.RetryWindow}, "timeout": {"Timeout", &o.Timeout},
		"settle":       {"Options.Settle", &o.Scenarios.Settle},
		"max_duration": {"MaxDuration", &o.MaxDuration},
	}
	for k, v := range f {
		fk := "options." + k
		var field idemcheck.Field
		c, isCount := counts[k]
		d, isDuration := durations[k]
		switch {
		case isCount:
			*c.to, err = p.whole(v, fk)
			field = c.field
		case isDuration:
			*d.to, err = p.duration(v, fk)
			field = d.field
		case k == "seed":
			err = p.errf(v, fk, "a certification makes no random choice (keys are UUIDs), so there is nothing to seed: remove it (soak --seed chooses which of a soak's intents are cut)")
		case k == "redact_headers":
			o.Redact, err = p.strings(v, fk)
		case k == "allow_remote":
			o.AllowRemote, err = p.boolean(v, fk)
			field = "AllowRemote"
		case k == "rate":
			if v.Kind != yaml.ScalarNode || v.Decode(&o.Rate) != nil {
				err = p.errf(v, fk, "expected a number of requests per second, got %s", kindName(v))
			}
			field = "Rate"
		}
		if err != nil {
			return err
		}
		if field != "" {
			pl[field] = place{v, fk}
		}
	}
	return nil
}

func (p *parser) endpoint(n *yaml.Node, field string, d defaults) (Endpoint, error) {
	f, err := p.fields(n, field, "name", "url", "method", "path", "headers", "body", "mismatch_body", "failing_body", "tenants",
		"cross_endpoint", "invalid_body", "policy", "effect", "db", "checks", "skip_checks", "sign")
	if err != nil {
		return Endpoint{}, err
	}
	spec, pl := d.spec, maps.Clone(d.places)
	e := Endpoint{at: place{n, field}, places: pl}
	if v, ok := f["name"]; ok {
		if e.Name, err = p.str(v, join(field, "name")); err != nil {
			return e, err
		}
	}
	if err := p.texts(f, field, pl, text{key: "url", field: "URL", to: &spec.URL, url: true}, text{key: "method", field: "Method", to: &spec.Method},
		text{key: "path", field: "Path", to: &spec.Path}, text{key: "db", field: "DSN", to: &spec.DSN, dsn: true},
		text{key: "body", field: "Body", to: &spec.Body, body: true}, text{key: "mismatch_body", field: "MismatchBody", to: &spec.MismatchBody, body: true},
		text{key: "failing_body", field: "FailingBody", to: &spec.FailingBody, body: true},
		text{key: "invalid_body", field: "InvalidBody", to: &spec.InvalidBody, body: true}); err != nil {
		return e, err
	}
	if v, ok := f["url"]; ok {
		spec.URLText = v.Value
	}
	pathNode, ok := f["path"]
	if !ok {
		return e, p.errf(n, join(field, "path"), "missing: the request path, such as /orders")
	}
	if e.Name == "" {
		m := strings.ToUpper(spec.Method)
		if m == "" {
			m = "POST"
		}
		e.Name = m + " " + pathNode.Value
	}
	spec.Name = e.Name
	if v, ok := f["headers"]; ok {
		if spec.Headers, err = p.headers(v, join(field, "headers"), spec.Headers, pl); err != nil {
			return e, err
		}
	}
	if v, ok := f["tenants"]; ok {
		if spec.Tenants, err = p.tenants(v, join(field, "tenants"), pl); err != nil {
			return e, err
		}
	}
	if v, ok := f["cross_endpoint"]; ok {
		if err := p.crossEndpoint(v, join(field, "cross_endpoint"), &spec, pl); err != nil {
			return e, err
		}
	}
	if v, ok := f["policy"]; ok {
		r, err := p.policy(v, join(field, "policy"), d.spec.Policy)
		if err != nil {
			return e, err
		}
		spec.Policy = r.policy
		r.signTo(&spec, pl, place{v, join(field, "policy")})
	}
	if v, ok := f["sign"]; ok {
		// The endpoint's own signing replaces its policy file's.
		(*Signing)(nil).Apply(&spec)
		for _, f := range signFields {
			delete(pl, f)
		}
		if err := p.sign(v, join(field, "sign"), &spec, pl); err != nil {
			return e, err
		}
	}
	if v, ok := f["checks"]; ok {
		if spec.Checks, err = p.checks(v, join(field, "checks"), pl); err != nil {
			return e, err
		}
	}
	if v, ok := f["skip_checks"]; ok {
		// An endpoint's own list replaces the suite's.
		if spec.SkipChecks, err = p.list(v, join(field, "skip_checks"), "SkipChecks", pl, "a list of checks"); err != nil {
			return e, err
		}
	}
	if v, ok := f["effect"]; ok {
		if err := p.effect(v, join(field, "effect"), &spec, pl); err != nil {
			return e, err
		}
	}
	if _, own := f["db"]; !own && spec.DSN != "" {
		// The target's database, shared by the suite's endpoints: one
		// that counts no effects leaves it unused.
		spec.DSNDefault = true
	}
	// The loopback rule is the run's, which knows --allow-remote.
	check := spec
	check.AllowRemote = true
	b, err := config.Build(check)
	if err != nil {
		return e, p.explain(err, e.at, pl)
	}
	e.Spec = spec
	c := b.Config
	e.Endpoint, e.Policy, e.Checks, e.DB = c.Endpoint, c.Policy, c.Checks, spec.DSN
	e.EffectSQL, e.EffectArgs, e.EffectHTTP, e.EffectCount = c.EffectSQL, c.EffectArgs, c.EffectHTTP, c.EffectCount
	if e.Checks == nil {
		e.Checks = scenarios.Names()
	}
	return e, nil
}

// tenants reads two clients' credentials, each "Name: value".
func (p *parser) tenants(n *yaml.Node, field string, pl places) ([]config.Header, error) {
	creds, err := p.list(n, field, "Tenants", pl, "a list of two credentials such as [\"Authorization: Bearer ${TOKEN_A}\", \"Authorization: Bearer ${TOKEN_B}\"]")
	if err != nil {
		return nil, err
	}
	pl["Tenants"] = place{n, field}
	var out []config.Header
	for _, s := range creds {
		out = append(out, config.SplitHeader(s))
	}
	return out, nil
}

func (p *parser) crossEndpoint(n *yaml.Node, field string, s *config.Spec, pl places) error {
	f, err := p.fields(n, field, "method", "path", "body")
	if err != nil {
		return err
	}
	pl["OtherPath"] = place{n, join(field, "path")}
	return p.texts(f, field, pl, text{key: "method", field: "OtherMethod", to: &s.OtherMethod}, text{key: "path", field: "OtherPath", to: &s.OtherPath},
		text{key: "body", field: "OtherBody", opt: &s.OtherBody, body: true})
}

func (p *parser) effect(n *yaml.Node, field string, s *config.Spec, pl places) error {
	f, err := p.fields(n, field, "sql", "args", "http", "count")
	if err != nil {
		return err
	}
	_, hasSQL := f["sql"]
	_, hasHTTP := f["http"]
	if !hasSQL && !hasHTTP {
		return p.errf(n, join(field, "sql"), "missing: SQL returning one intent's effect count, such as SELECT count(*) FROM orders WHERE customer_id = $1 (or http: a GET of the API that counts, with count)")
	}
	pl["EffectSQL"] = place{n, join(field, "sql")}
	pl["EffectHTTP"] = place{n, join(field, "http")}
	pl["EffectCount"] = place{n, join(field, "count")}
	if err := p.texts(f, field, pl, text{key: "sql", field: "EffectSQL", to: &s.EffectSQL}, text{key: "http", field: "EffectHTTP", to: &s.EffectHTTP},
		text{key: "count", field: "EffectCount", opt: &s.EffectCount}); err != nil {
		return err
	}
	if a, ok := f["args"]; ok {
		args, err := p.list(a, join(field, "args"), "EffectArgs", pl, "a list such as [\"{{intent}}\"]")
		if err != nil {
			return err
		}
		pl["EffectArgs"] = place{a, join(field, "args")}
		s.EffectArgs = append(s.EffectArgs, args...)
	}
	return nil
}
