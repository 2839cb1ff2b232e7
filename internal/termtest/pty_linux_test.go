package termtest

import (
	"fmt"
	"testing"
)

// What is written to the terminal end comes back, as the terminal's
// output processing makes it (a newline becomes CR LF).
func TestPTY(t *testing.T) {
	tty, read := PTY(t)
	fmt.Fprint(tty, "one\r\033[Ktwo\n")
	if got := read(); got != "one\r\033[Ktwo\r\n" {
		t.Fatalf("read %q", got)
	}
}
