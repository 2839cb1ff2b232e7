package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

// A library error that names the way out as a setting, however deep it is
// wrapped, is said with the command's flags.
func TestLibraryErrorsAreSaidInFlags(t *testing.T) {
	local := idemcheck.Fieldf(idemcheck.ExitUnavailable, "DSN", "no database: %s; the local PostgreSQL did not start: %w",
		idemcheck.Setting("DSN"), idemcheck.Fieldf(idemcheck.ExitUnavailable, "Powers", "needs %s", idemcheck.Setting("Powers")))
	err := idemcheck.Unavailablef("%w", local)
	assert.Equal(t, "no database: set DSN; the local PostgreSQL did not start: needs set Powers", err.Error(), "Go's words")
	assert.Equal(t, "no database: pass --db DSN (or set DATABASE_URL); the local PostgreSQL did not start: needs --cmd or --image", inFlagWords(err))
}
