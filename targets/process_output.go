package targets

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"sync"
)

// copyOutput reads a run's output a line at a time into the instance's
// tail and, prefixed, into Logs.
func (i *Instance) copyOutput(r *processRun) {
	defer close(r.logDone)
	defer r.pipe.Close()
	prefix := []byte("[" + i.label + "] ")
	br := bufio.NewReaderSize(r.pipe, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			// A line longer than the buffer arrives in pieces; each is
			// passed on as a line of its own.
			line = bytes.TrimRight(line, "\r\n")
			i.tail.writeLine(line)
			r.out.note(line)
			if w := i.p.cfg.Logs; w != nil {
				msg := make([]byte, 0, len(prefix)+len(line)+1)
				msg = append(append(append(msg, prefix...), line...), '\n')
				i.p.logMu.Lock()
				_, _ = w.Write(msg)
				i.p.logMu.Unlock()
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// note records a line of output.
func (o *processOutput) note(line []byte) {
	text := strings.TrimSpace(string(line))
	if text == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = text
	// The tail keeps indentation (a stack trace's, say).
	kept := strings.TrimRight(string(line), " \t")
	if len(kept) > maxTailLine {
		kept = kept[:maxTailLine] + "…"
	}
	if len(o.lines) == ExitTailLines {
		o.lines = append(o.lines[:0], o.lines[1:]...)
	}
	o.lines = append(o.lines, kept)
	// Go, Node and Python all say it this way; the retry is worth it only
	// at the first start, where the port is ours to choose.
	if strings.Contains(strings.ToLower(text), "address already in use") {
		o.portTaken = true
	}
}

// maxTailLine bounds each line an Exit's tail keeps, in bytes.
const maxTailLine = 1000

// tail returns the run's last non-blank lines, one per line.
func (o *processOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

func (o *processOutput) lastLine() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == "" {
		return noOutput
	}
	return o.last
}

func (o *processOutput) sawPortTaken() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.portTaken
}

// processTail keeps the last processTailSize bytes of an instance's output.
type processTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *processTail) writeLine(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(append(t.buf, line...), '\n')
	if over := len(t.buf) - processTailSize; over > 0 {
		// Cut at a line start, so the tail never begins mid-line.
		if nl := bytes.IndexByte(t.buf[over:], '\n'); nl >= 0 {
			over += nl + 1
		}
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *processTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
