package suite

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/userfile"
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

// policyFields are the keys of a policy block: a preset and its overrides.
var policyFields = []string{"preset", "key_header", "created_statuses", "accepted_statuses", "replay_statuses", "in_progress_status", "in_progress_statuses", "mismatch_status",
	"missing_key_status", "replay_errors", "replay_header", "lease", "ignore_fields", "resource_id", "key_pointer", "ack_only",
	"save_rejected", "invalid_key_status", "key_syntax", "status_pointer", "status_done", "status_failed", "status_url_pointer", "arrival_header"}

// policyRead is a policy block as read: the policy, whether it replaced
// the one it was read over (a preset, or a policy file) rather than
// overriding some of its fields, and a policy file's sign: block.
type policyRead struct {
	policy   idemcheck.Policy
	replaced bool
	sign     *Signing
}

// signTo gives spec the signing of the policy read, at its place: a
// policy that replaced the one before replaces its signing too (a preset
// clears it), and overrides of some fields leave it.
func (r policyRead) signTo(spec *config.Spec, pl places, at place) {
	if !r.replaced {
		return
	}
	r.sign.Apply(spec)
	for _, f := range signFields {
		if r.sign != nil {
			pl[f] = at
		} else {
			delete(pl, f)
		}
	}
}

// signFields are the fields of config.Spec a sign: block sets.
var signFields = []idemcheck.Field{"Sign", "SignSecret", "SignHeader", "SignSkew"}

// policy reads a policy block over base: a preset replaces base, and each
// override then replaces one field.
//
// A scalar names a preset ("stripe") or a policy file, relative to the
// suite's folder, as --policy does; a policy file's sign: block comes
// with it.
func (p *parser) policy(n *yaml.Node, field string, base idemcheck.Policy) (policyRead, error) {
	none := policyRead{policy: base}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		v, err := p.str(n, field)
		if err != nil {
			return none, err
		}
		if pol, err := idemcheck.Preset(v); err == nil {
			return policyRead{policy: pol, replaced: true}, nil
		}
		path := v
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(p.file), path)
		}
		b, err := userfile.Read(path, userfile.MaxPolicy)
		if err != nil {
			return none, p.errf(n, field, "%q is neither a preset (%s) nor a readable policy file: %v", n.Value, strings.Join(idemcheck.PresetNames(), ", "), err)
		}
		pf, err := ReadPolicyFile(path, b, p.lookup)
		if err != nil {
			return none, p.errf(n, field, "%v", err)
		}
		p.secrets = append(p.secrets, pf.Secrets...)
		return policyRead{policy: pf.Policy, replaced: true, sign: pf.Sign}, nil
	}
	pol, replaced, err := p.policyBlock(n, field, base)
	if err != nil {
		return none, err
	}
	return policyRead{policy: pol, replaced: replaced}, nil
}

// policyBlock reads a policy mapping over base: a preset (then replaced
// is true) and its overrides. A policy file's mapping also holds sign
// (extra), which ReadPolicyFile reads apart.
func (p *parser) policyBlock(n *yaml.Node, field string, base idemcheck.Policy, extra ...string) (pol idemcheck.Policy, replaced bool, err error) {
	f, err := p.fields(n, field, append(slices.Clip(policyFields), extra...)...)
	if err != nil {
		return base, false, err
	}
	pol = base
	if v, ok := f["preset"]; ok {
		name, err := p.str(v, join(field, "preset"))
		if err != nil {
			return base, false, err
		}
		if pol, err = idemcheck.Preset(name); err != nil {
			return base, false, p.errf(v, join(field, "preset"), "%v", err)
		}
		replaced = true
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
		case "accepted_statuses":
			// The successes that mean "accepted, effect pending" (202):
			// their effect is judged once effects settled (--settle).
			pol.AcceptedStatuses, err = p.statuses(v, fk)
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
			pol.IgnoreFields, err = p.strings(v, fk)
		case "key_pointer":
			pol.KeyPointer, err = p.str(v, fk)
		case "ack_only":
			pol.AckOnly, err = p.boolean(v, fk)
		case "save_rejected":
			pol.SaveRejected, err = p.boolean(v, fk)
		case "invalid_key_status":
			pol.InvalidKeyStatus, err = p.status(v, fk)
		case "key_syntax":
			pol.KeySyntax, err = p.str(v, fk)
		case "resource_id":
			pol.ResourceID, err = p.str(v, fk)
		case "status_pointer":
			// Where an accepted operation's state is in its status
			// monitor's answer: read while effects settle.
			pol.StatusPointer, err = p.str(v, fk)
		case "status_done":
			pol.StatusDone, err = p.strings(v, fk)
		case "status_failed":
			pol.StatusFailed, err = p.strings(v, fk)
		case "status_url_pointer":
			pol.StatusURLPointer, err = p.str(v, fk)
		case "arrival_header":
			pol.ArrivalHeader, err = p.str(v, fk)
		}
		if err != nil {
			return base, false, err
		}
	}
	if err := pol.Validate(); err != nil {
		// Point at the field's own line when this block gave it.
		var pe *idemcheck.PolicyError
		if errors.As(err, &pe) {
			if v, ok := f[pe.Field]; ok {
				return base, false, p.errf(v, join(field, pe.Field), "%s", pe.Msg)
			}
		}
		return base, false, p.errf(n, field, "%v", err)
	}
	if err := config.CheckPolicy(pol); err != nil {
		pl := places{}
		for k, v := range f {
			pl[config.PolicyField(k)] = place{v, join(field, k)}
		}
		return base, false, p.explain(err, place{n, field}, pl)
	}
	return pol, replaced, nil
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

