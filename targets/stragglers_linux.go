package targets

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// stragglers lists the live processes that belong to a killed run but
// were not in its process group: those whose environment carries the
// run's mark (a process that called setsid, or a daemon that forked twice
// and was reparented, keeps the environment it was started with), and
// whatever listens on the instance's port (a process that cleared its
// environment and left the tree: the port is the target's, idemcheck chose
// it). Zombies are dead and not listed; neither is idemcheck itself.
func stragglers(mark string, port int) []straggler {
	self := os.Getpid()
	listeners := listenerInodes(port)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []straggler
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		state, _, ok := statPPID(stat)
		if !ok || state == 'Z' || state == 'X' {
			continue
		}
		why := ""
		switch {
		case mark != "" && hasEnv(pid, mark):
			why = "started by the killed command (it left its process group)"
		case len(listeners) > 0 && holdsSocket(pid, listeners):
			why = fmt.Sprintf("listening on the target's port %d", port)
		default:
			continue
		}
		out = append(out, straggler{pid: pid, why: why, cmdline: cmdline(pid)})
	}
	return out
}

// treeOf lists pid and its live descendants.
func treeOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if _, ppid, ok := statPPID(stat); ok {
			parent[p] = ppid
		}
	}
	in := map[int]bool{pid: true}
	for grew := true; grew; {
		grew = false
		for p, pp := range parent {
			if !in[p] && in[pp] {
				in[p], grew = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	return out
}

// killPID sends SIGKILL to one process.
func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// statPPID returns the state and parent pid from /proc/PID/stat.
func statPPID(stat []byte) (state byte, ppid int, ok bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], ppid, true
}

// hasEnv reports whether the process's initial environment holds kv.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// cmdline is the process's command line, spaces between its arguments.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// listenerInodes returns the socket inodes listening on 127.0.0.1:port or
// [::]:port, from /proc/net/tcp and tcp6.
func listenerInodes(port int) map[string]bool {
	out := map[string]bool{}
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || !strings.HasSuffix(fields[1], want) || fields[3] != "0A" {
				continue
			}
			out[fields[9]] = true
		}
		_ = fh.Close()
	}
	return out
}

// holdsSocket reports whether the process has one of the socket inodes
// open.
func holdsSocket(pid int, inodes map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		l, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil {
			continue
		}
		if in, ok := strings.CutPrefix(l, "socket:["); ok && inodes[strings.TrimSuffix(in, "]")] {
			return true
		}
	}
	return false
}
