package idemcheck

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Template is a string with holes filled per intent: {{key}}, {{intent}}
// and {{seq}}, and computed parts such as {{timestamp}}, {{uuid}} or
// {{hmac_sha256_hex "${SECRET}" (printf "%s.%s" timestamp body)}}. It is
// parsed once, so an unknown name or a wrong count of arguments is an
// error before any traffic is sent.
//
// A template of plain holes is filled by a scanner of its own; one with a
// computed part is run by text/template, restricted to function calls
// (see ParseTemplate), for its nested calls, quoted strings and printf,
// which Go users already know.
type Template struct {
	parts []templatePart
	// exec runs a template with computed parts; names are the functions
	// it calls.
	exec  *template.Template
	names []string
}

type templatePart struct {
	text string
	hole string // "", "key", "intent" or "seq"
}

// TemplateNames are the plain holes a template may use.
var TemplateNames = []string{"key", "intent", "seq"}

// templateHelp says what each function a template may call gives, for
// errors. Each takes and returns text. The time functions read the send's
// clock (Send.Now), body the exact bytes sent.
var templateHelp = map[string]string{
	"key":                "the intent's idempotency key (or event id)",
	"intent":             "the intent's id",
	"seq":                "the intent's number",
	"timestamp":          "the send's Unix time in seconds",
	"timestamp_ms":       "the send's Unix time in milliseconds",
	"uuid":               "a fresh random UUID (v4) at each evaluation",
	"now":                `the send's time in a Go layout or its name: {{now "RFC3339"}}`,
	"body":               "the exact body bytes sent (in headers and the path)",
	"hmac_sha256_hex":    "the hex HMAC-SHA256 of MESSAGE keyed by SECRET: {{hmac_sha256_hex SECRET MESSAGE}}",
	"hmac_sha256_base64": "the base64 HMAC-SHA256 of MESSAGE keyed by SECRET: {{hmac_sha256_base64 SECRET MESSAGE}}",
	"sha256_hex":         "the hex SHA-256 of MESSAGE: {{sha256_hex MESSAGE}}",
	"printf":             `text formatted as by fmt.Sprintf: {{printf "%s.%s" timestamp body}}`,
}

var templateArity = map[string]int{
	"key": 0, "intent": 0, "seq": 0, "timestamp": 0, "timestamp_ms": 0, "uuid": 0, "body": 0,
	"now": 1, "sha256_hex": 1, "hmac_sha256_hex": 2, "hmac_sha256_base64": 2, "printf": -1,
}

// timeLayouts are the names {{now}} accepts beside a layout.
var timeLayouts = map[string]string{
	"RFC3339": time.RFC3339, "RFC3339Nano": time.RFC3339Nano, "RFC1123": time.RFC1123,
	"RFC1123Z": time.RFC1123Z, "RFC822": time.RFC822, "RFC822Z": time.RFC822Z,
	"RFC850": time.RFC850, "Kitchen": time.Kitchen, "DateTime": time.DateTime,
	"DateOnly": time.DateOnly, "TimeOnly": time.TimeOnly, "HTTP": "Mon, 02 Jan 2006 15:04:05 GMT",
}

// ParseTemplate parses s. Holes are {{name}} with optional spaces inside
// the braces; a computed part is {{function arg...}}, where an argument is
// a "quoted string", a function without arguments, or a call in
// parentheses; {{a | b}} passes a's result to b as its last argument.
// Nothing else of text/template is allowed (no {{.}}, variables, if,
// range or define): a template computes text, it is not a program.
func ParseTemplate(s string) (Template, error) {
	var t Template
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.parts = append(t.parts, templatePart{text: rest})
			return t, nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return Template{}, fmt.Errorf("unclosed {{ at offset %d", len(s)-len(rest)+i)
		}
		name := strings.TrimSpace(rest[i+2 : i+j])
		switch name {
		case "key", "intent", "seq":
		default:
			return parseComputed(s)
		}
		t.parts = append(t.parts, templatePart{text: rest[:i]}, templatePart{hole: name})
		rest = rest[i+j+2:]
	}
}

