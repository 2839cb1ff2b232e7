package targets

import (
	"bytes"
	"os"
	"strconv"
)

// groupStopped reports whether every process in the group led by pgid has
// stopped. SIGSTOP takes effect when each process next runs, not when kill
// returns, so Pause waits for this: a request sent after Pause must meet a
// stopped server, never one still finishing its last steps. Zombies count
// as stopped: they run no code. On reading errors it answers true, so Pause
// falls back to the signal alone rather than failing.
func groupStopped(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		state, pgrp, ok := parseProcStat(stat)
		if !ok || pgrp != pgid {
			continue
		}
		switch state {
		case 'T', 't', 'Z', 'X':
		default:
			return false
		}
	}
	return true
}

// parseProcStat returns the state and process group from /proc/PID/stat:
// "PID (COMM) STATE PPID PGRP ...". COMM may hold spaces and parentheses,
// so the fields are counted from the last ')'.
func parseProcStat(stat []byte) (state byte, pgrp int, ok bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
