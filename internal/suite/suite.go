// Package suite reads suite files: several endpoints of one API, each with
// its request template, policy, effect SQL and checks, in YAML. It reads
// the YAML; each endpoint is then checked by internal/config, the rules the
// command's flags and idemchecktest share. Every error names the file, the
// line, the field and what was expected, because a suite is written by
// hand and read by CI.
//
// It imports internal/config and the packages below it; never cmd,
// idemchecktest or examples.
package suite

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
	"github.com/idemcheck/idemcheck/internal/userfile"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Suite is a parsed suite file.
type Suite struct {
	File      string
	Endpoints []Endpoint
	Options   Options
	// Command, when set, starts the target (with Instances replicas):
	// idemcheck then owns its process and database link.
	Command   string
	Instances int
	// Image, when set, starts the target from a container image, with Env
	// ("NAME=value") and its database from DBImage where no DSN is given.
	Image   string
	DBImage string
	Env     []string
	// Secrets are the values ${NAME} expanded to: credentials, for all the
	// suite can tell, hidden wherever they appear in a report or history.
	Secrets []string
	// Log is the file a started target's stdout and stderr go to (as
	// --target-log, which overrides it); empty means a temporary file.
	Log string
}

// Options apply to every endpoint of the suite.
type Options struct {
	Scenarios   scenarios.Options
	Timeout     time.Duration
	Redact      []string
	AllowRemote bool
	// Rate caps requests per second across the run; 0 means the default.
	Rate float64
	// MaxDuration caps the whole run; 0 means the default.
	MaxDuration time.Duration
}

// Endpoint is one endpoint to certify.
type Endpoint struct {
	Name     string
	Endpoint scenarios.Endpoint
	Policy   idemcheck.Policy
	Checks   []string
	// DB is the DSN effects are counted in ("" for none).
	DB         string
	EffectSQL  string
	EffectArgs []idemcheck.Template
	// EffectHTTP, when set, counts effects through the API itself: a GET
	// of this path (a template), whose answer holds at EffectCount (a JSON
	// pointer) an array whose length is the count, or the count.
	EffectHTTP  *idemcheck.Template
	EffectCount string
	// Spec is the endpoint as config.Build takes it, with the suite's
	// target and options: what a run builds its certification from.
	Spec config.Spec

	at     place
	places places
}

// place is where a setting was given: its node and its key.
type place struct {
	node *yaml.Node
	key  string
}

// places are where the fields of an endpoint's Spec were given.
type places map[idemcheck.Field]place

// Explain says err, an error of config.Build for endpoint i, in the
// suite's words: its file, line and key.
func (s *Suite) Explain(i int, err error) error {
	p := &parser{file: s.File, secrets: s.Secrets}
	e := s.Endpoints[i]
	return p.explain(err, e.at, e.places)
}

// Error is a suite error at a line.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
	// Err is the error said, when it is config.Build's (an
	// *idemcheck.FieldError).
	Err error
}

// Unwrap returns the error said, if any.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Load reads and parses a suite file, expanding ${NAME} from the environment.
func Load(path string) (*Suite, error) {
	b, err := userfile.Read(path, userfile.MaxSuite)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the suite: %v", err)}
	}
	return Parse(path, b, os.LookupEnv)
}

// Parse parses suite text; lookup resolves ${NAME}.
func Parse(file string, data []byte, lookup func(string) (string, bool)) (*Suite, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Line: yamlErrLine(err), Msg: "not valid YAML: " + yamlErrText(err)}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "the suite is empty: it needs at least an endpoints list"}
	}
	p := &parser{file: file, lookup: lookup}
	s, err := p.suite(doc.Content[0])
	if err != nil {
		return nil, err
	}
	s.File = file
	s.Secrets = p.secrets
	return s, nil
}

var (
	lineRE       = regexp.MustCompile(`line (\d+)`)
	linePrefixRE = regexp.MustCompile(`^line \d+: `)
)

// yamlErrText is the parser's message without its "yaml: line N:" prefix,
// since the error names the line itself.
func yamlErrText(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return linePrefixRE.ReplaceAllString(s, "")
}

