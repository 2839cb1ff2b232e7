package bench

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// ParseSizes reads a comma-separated list of burst sizes, such as "8,32":
// each a whole number of 2 or more.
func ParseSizes(list string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("bad burst size %q", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// TableHead is the head of a Markdown table with these columns: its header
// row and its separator row, each ending in a newline.
func TableHead(cols ...string) string {
	return "| " + strings.Join(cols, " | ") + " |\n|" + strings.Repeat("---|", len(cols)) + "\n"
}

// StartBusyLoops starts n busy loops (`sh -c 'while :; do :; done'`) to
// compete for the cores, and returns what ends them, each killed by its own
// process id.
func StartBusyLoops(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
