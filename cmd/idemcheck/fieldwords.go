package main

import (
	"errors"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/config"
)

// flagWords are the command's words for the settings the library's errors
// name: its flags (config.FlagWords).
var flagWords = config.FlagWords

// inFlagWords is err's message with the settings it names said as the
// flags that set them.
func inFlagWords(err error) string {
	// The field's words are put in the message as it was; the command's
	// standard error redacts the result (redactorOf).
	if u, ok := err.(interface{ Unredacted() error }); ok {
		err = u.Unredacted()
	}
	msg := err.Error()
	var fe *idemcheck.FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), fe.Text(flagWords), 1)
	}
	return msg
}
