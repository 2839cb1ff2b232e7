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
