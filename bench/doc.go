package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idemcheck/idemcheck/internal/outfile"
)

// Section markers: a generated section of a Markdown file sits between
// SectionBegin(name) and SectionEnd(name).
func SectionBegin(name string) string {
	return "<!-- " + name + ":begin (written by `make bench`; edits inside are overwritten) -->"
}

func SectionEnd(name string) string { return "<!-- " + name + ":end -->" }

// RewriteSection replaces the section called name of the Markdown file at
// path with content, leaving everything outside the markers as it was. The
// file is replaced whole (written aside, then renamed), never half-written.
func RewriteSection(path, name, content string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := SectionBegin(name), SectionEnd(name)
	i := bytes.Index(old, []byte(begin))
	j := bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s section (%s ... %s)", path, name, begin, end)
	}
	var b bytes.Buffer
	b.Write(old[:i+len(begin)])
	b.WriteString("\n")
	b.WriteString(content)
	b.WriteString("\n")
	b.Write(old[j:])
	return outfile.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b.Bytes())
		return err
	})
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes, as
// "0.35, 1.33, 1.90", or "unknown": figures are read against it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}
