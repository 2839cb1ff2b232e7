//go:build !linux

package targets

// stragglers finds nothing outside Linux, where no portable way lists
// processes: a kill there relies on the process group and the port check.
func stragglers(string, int) []straggler { return nil }

// treeOf is pid alone outside Linux.
func treeOf(pid int) []int { return []int{pid} }

// killPID does nothing outside Linux: the process group's SIGKILL is the
// kill there.
func killPID(int) {}
