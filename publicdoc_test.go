package idemcheck

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// What a user of the library reads of it, go doc, names nothing the user
// cannot import: no exported declaration takes or holds an internal type,
// and no doc comment sends the reader to an internal identifier (an
// internal package's name, a dot and an identifier).
func TestPublicDocNamesNothingInternal(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var public, internal []string
	for _, p := range strings.Fields(string(out)) {
		switch o := ours(p); {
		case o == "":
		case strings.HasPrefix(o, "internal/") || strings.Contains(o, "/internal/"):
			internal = append(internal, regexp.QuoteMeta(o[strings.LastIndex(o, "/")+1:]))
		case strings.HasPrefix(o, "examples") || strings.HasPrefix(o, "bench") || strings.HasPrefix(o, "cmd/"):
		default:
			public = append(public, p)
		}
	}
	if len(internal) == 0 || len(public) == 0 {
		t.Fatalf("go list found %d internal and %d public packages", len(internal), len(public))
	}
	internalName := regexp.MustCompile(`\b(` + strings.Join(internal, "|") + `)\.[A-Za-z]\w*`)
	for _, p := range public {
		doc, err := exec.Command("go", "doc", "-all", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc -all %s: %v\n%s", p, err, doc)
		}
		for i, line := range strings.Split(string(doc), "\n") {
			if m := internalName.FindString(line); m != "" {
				t.Errorf("go doc -all %s, line %d, names %s, which a user cannot import: %s", ours(p), i+1, m, strings.TrimSpace(line))
			}
		}
	}
}
