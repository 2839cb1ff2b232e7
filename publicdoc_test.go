package idemcheck

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// internalName is an identifier of one of the module's internal packages,
// as a declaration or a doc comment would qualify it.
var internalName = regexp.MustCompile(`\b(wire|netguard|tcprelay|config|program|render|estimate|suite|userfile|openapi|linkemu|testctx|testbin|netns)\.[A-Za-z]\w*`)

// What a user of the library reads of it, go doc, names nothing the user
// cannot import: no exported declaration takes or holds an internal type,
// and no doc comment sends the reader to an internal identifier.
func TestPublicDocNamesNothingInternal(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		o := ours(p)
		if o == "" || strings.HasPrefix(o, "internal/") || strings.Contains(o, "/internal/") || strings.HasPrefix(o, "examples") || strings.HasPrefix(o, "bench") || strings.HasPrefix(o, "cmd/") {
			continue
		}
		doc, err := exec.Command("go", "doc", "-all", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc -all %s: %v\n%s", p, err, doc)
		}
		for i, line := range strings.Split(string(doc), "\n") {
			if m := internalName.FindString(line); m != "" {
				t.Errorf("go doc -all %s, line %d, names %s, which a user cannot import: %s", o, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}
