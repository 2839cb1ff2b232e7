// Package docblocks finds the shell blocks of the project's Markdown files,
// so that a test can run them as a reader would and prove that every
// command in the README and docs/ works as written.
//
// A fenced block whose info string is sh, bash or shell is a command block.
// The line just before its fence may say how to treat it:
//
//	<!-- doc-blocks: skip: REASON -->   never run (it talks to staging, it takes an hour)
//	<!-- doc-blocks: needs docker -->   run only where a Docker engine answers
//
// Any other block (text, yaml, json, go) is shown, never run.
package docblocks

import (
	"bufio"
	"fmt"
	"strings"
)

// Block is one command block of a Markdown file.
type Block struct {
	File string
	// Line is the line of the opening fence, from 1.
	Line int
	Text string
	// Skip is the reason a block must not run; empty when it runs.
	Skip string
	// NeedsDocker: run only where a Docker engine answers.
	NeedsDocker bool
}

const marker = "<!-- doc-blocks:"

// Extract returns the command blocks of one Markdown file, in order. A
// marker that is malformed or not followed by a command block, and a fence
// left open, are errors naming the line.
func Extract(file, md string) ([]Block, error) {
	var out []Block
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	var pending *Block // a marker waiting for its block
	pendingLine := 0
	var open *Block
	fence := ""
	var body []string
	for sc.Scan() {
		n++
		line := sc.Text()
		if open != nil || fence != "" {
			if strings.TrimSpace(line) == fence {
				if open != nil {
					open.Text = strings.Join(body, "\n") + "\n"
					out = append(out, *open)
				}
				open, fence, body = nil, "", nil
				continue
			}
			body = append(body, line)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, marker) {
			b, err := parseMarker(file, n, trimmed)
			if err != nil {
				return nil, err
			}
			pending, pendingLine = &b, n
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			ticks := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.TrimSpace(strings.TrimPrefix(trimmed, ticks))
			fence = ticks
			if isShell(info) {
				b := Block{File: file, Line: n}
				if pending != nil {
					b.Skip, b.NeedsDocker = pending.Skip, pending.NeedsDocker
				}
				open = &b
			} else if pending != nil {
				return nil, fmt.Errorf("%s:%d: a doc-blocks marker must come just before a sh block, not a %q block", file, pendingLine, info)
			}
			pending = nil
			continue
		}
		if pending != nil {
			return nil, fmt.Errorf("%s:%d: a doc-blocks marker must come just before a sh block", file, pendingLine)
		}
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: a code fence is never closed", file)
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a doc-blocks marker must come just before a sh block", file, pendingLine)
	}
	return out, sc.Err()
}

func isShell(info string) bool {
	f := strings.Fields(info)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "sh", "bash", "shell":
		return true
	}
	return false
}

func parseMarker(file string, line int, s string) (Block, error) {
	body, ok := strings.CutSuffix(strings.TrimSpace(strings.TrimPrefix(s, marker)), "-->")
	body = strings.TrimSpace(body)
	switch {
	case !ok:
		return Block{}, fmt.Errorf("%s:%d: a doc-blocks marker ends with -->", file, line)
	case body == "needs docker":
		return Block{NeedsDocker: true}, nil
	case strings.HasPrefix(body, "skip:") && strings.TrimSpace(strings.TrimPrefix(body, "skip:")) != "":
		return Block{Skip: strings.TrimSpace(strings.TrimPrefix(body, "skip:"))}, nil
	}
	return Block{}, fmt.Errorf("%s:%d: unknown doc-blocks marker %q: use \"skip: REASON\" or \"needs docker\"", file, line, body)
}

// Script joins the blocks of one file that run into one bash script, each
// announced with its file and line, that stops at the first failing
// command. An example API a block started in the background is stopped
// when the script ends, whatever happened.
func Script(blocks []Block, docker bool) string {
	var b strings.Builder
	b.WriteString("set -eo pipefail\n")
	b.WriteString(`trap 'if [ -n "${EXAMPLE_PID:-}" ]; then kill "$EXAMPLE_PID" 2>/dev/null || true; fi' EXIT` + "\n")
	for _, bl := range blocks {
		if bl.Skip != "" || (bl.NeedsDocker && !docker) {
			continue
		}
		fmt.Fprintf(&b, "echo '=== doc-blocks: %s:%d' >&2\n", bl.File, bl.Line)
		b.WriteString(bl.Text)
	}
	return b.String()
}
