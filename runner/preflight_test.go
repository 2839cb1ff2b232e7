package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// A silent pre-flight names the setting a slow target needs as the Go
// field (Timeout), not as a flag: a Go program or a suite reads it as
// is, and the command says it as its flag (inFlagWords).
func TestSilentErrorNamesTheSetting(t *testing.T) {
	var err error = &SilentError{Timeout: time.Second}
	assert.Equal(t, "the target gave no answer to the pre-flight request in 1s: is it serving this path, or stuck? (a slow one needs a longer Timeout)", err.Error())
	var fe *idemcheck.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, idemcheck.Field("Timeout"), fe.Field)
	assert.Contains(t, fe.Text(map[idemcheck.Field]idemcheck.Word{"Timeout": {Name: "--timeout"}}), "(a slow one needs a longer --timeout)")
	assert.Equal(t, idemcheck.ExitUnavailable, idemcheck.ExitCode(err))
	var silent *SilentError
	assert.ErrorAs(t, err, &silent)
}
