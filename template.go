package idemcheck

import (
	"fmt"
	"strconv"
	"strings"
)

// Template is a string with {{key}}, {{intent}} and {{seq}} holes, filled
// per intent. It is parsed once, so an unknown name is an error before any
// traffic is sent.
type Template struct {
	parts []templatePart
}

type templatePart struct {
	text string
	hole string // "", "key", "intent" or "seq"
}

// TemplateNames are the names a template may use.
var TemplateNames = []string{"key", "intent", "seq"}

// ParseTemplate parses s. Holes are {{name}} with optional spaces inside the braces.
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
			shown := "{{" + name + "}}"
			if strings.ContainsFunc(shown, func(r rune) bool { return !strconv.IsPrint(r) }) {
				// A line break or control character in the text must not
				// split or garble a one-line error.
				shown = strconv.Quote(shown)
			}
			return Template{}, fmt.Errorf("unknown template name %s (known: {{key}}, {{intent}}, {{seq}})", shown)
		}
		t.parts = append(t.parts, templatePart{text: rest[:i]}, templatePart{hole: name})
		rest = rest[i+j+2:]
	}
}

// MustTemplate parses s and panics on error; for literals in code.
func MustTemplate(s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// Fill returns the template with the intent's values in its holes.
func (t Template) Fill(in Intent) string {
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

// Uses reports whether the template has a hole named name.
func (t Template) Uses(name string) bool {
	for _, p := range t.parts {
		if p.hole == name {
			return true
		}
	}
	return false
}
