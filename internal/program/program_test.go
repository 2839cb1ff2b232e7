package program

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func flags() *flag.FlagSet {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	fs.String("url", "", "the target's `URL`")
	fs.String("body", "", "the request body")
	return fs
}

// Every way flags go wrong is one usage line that names the command; -h
// prints the flags and is no error.
func TestParseFlags(t *testing.T) {
	gone := map[string]string{"seed": "there is nothing to seed"}
	var out bytes.Buffer
	require.ErrorIs(t, ParseFlags("idemcheck", flags(), []string{"-h"}, &out, gone), ErrHelp)
	assert.Contains(t, out.String(), "Usage of idemcheck certify:")
	assert.Contains(t, out.String(), "-url URL")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--frob"}, "certify: flag provided but not defined: -frob (see idemcheck certify -h)"},
		{[]string{"--bdy", "{}"}, "certify: --bdy is not a flag of certify: did you mean --body? (see idemcheck certify -h)"},
		{[]string{"--ulr", "x"}, "certify: --ulr is not a flag of certify: did you mean --url? (see idemcheck certify -h)"},
		{[]string{"--seed", "42"}, "certify: --seed is not a flag of certify: there is nothing to seed"},
		{[]string{"--url", "http://127.0.0.1", "extra"}, `certify: unexpected argument "extra" (see idemcheck certify -h)`},
	} {
		out.Reset()
		err := ParseFlags("idemcheck", flags(), tc.args, &out, gone)
		require.Error(t, err, tc.args)
		assert.Equal(t, tc.want, err.Error(), tc.args)
		assert.Equal(t, idemcheck.ExitUsage, idemcheck.ExitCode(err), tc.args)
		assert.Empty(t, out.String(), "nothing on stdout but the help")
	}
	require.NoError(t, ParseFlags("idemcheck", flags(), []string{"--url", "http://127.0.0.1"}, &out, nil))
}

// A command's own help (SetHelp) is what -h prints.
func TestParseFlagsOwnHelp(t *testing.T) {
	fs := flags()
	SetHelp(fs, func(w io.Writer) { fmt.Fprintln(w, "certify's own help") })
	var out bytes.Buffer
	require.ErrorIs(t, ParseFlags("idemcheck", fs, []string{"--help"}, &out, nil), ErrHelp)
	assert.Equal(t, "certify's own help\n", out.String())
}
