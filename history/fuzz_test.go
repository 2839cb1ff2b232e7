package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadHistories: reading never panics, and what reads writes back to
// the same histories.
func FuzzReadHistories(f *testing.F) {
	// The recorded fixtures' first lines: whole ones (hundreds of KB) would
	// leave the fuzzer a few executions a minute.
	for _, name := range []string{"reference.jsonl", "check-then-insert.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("..", "assert", "testdata", name)); err == nil {
			lines := strings.SplitAfterN(string(b), "\n", 9)
			f.Add([]byte(strings.Join(lines[:min(8, len(lines))], "")))
		}
	}
	f.Add([]byte(`{"run":{"seed":1}}` + "\n" + `{"event":{"kind":"fault-landed","intent":"i"}}` + "\n"))
	f.Add([]byte("{\"run\":{}}\nnot json\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := ReadAll(bytes.NewReader(b), "h.jsonl")
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, hs...); err != nil {
			t.Fatal(err)
		}
		again, err := ReadAll(&out, "again.jsonl")
		if err != nil {
			t.Fatalf("a written history does not read back: %v", err)
		}
		if len(again) != len(hs) {
			t.Fatalf("%d histories read back as %d", len(hs), len(again))
		}
		for i := range hs {
			if len(again[i].Attempts) != len(hs[i].Attempts) || len(again[i].Events) != len(hs[i].Events) || len(again[i].Intents) != len(hs[i].Intents) {
				t.Fatalf("history %d changed on the way back", i)
			}
		}
	})
}
