package idemcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseTemplate: parsing never panics; a template that parses fills
// without panicking, and a text without "{{" is its own filling.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "/orders", `{"customerId":"{{intent}}","totalCents":4000}`, "{{ key }}-{{seq}}", "{{uuid}}", "a{{", "{{}}", "}}{{key"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTemplate(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		got := tm.Fill(Intent{ID: "ic-1", Key: "k", Seq: 7})
		if !strings.Contains(s, "{{") && got != s {
			t.Fatalf("a text without holes changed: %q -> %q", s, got)
		}
	})
}

// FuzzReadHistories: reading never panics, and what reads writes back to
// the same histories.
func FuzzReadHistories(f *testing.F) {
	// The recorded fixtures' first lines: whole ones (hundreds of KB) would
	// leave the fuzzer a few executions a minute.
	for _, name := range []string{"reference.jsonl", "check-then-insert.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("assert", "testdata", name)); err == nil {
			lines := strings.SplitAfterN(string(b), "\n", 9)
			f.Add([]byte(strings.Join(lines[:min(8, len(lines))], "")))
		}
	}
	f.Add([]byte(`{"run":{"seed":1}}` + "\n" + `{"event":{"kind":"fault-landed","intent":"i"}}` + "\n"))
	f.Add([]byte("{\"run\":{}}\nnot json\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := ReadHistories(bytes.NewReader(b), "h.jsonl")
		if err != nil {
			return
		}
		var out bytes.Buffer
		for _, h := range hs {
			if err := h.WriteJSONL(&out); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ReadHistories(&out, "again.jsonl")
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