func yamlErrLine(err error) int {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		return n
	}
	return 0
}

type parser struct {
	file   string
	lookup func(string) (string, bool)
	// secrets are the values ${NAME} expanded to.
	secrets []string
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fields checks a mapping's keys against the known ones and returns the
// value nodes by key.
func (p *parser) fields(n *yaml.Node, field string, known ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "expected a mapping of %s, got %s", strings.Join(known, ", "), kindName(n))
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(known, k.Value) {
			sorted := slices.Clone(known)
			sort.Strings(sorted)
			return nil, p.errf(k, join(field, k.Value), "unknown field (known: %s)", strings.Join(sorted, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errf(k, join(field, k.Value), "given twice")
		}
		out[k.Value] = v
	}
	return out, nil
}

func join(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

var envRE = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// str reads a scalar string and expands ${NAME}; "$$" is a literal "$".
// A bare "$1" is left alone, so SQL placeholders need no escaping.
func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, field, "expected a string, got %s", kindName(n))
	}
	var missing string
	out := envRE.ReplaceAllStringFunc(n.Value, func(m string) string {
		if m == "$$" {
			return "$"
		}
		name := m[2 : len(m)-1]
		v, ok := p.lookup(name)
		if !ok && missing == "" {
			missing = name
		}
		if v != "" {
			p.secrets = append(p.secrets, v)
		}
		return v
	})
	if missing != "" {
		return "", p.errf(n, field, "environment variable %s is not set (write $${%s} for a literal)", missing, missing)
	}
	return out, nil
}

// body reads a request body: a string as it is, or YAML that is written
// out as JSON.
func (p *parser) body(n *yaml.Node, field string) (string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return p.str(n, field)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "", p.errf(n, field, "%v", err)
	}
	b, err := userfile.JSON(v)
	if err != nil {
		return "", p.errf(n, field, "cannot be written as JSON: %v", err)
	}
	return p.str(&yaml.Node{Kind: yaml.ScalarNode, Value: string(b), Line: n.Line}, field)
}

func (p *parser) integer(n *yaml.Node, field string, lo, hi int) (int, error) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		return 0, p.errf(n, field, "expected a whole number from %d to %d, got %s", lo, hi, kindName(n))
	}
	if v < lo || v > hi {
		return 0, p.errf(n, field, "%d is out of range: use %d to %d", v, lo, hi)
	}
	return v, nil
}

// whole reads a whole number; its range is config.Build's to check.
func (p *parser) whole(n *yaml.Node, field string) (int, error) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		return 0, p.errf(n, field, "expected a whole number, got %s", kindName(n))
	}
	return v, nil
}

func (p *parser) status(n *yaml.Node, field string) (int, error) {
	return p.integer(n, field, 0, 599)
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, error) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		return false, p.errf(n, field, "expected true or false, got %s", kindName(n))
	}
	return v, nil
}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, p.errf(n, field, "expected a positive duration such as 10s or 5m, got %q", s)
	}
	return d, nil
}

