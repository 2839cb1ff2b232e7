// Package termtest gives tests a terminal: a pseudo-terminal a command can
// write its standard error to (pty_linux.go), and the lines a screen shows
// of what was written (Screen), so that a test sees a line redrawn in place
// as a person at the terminal sees it.
//
// It is for tests only and imports nothing of idemcheck.
package termtest

import "strings"

// Screen returns the lines a terminal shows after out is written to it
// from the top left: a carriage return moves to the start of the line, a
// newline to the start of the next (as a terminal's output processing
// makes of it), ESC [ K erases from the cursor to the end of the line, any
// other control sequence (ESC [ … letter, such as a colour) is dropped, and
// every other character overwrites the one under the cursor. The last line
// is included only when something is on it.
func Screen(out string) []string {
	lines := [][]rune{nil}
	row, col := 0, 0
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\r':
			col = 0
		case '\n':
			row, col = row+1, 0
			if row == len(lines) {
				lines = append(lines, nil)
			}
		case '\033':
			if i+1 < len(rs) && rs[i+1] == '[' {
				j := i + 2
				for j < len(rs) && !(rs[j] >= '@' && rs[j] <= '~') {
					j++
				}
				if j < len(rs) && rs[j] == 'K' {
					lines[row] = lines[row][:min(col, len(lines[row]))]
				}
				i = j
			}
		default:
			for len(lines[row]) <= col {
				lines[row] = append(lines[row], ' ')
			}
			lines[row][col] = r
			col++
		}
	}
	shown := make([]string, 0, len(lines))
	for _, l := range lines {
		shown = append(shown, strings.TrimRight(string(l), " "))
	}
	if shown[len(shown)-1] == "" {
		shown = shown[:len(shown)-1]
	}
	return shown
}
