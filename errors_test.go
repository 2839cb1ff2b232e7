package idemcheck

import (
	"errors"
	"io"
	"testing"
)

// A FieldError says the fields in Go's words, and in a caller's words
// when asked; its exit code and the errors it wraps stay reachable.
func TestFieldError(t *testing.T) {
	err := Fieldf(ExitUsage, "EffectSQL", "%s takes 1 parameter but 0 %s were given; %s or %s: %w",
		Field("EffectSQL"), Field("EffectArgs"), Setting("AllowRemote"), Setting("Unknown"), io.EOF)
	if got := ExitCode(err); got != ExitUsage {
		t.Errorf("exit code %d, want %d", got, ExitUsage)
	}
	want := "EffectSQL takes 1 parameter but 0 EffectArgs were given; set AllowRemote or set Unknown: EOF"
	if err.Error() != want {
		t.Errorf("Go's words:\n got %q\nwant %q", err.Error(), want)
	}
	if !errors.Is(err, io.EOF) {
		t.Error("the wrapped error is not reachable")
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "EffectSQL" {
		t.Fatalf("want a *FieldError about EffectSQL, got %#v", err)
	}
	words := map[Field]Word{
		"EffectSQL": {Name: "--effect-sql"}, "EffectArgs": {Name: "--effect-arg"},
		"AllowRemote": {Name: "--allow-remote", Set: "pass --allow-remote"},
	}
	want = "--effect-sql takes 1 parameter but 0 --effect-arg were given; pass --allow-remote or set Unknown: EOF"
	if got := fe.Text(words); got != want {
		t.Errorf("the caller's words:\n got %q\nwant %q", got, want)
	}
	if got := fe.Text(map[Field]Word{"AllowRemote": {Name: "allow_remote"}}); got != "EffectSQL takes 1 parameter but 0 EffectArgs were given; set allow_remote or set Unknown: EOF" {
		t.Errorf("a word without Set: %q", got)
	}
}

// A Phrase says its settings in a caller's words as a FieldError does, and
// an error about a field it or a FieldError wraps is said in them too.
func TestPhraseAndWrappedFieldErrorsInWords(t *testing.T) {
	words := map[Field]Word{"Powers": {Name: "--cmd", Set: "--cmd"}, "DSN": {Name: "--db", Set: "pass --db DSN"}}
	p := Phrasef("needs powers (%s), not %s", Setting("Powers"), Field("URL"))
	if got := p.String(); got != "needs powers (set Powers), not URL" {
		t.Errorf("Go's words: %q", got)
	}
	if got := p.In(words); got != "needs powers (--cmd), not URL" {
		t.Errorf("the caller's words: %q", got)
	}
	if got := (Phrase{}).In(words); got != "" {
		t.Errorf("the zero phrase: %q", got)
	}
	inner := Fieldf(ExitUnavailable, "DSN", "no free port: %s", Setting("DSN"))
	outer := Fieldf(ExitUnavailable, "DSN", "no database: %s; the local one did not start: %w", Setting("DSN"), inner)
	var fe *FieldError
	if !errors.As(outer, &fe) {
		t.Fatal("no FieldError")
	}
	if got, want := fe.Text(words), "no database: pass --db DSN; the local one did not start: no free port: pass --db DSN"; got != want {
		t.Errorf("wrapped:\n got %q\nwant %q", got, want)
	}
	if got, want := outer.Error(), "no database: set DSN; the local one did not start: no free port: set DSN"; got != want {
		t.Errorf("Go's words:\n got %q\nwant %q", got, want)
	}
}