// sign reads how every attempt is signed: {scheme: stripe, secret:
// '${WEBHOOK_SECRET}', header: NAME, skew: -10m}. The secret must come from
// the environment: a suite file is committed.
func (p *parser) sign(n *yaml.Node, field string, spec *config.Spec, pl places) error {
	f, err := p.fields(n, field, "scheme", "secret", "header", "skew")
	if err != nil {
		return err
	}
	if v, ok := f["secret"]; ok && !strings.Contains(v.Value, "${") {
		return p.errf(v, join(field, "secret"), "the secret comes from the environment: write '${NAME}', never the secret itself (the file is committed)")
	}
	if err := p.texts(f, field, pl, text{key: "scheme", field: "Sign", to: &spec.Sign}, text{key: "secret", field: "SignSecret", to: &spec.SignSecret},
		text{key: "header", field: "SignHeader", to: &spec.SignHeader}); err != nil {
		return err
	}
	if v, ok := f["skew"]; ok {
		s, err := p.str(v, join(field, "skew"))
		if err != nil {
			return err
		}
		if spec.SignSkew, err = time.ParseDuration(s); err != nil {
			return p.errf(v, join(field, "skew"), "expected a duration such as -10m, got %q", s)
		}
		pl["SignSkew"] = place{v, join(field, "skew")}
	}
	if _, ok := f["scheme"]; !ok {
		return p.errf(n, join(field, "scheme"), "missing: the signing scheme (%s)", strings.Join(scenarios.SignSchemes, ", "))
	}
	return nil
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

// PolicyFile is a policy file as read: the policy and, when the file has
// a sign: block, how every attempt is signed. The signing is kept beside
// the policy, never in it: a policy is written to every history, and a
// signing secret never is.
type PolicyFile struct {
	Policy idemcheck.Policy
	// Sign is the file's sign: block; nil without one.
	Sign *Signing
	// Secrets are the values ${NAME} expanded to in the file (the signing
	// secret among them), to hide wherever they appear.
	Secrets []string
}

// Signing is a sign: block: how every attempt is signed, as config.Spec's
// Sign, SignSecret, SignHeader and SignSkew say it.
type Signing struct {
	Scheme, Secret, Header string
	Skew                   time.Duration
}

// Apply sets s's signing fields to g's; a nil g clears them.
func (g *Signing) Apply(s *config.Spec) {
	if g == nil {
		s.Sign, s.SignSecret, s.SignHeader, s.SignSkew = "", "", "", 0
		return
	}
	s.Sign, s.SignSecret, s.SignHeader, s.SignSkew = g.Scheme, g.Secret, g.Header, g.Skew
}

// ParsePolicy reads a policy file's policy (ReadPolicyFile).
func ParsePolicy(file string, data []byte, lookup func(string) (string, bool)) (idemcheck.Policy, error) {
	pf, err := ReadPolicyFile(file, data, lookup)
	if err != nil {
		return idemcheck.Policy{}, err
	}
	return pf.Policy, nil
}

// ReadPolicyFile reads a policy file: a preset and its overrides, the
// same block a suite's policy takes, and a sign: block, the same an
// endpoint of a suite takes, checked as Build checks it. Its errors name
// the file, the line and the field, and never quote what ${NAME} expanded
// to.
func ReadPolicyFile(file string, data []byte, lookup func(string) (string, bool)) (*PolicyFile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Line: yamlErrLine(err), Msg: "not valid YAML: " + yamlErrText(err)}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "the policy file is empty"}
	}
	p := &parser{file: file, lookup: lookup}
	n := doc.Content[0]
	if n.Kind != yaml.MappingNode {
		// A preset's name, or what p.policy says is wrong with it.
		r, err := p.policy(n, "", idemcheck.IETF())
		if err != nil {
			return nil, err
		}
		return &PolicyFile{Policy: r.policy, Sign: r.sign, Secrets: p.secrets}, nil
	}
	pol, _, err := p.policyBlock(n, "", idemcheck.IETF(), "sign")
	if err != nil {
		return nil, err
	}
	out := &PolicyFile{Policy: pol}
	f, err := p.fields(n, "", append(slices.Clip(policyFields), "sign")...)
	if err != nil {
		return nil, err
	}
	if v, ok := f["sign"]; ok {
		var spec config.Spec
		pl := places{}
		if err := p.sign(v, "sign", &spec, pl); err != nil {
			return nil, err
		}
		if err := config.CheckSigning(spec); err != nil {
			return nil, p.explain(err, place{v, ""}, pl)
		}
		out.Sign = &Signing{Scheme: spec.Sign, Secret: spec.SignSecret, Header: spec.SignHeader, Skew: spec.SignSkew}
	}
	out.Secrets = p.secrets
	return out, nil
}
