package suite

import (
	"errors"
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
