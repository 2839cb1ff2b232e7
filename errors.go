package idemcheck

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes are a stable contract with CI pipelines.
const (
	// ExitHeld: every check held.
	ExitHeld = 0
	// ExitAnomalies: the target broke the contract; the report says how.
	ExitAnomalies = 1
	// ExitUsage: bad usage or configuration; nothing was sent, or what was
	// sent is discarded.
	ExitUsage = 2
	// ExitUnavailable: the harness or the target could not run, or the
	// target answered none of the attempts.
	ExitUnavailable = 3
	// ExitInconclusive: the run proved nothing either way: some check's
	// scenario did not happen (inconclusive), every check was skipped, or
	// the history was empty. No anomaly was found.
	ExitInconclusive = 4
)

// Error is an error with the exit code it maps to and a one-line message
// that names what was wrong and how to fix it.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Usagef returns a configuration error (exit code 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Unavailablef returns an error of a harness or target that could not run (exit code 3).
func Unavailablef(format string, args ...any) error {
	return &Error{Code: ExitUnavailable, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error to its exit code: an *Error's own, else 3.
func ExitCode(err error) int {
	if err == nil {
		return ExitHeld
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitUnavailable
}

// A Field names a setting in a configuration error the way Go spells it:
// a field of the configuration the caller filled in, such as "EffectSQL"
// (certify.Config.EffectSQL), "Options.Rounds" or "TLS.Certificates".
// Among a FieldError's arguments it prints as that name.
type Field string

// Setting, among a FieldError's arguments, prints as how to set the
// field: "set AllowRemote".
type Setting Field

func (s Setting) String() string { return "set " + string(s) }

// FieldError is a configuration error that names the settings it is
// about as Fields, so that a Go program reads them as the fields it set,
// and a program whose users set them another way (the command's flags, a
// file's keys) prints the same error in those words with Text. It comes
// wrapped in an *Error, which carries the exit code.
type FieldError struct {
	// Field is the setting the error is chiefly about.
	Field  Field
	format string
	args   []any
	err    error
}

// Fieldf returns an *Error with code around a *FieldError about field.
// Each Field and Setting among args is named in Go's words until a caller
// renders the message in its own (Text); %w wraps as in fmt.Errorf.
func Fieldf(code int, field Field, format string, args ...any) error {
	return &Error{Code: code, Err: &FieldError{Field: field, format: format, args: args, err: fmt.Errorf(format, args...)}}
}

func (e *FieldError) Error() string { return e.err.Error() }

// Unwrap returns the errors the message wraps (%w).
func (e *FieldError) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	}
	return nil
}

// Word is what a program calls a Field: Name where the message names it
// ("--allow-remote"), Set where it says how to set it ("pass
// --allow-remote"; "set " and Name when empty).
type Word struct{ Name, Set string }

// Text is the message in words: each Field and Setting that words knows is
// named as words says, any other in Go's words. An element of a list,
// Headers[2], is named as the list (Headers) where words has no word for
// the element itself. An error the message wraps that is itself about a
// field (a *FieldError) is said in words too.
func (e *FieldError) Text(words map[Field]Word) string {
	return fmt.Errorf(e.format, inWords(words, e.args)...).Error()
}

// Phrase is a text that names settings, such as why a check does not
// apply: Field and Setting values among its arguments, said in a program's
// words by In, as a FieldError's message is by Text. The zero Phrase is
// empty.
type Phrase struct {
	format string
	args   []any
}

// Phrasef returns the phrase format with args, as fmt.Sprintf formats them.
func Phrasef(format string, args ...any) Phrase { return Phrase{format: format, args: args} }

// In is the phrase in words (see FieldError.Text); "" for the zero Phrase.
func (p Phrase) In(words map[Field]Word) string {
	if p.format == "" {
		return ""
	}
	return fmt.Sprintf(p.format, inWords(words, p.args)...)
}

// IsZero reports whether p is the zero, empty, Phrase.
func (p Phrase) IsZero() bool { return p.format == "" }

// String is the phrase in Go's words.
func (p Phrase) String() string { return p.In(nil) }

// inWords returns args with each Field and Setting said as words says,
// and each error about a field said in words.
func inWords(words map[Field]Word, args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
		switch a := a.(type) {
		case Phrase:
			out[i] = a.In(words)
		case Field:
			if w, ok := a.in(words); ok {
				out[i] = w.Name
			}
		case Setting:
			if w, ok := Field(a).in(words); ok {
				out[i] = w.Set
				if w.Set == "" {
					out[i] = "set " + w.Name
				}
			}
		case error:
			var fe *FieldError
			if words != nil && errors.As(a, &fe) {
				out[i] = &said{msg: strings.Replace(a.Error(), fe.Error(), fe.Text(words), 1), err: a}
			}
		}
	}
	return out
}

// said is an error said in other words; it wraps the original.
type said struct {
	msg string
	err error
}

func (s *said) Error() string { return s.msg }
func (s *said) Unwrap() error { return s.err }

// List is the list a field is an element of (Headers for Headers[2]), or
// the field itself.
func (f Field) List() Field {
	if i := strings.LastIndexByte(string(f), '['); i > 0 && strings.HasSuffix(string(f), "]") {
		return f[:i]
	}
	return f
}

func (f Field) in(words map[Field]Word) (Word, bool) {
	if w, ok := words[f]; ok {
		return w, true
	}
	w, ok := words[f.List()]
	return w, ok
}
