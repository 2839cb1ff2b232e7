package render

import "strings"

// Printable is text that may come from the target (a reply's body, its
// headers, its process's output, an error that quotes them) made safe to
// print on a terminal, a line at a time: every control character (C0 and
// C1, DEL, the carriage return and the newline among them) and every byte
// that is not UTF-8 is shown as a Go escape (\x1b, \r, \n, \xff), so no
// sequence it holds can move the cursor, clear the screen, retitle the
// window (ANSI CSI, OSC) or start a line that looks like idemcheck's own.
// It is the one escaping every terminal output of text from the target
// goes through.
func Printable(s string) string {
	s = clean(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}