// parseComputed parses a template with computed parts.
func parseComputed(s string) (Template, error) {
	tree := parse.New("t")
	tree.Mode = parse.SkipFuncCheck
	if _, err := tree.Parse(s, "{{", "}}", map[string]*parse.Tree{}); err != nil {
		msg := err.Error()
		// "template: t:1: unexpected ..." says the line; the rest is
		// text/template's own words.
		if _, after, ok := strings.Cut(msg, "template: t:"); ok {
			msg = "line " + after
		}
		return Template{}, fmt.Errorf("template syntax: %s", oneLine(msg))
	}
	var names []string
	if err := checkNodes(s, tree.Root, &names); err != nil {
		return Template{}, err
	}
	exec := template.New("t").Funcs(templateFuncs(Intent{}, Send{}))
	if _, err := exec.AddParseTree("t", tree); err != nil {
		return Template{}, fmt.Errorf("template: %s", oneLine(err.Error()))
	}
	t := Template{exec: exec, names: names}
	// Arguments of the wrong type (a number where text goes) show only
	// when run: run it once on sample values.
	if _, err := t.fill(Intent{ID: "ic-sample-1", Key: "k", Seq: 1}, Send{Now: time.Unix(0, 0), Body: []byte("{}")}); err != nil {
		return Template{}, err
	}
	return t, nil
}

// oneLine keeps an error on one line, whatever the text it quotes.
func oneLine(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		q := strconv.Quote(s)
		return q[1 : len(q)-1]
	}
	return s
}

