// Package suite reads suite files: several endpoints of one API, each with
// its request template, policy, effect SQL and checks, in YAML. Every error
// names the file, the line, the field and what was expected, because a
// suite is written by hand and read by CI.
package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
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
	Seed        int64
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
}

// Error is a suite error at a line.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

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
	b, err := os.ReadFile(path)
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

func (p *parser) template(n *yaml.Node, field string) (idemcheck.Template, error) {
	s, err := p.str(n, field)
	if err != nil {
		return idemcheck.Template{}, err
	}
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return idemcheck.Template{}, p.errf(n, field, "%v", err)
	}
	return t, nil
}

// body reads a request body: a string as it is, or YAML that is written out as JSON.
func (p *parser) body(n *yaml.Node, field string) (idemcheck.Template, error) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		t, err := p.template(n, field)
		if err != nil {
			return t, err
		}
		if sample := t.Fill(idemcheck.Intent{ID: "ic-sample-1", Key: "00000000-0000-4000-8000-000000000000", Seq: 1}); strings.HasPrefix(strings.TrimSpace(sample), "{") || strings.HasPrefix(strings.TrimSpace(sample), "[") {
			if !json.Valid([]byte(sample)) {
				return t, p.errf(n, field, "looks like JSON but is not valid JSON once its templates are filled")
			}
		}
		return t, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return idemcheck.Template{}, p.errf(n, field, "%v", err)
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return idemcheck.Template{}, p.errf(n, field, "cannot be written as JSON: %v", err)
	}
	s, err := p.str(&yaml.Node{Kind: yaml.ScalarNode, Value: string(b), Line: n.Line}, field)
	if err != nil {
		return idemcheck.Template{}, err
	}
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return t, p.errf(n, field, "%v", err)
	}
	return t, nil
}

// jsonable turns YAML's map[string]any trees into JSON-encodable values.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = jsonable(x)
		}
	case []any:
		for i, x := range t {
			t[i] = jsonable(x)
		}
	}
	return v
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