func (p *parser) strings(n *yaml.Node, field string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "expected a list, got %s", kindName(n))
	}
	var out []string
	for i, c := range n.Content {
		s, err := p.str(c, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) statuses(n *yaml.Node, field string) ([]int, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "expected a list of statuses such as [200, 201], got %s", kindName(n))
	}
	var out []int
	for i, c := range n.Content {
		s, err := p.integer(c, fmt.Sprintf("%s[%d]", field, i), 100, 599)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Words are the suite's names for the fields config.Build's errors name:
// the key that sets each (the line says where).
var Words = func() map[idemcheck.Field]idemcheck.Word {
	w := map[idemcheck.Field]idemcheck.Word{
		"URL": {Name: "url"}, "Endpoint.Base": {Name: "url"}, "Command": {Name: "cmd"}, "Instances": {Name: "instances"},
		"Image": {Name: "image"}, "DBImage": {Name: "db_image"}, "DBEngine": {Name: "db_engine"}, "Env": {Name: "env"}, "Providers": {Name: "providers"}, "TargetLog": {Name: "log"},
		"Method": {Name: "method"}, "Path": {Name: "path"}, "Endpoint.Path": {Name: "path"}, "Body": {Name: "body"},
		"Headers": {Name: "headers"}, "Endpoint.Header": {Name: "headers"}, "Tenants": {Name: "tenants"},
		"Sign": {Name: "sign.scheme", Set: "set sign: {scheme: …, secret: '${NAME}'}"}, "SignSecret": {Name: "sign.secret"},
		"SignHeader": {Name: "sign.header"}, "SignSkew": {Name: "sign.skew"},
		"MismatchBody": {Name: "mismatch_body"}, "FailingBody": {Name: "failing_body"}, "Endpoint.FailingBody": {Name: "failing_body", Set: "set failing_body"}, "InvalidBody": {Name: "invalid_body"},
		"OtherMethod": {Name: "cross_endpoint.method"}, "OtherPath": {Name: "cross_endpoint.path"}, "OtherBody": {Name: "cross_endpoint.body"},
		"DSN": {Name: "db"}, "DB": {Name: "db", Set: "set db here or under target (such as db: ${DATABASE_URL})"},
		"EffectSQL": {Name: "sql"}, "EffectArgs": {Name: "args"}, "EffectHTTP": {Name: "http"}, "EffectCount": {Name: "count"},
		"Checks": {Name: "checks"}, "SkipChecks": {Name: "skip_checks"}, "Options.BurstSize": {Name: "burst"}, "Options.BurstRounds": {Name: "burst_rounds"},
		"Options.Rounds": {Name: "rounds"}, "Options.FaultRounds": {Name: "fault_rounds"}, "Options.Redeliveries": {Name: "redeliveries"},
		"Options.RetryWindow": {Name: "retry_window"}, "Options.Settle": {Name: "settle"}, "Rate": {Name: "rate"}, "Timeout": {Name: "timeout"}, "MaxDuration": {Name: "max_duration"},
		"AllowRemote": {Name: "allow_remote", Set: "set options.allow_remote: true (or pass --allow-remote)"},
		"Powers":      {Name: "cmd", Set: "set cmd or image under target"}, "Endpoint.Other": {Name: "cross_endpoint", Set: "set cross_endpoint"},
	}
	for _, k := range policyFields[1:] {
		w[config.PolicyField(k)] = idemcheck.Word{Name: k}
	}
	return w
}()

// explain says an error of config.Build in the suite's words: the file,
// the line and key of the field at fault (at, the endpoint or block, when
// the file does not give it), and the message with the keys of the fields
// it names. It never shows what ${NAME} expanded to.
func (p *parser) explain(err error, at place, pl places) error {
	var fe *idemcheck.FieldError
	if !errors.As(err, &fe) {
		return p.errf(at.node, at.key, "%v", err)
	}
	w, ok := Words[fe.Field]
	if !ok {
		if w, ok = Words[fe.Field.List()]; !ok {
			w.Name = string(fe.Field)
		}
	}
	where, ok := pl[fe.Field]
	if !ok {
		if where, ok = pl[fe.Field.List()]; !ok {
			where = place{at.node, join(at.key, w.Name)}
		}
	}
	// The file's error is said before the command's redactor knows the
	// suite's secrets: hide them here, in every form.
	red := idemcheck.NewRedactor()
	red.AddSecret(p.secrets...)
	text := red.String(fe.Text(Words))
	e := &Error{File: p.file, Line: where.node.Line, Field: where.key, Msg: text, Err: err}
	if rest, ok := strings.CutPrefix(text, w.Name); ok && w.Name != "" {
		// The message starts with the field: said once, by its key.
		switch {
		case strings.HasPrefix(rest, ":"):
			e.Msg = strings.TrimLeft(rest, ": ")
		case strings.HasPrefix(rest, " ") && len(rest) > 1 && !('a' <= rest[1] && rest[1] <= 'z'):
			// A value follows: "url: \"localhost:80\" is not …".
			e.Msg = rest[1:]
		default:
			// A verb follows: "log goes with cmd or image".
			e.Field, e.Msg = "", where.key+rest
		}
	}
	return e
}
