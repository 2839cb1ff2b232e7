package termtest

import (
	"fmt"
	"testing"
)

func TestScreen(t *testing.T) {
	for _, c := range []struct {
		out  string
		want []string
	}{
		{"a\nb\n", []string{"a", "b"}},
		{"a\nb", []string{"a", "b"}},
		{"\r\033[Klong line\r\033[Kshort", []string{"short"}},
		{"long line\rshort", []string{"shortline"}},
		{"head\n\r\033[K1\r\033[K2\n", []string{"head", "2"}},
		{"x\r\n\033[31mred\033[0m\r\n", []string{"x", "red"}},
	} {
		if got := Screen(c.out); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Screen(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