// knownFuncs lists the functions for errors.
func knownFuncs() string {
	names := make([]string, 0, len(templateArity))
	for n := range templateArity {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// checkNodes allows text and actions that call known functions with the
// right count of arguments, and records the functions called.
func checkNodes(s string, n parse.Node, names *[]string) error {
	at := func(n parse.Node) string {
		return fmt.Sprintf("at byte %d", n.Position())
	}
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := checkNodes(s, c, names); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode, *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		return checkPipe(n.Pipe, names, at)
	}
	return fmt.Errorf("only function calls are allowed in {{ }}, such as {{timestamp}} or {{hmac_sha256_hex SECRET MESSAGE}} (no if, range, define or template): %s", at(n))
}

func checkPipe(p *parse.PipeNode, names *[]string, at func(parse.Node) string) error {
	if len(p.Decl) > 0 {
		return fmt.Errorf("variables are not allowed in a template: %s", at(p))
	}
	for i, c := range p.Cmds {
		if err := checkCommand(c, i > 0, names, at); err != nil {
			return err
		}
	}
	return nil
}

func checkCommand(c *parse.CommandNode, piped bool, names *[]string, at func(parse.Node) string) error {
	first := c.Args[0]
	id, ok := first.(*parse.IdentifierNode)
	if !ok {
		if len(c.Args) == 1 && !piped {
			switch a := first.(type) {
			case *parse.StringNode:
				return nil
			case *parse.PipeNode:
				return checkPipe(a, names, at)
			}
		}
		return fmt.Errorf("expected a function name, such as {{timestamp}}, %s (known: %s)", at(first), knownFuncs())
	}
	want, known := templateArity[id.Ident]
	if !known {
		return fmt.Errorf("unknown template function {{%s}} %s (known: %s)", oneLine(id.Ident), at(id), knownFuncs())
	}
	got := len(c.Args) - 1
	if piped {
		got++
	}
	if want >= 0 && got != want {
		return fmt.Errorf("%s %s takes %d argument%s, got %d: %s", id.Ident, at(id), want, plural(want), got, templateHelp[id.Ident])
	}
	if want < 0 && got == 0 {
		return fmt.Errorf("%s %s takes a format and its arguments: %s", id.Ident, at(id), templateHelp[id.Ident])
	}
	if !slices.Contains(*names, id.Ident) {
		*names = append(*names, id.Ident)
	}
	for _, a := range c.Args[1:] {
		switch a := a.(type) {
		case *parse.StringNode:
		case *parse.IdentifierNode:
			if err := checkCommand(&parse.CommandNode{NodeType: parse.NodeCommand, Pos: a.Pos, Args: []parse.Node{a}}, false, names, at); err != nil {
				return err
			}
		case *parse.PipeNode:
			if err := checkPipe(a, names, at); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the argument of %s %s must be a \"quoted string\", a function or a call in parentheses", id.Ident, at(a))
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// MustTemplate parses s and panics on error; for literals in code.
func MustTemplate(s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// Send is what a template's computed parts are computed from at send time:
// the clock (shifted by a signing skew, when one is given) and the exact
// body being sent.
type Send struct {
	Now  time.Time
	Body []byte
}

// Fill returns the template with the intent's values in its holes and its
// computed parts computed now.
func (t Template) Fill(in Intent) string {
	return t.FillAt(in, Send{Now: time.Now()})
}

// FillAt returns the template filled for the intent, its computed parts
// computed from sd.
func (t Template) FillAt(in Intent, sd Send) string {
	if t.exec != nil {
		out, err := t.fill(in, sd)
		if err != nil {
			// Parsing ran the template once: its functions take text and
			// cannot fail on other text.
			panic(err)
		}
		return out
	}
	if len(t.parts) == 1 && t.parts[0].hole == "" {
		return t.parts[0].text
	}
	var b strings.Builder
	for _, p := range t.parts {
		switch p.hole {
		case "":
			b.WriteString(p.text)
		case "key":
			b.WriteString(in.Key)
		case "intent":
			b.WriteString(in.ID)
		case "seq":
			b.WriteString(strconv.Itoa(in.Seq))
		}
	}
	return b.String()
}

func (t Template) fill(in Intent, sd Send) (string, error) {
	x, err := t.exec.Clone()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := x.Funcs(templateFuncs(in, sd)).Execute(&b, nil); err != nil {
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "template: t:"); ok {
			msg = "line " + after
		}
		return "", fmt.Errorf("template: %s", oneLine(msg))
	}
	return b.String(), nil
}

// templateFuncs are the functions bound to one fill.
func templateFuncs(in Intent, sd Send) template.FuncMap {
	mac := func(secret, msg string) []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	return template.FuncMap{
		"key":          func() string { return in.Key },
		"intent":       func() string { return in.ID },
		"seq":          func() string { return strconv.Itoa(in.Seq) },
		"timestamp":    func() string { return strconv.FormatInt(sd.Now.Unix(), 10) },
		"timestamp_ms": func() string { return strconv.FormatInt(sd.Now.UnixMilli(), 10) },
		"uuid":         newUUID,
		"now": func(layout string) string {
			if l, ok := timeLayouts[layout]; ok {
				layout = l
			}
			return sd.Now.UTC().Format(layout)
		},
		"body":               func() string { return string(sd.Body) },
		"hmac_sha256_hex":    func(secret, msg string) string { return hex.EncodeToString(mac(secret, msg)) },
		"hmac_sha256_base64": func(secret, msg string) string { return base64.StdEncoding.EncodeToString(mac(secret, msg)) },
		"sha256_hex": func(msg string) string {
			sum := sha256.Sum256([]byte(msg))
			return hex.EncodeToString(sum[:])
		},
	}
}

// newUUID returns a random UUID, version 4.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Uses reports whether the template has a hole or calls a function named
// name.
func (t Template) Uses(name string) bool {
	if t.exec != nil {
		return slices.Contains(t.names, name)
	}
	for _, p := range t.parts {
		if p.hole == name {
			return true
		}
	}
	return false
}

// Computed reports whether the template has computed parts: its filling
// may change from one send to the next (a time, a UUID, the body sent).
func (t Template) Computed() bool { return t.exec != nil }
