package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// Every flag of the commands shown in groups is placed in one of the
// groups: a flag added without its line in flagGroup fails here. Lines
// for flags that do not exist (yet) are allowed.
func TestEveryFlagHasAGroup(t *testing.T) {
	known := map[string]bool{}
	for _, g := range flagGroups {
		known[g.name] = true
	}
	seen := map[string]bool{}
	for _, f := range flagTable {
		assert.True(t, known[f.group], "flagTable's --%s is in %q, no group of flagGroups", f.flag, f.group)
		assert.False(t, seen[f.flag], "--%s is in flagTable twice", f.flag)
		seen[f.flag] = true
	}
	for c := range groupedCommands {
		fs := flagsOf(c)
		require.NotEmpty(t, sortedFlagNames(fs), c)
		for _, n := range sortedFlagNames(fs) {
			assert.NotEmpty(t, flagGroup[n], "%s --%s is in no help group: add its line to flagTable in help.go", c, n)
		}
	}
}

// help CMD and CMD --help print the same help and exit 0, for every
// command; -h too.
func TestHelpAgreesForEveryCommand(t *testing.T) {
	for _, c := range commands {
		if c == "help" {
			continue
		}
		t.Run(c, func(t *testing.T) {
			code, viaHelp, errOut := cli(t, "help", c)
			require.Equal(t, idemcheck.ExitHeld, code, errOut)
			assert.True(t, strings.HasPrefix(viaHelp, "Usage:\n  idemcheck "+c), "%q", viaHelp)
			for _, flag := range []string{"--help", "-h"} {
				code, out, errOut := cli(t, c, flag)
				assert.Equal(t, idemcheck.ExitHeld, code, "%s %s: %s", c, flag, errOut)
				assert.Equal(t, viaHelp, out, "%s %s and help %s", c, flag, c)
				assert.Empty(t, errOut)
			}
		})
	}
	code, _, errOut := cli(t, "help", "frob")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, `unknown command "frob"`)
}

// certify's help opens with its usage and three examples (a URL, --cmd,
// CI), says the --cmd contract, then shows its flags in the named groups,
// in order.
func TestCertifyHelpIsGrouped(t *testing.T) {
	code, out, _ := cli(t, "certify", "--help")
	require.Equal(t, idemcheck.ExitHeld, code)
	examples := out[strings.Index(out, "\nExamples:\n"):strings.Index(out, "\nThe --cmd contract")]
	for _, want := range []string{"certify --url http://", "certify --cmd './bin/orders", "--junit idemcheck.xml"} {
		assert.Contains(t, examples, want)
	}
	for _, want := range []string{"PORT", "ADDR", "DATABASE_URL", "empty PostgreSQL", "migrations", "--ready tcp", "--ready PATH", "/healthz"} {
		assert.Contains(t, out, want, "the --cmd contract")
	}
	last := 0
	for _, g := range []string{"\nTarget:", "\nRequest:", "\nEffects:", "\nChecks:", "\nOutputs:", "\nTLS:", "\nSafety:"} {
		i := strings.Index(out, g)
		require.Positive(t, i, "group %s", g)
		assert.Greater(t, i, last, "group %s in order", g)
		last = i
	}
	assert.Less(t, strings.Index(out, "Usage:"), strings.Index(out, "Examples:"))
	assert.Less(t, strings.Index(out, "Examples:"), strings.Index(out, "\nTarget:"))
	assert.NotContains(t, out, "\nOther:", "every certify flag has its group")
}

// The top-level usage names more than --url: the other targets, the
// request, the effects, and where each command's help is.
func TestUsageShowsMoreThanURL(t *testing.T) {
	code, out, _ := cli(t, "help")
	require.Equal(t, idemcheck.ExitHeld, code)
	for _, want := range []string{"--cmd", "--image", "--body", "--effect-sql", "idemcheck help COMMAND", "completion"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "@latest", "no release is published to go run from")
}

// An unknown flag is answered with the nearest one.
func TestUnknownFlagSuggestsTheNearest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"certify", "--bdy", "{}"}, "did you mean --body?"},
		{[]string{"soak", "--durtion", "1s"}, "did you mean --duration?"},
		{[]string{"check", "--jsno", "x"}, "did you mean --json?"},
	} {
		code, out, errOut := cli(t, tc.args...)
		assert.Equal(t, idemcheck.ExitUsage, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
		assert.Empty(t, out)
	}
}

// The bash completion script loads in bash, registers idemcheck, and
// completes a command's flags and the commands themselves.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	code, script, errOut := cli(t, "completion", "bash")
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	file := filepath.Join(t.TempDir(), "idemcheck.bash")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o600))
	probe := `source "$1"; complete -p idemcheck
COMP_WORDS=(idemcheck certify --bo); COMP_CWORD=2; _idemcheck; echo "flags: ${COMPREPLY[*]}"
COMP_WORDS=(idemcheck ce); COMP_CWORD=1; _idemcheck; echo "commands: ${COMPREPLY[*]}"`
	out, err := exec.Command(bash, "-c", probe, "probe", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "complete -o default -F _idemcheck idemcheck")
	assert.Contains(t, string(out), "flags: --body")
	assert.Contains(t, string(out), "commands: certify")

	for sh, want := range map[string]string{"zsh": "--body", "fish": "-l body"} {
		code, script, errOut := cli(t, "completion", sh)
		assert.Equal(t, idemcheck.ExitHeld, code, errOut)
		assert.Contains(t, script, want, sh)
	}
	code, _, errOut = cli(t, "completion", "tcsh")
	assert.Equal(t, idemcheck.ExitUsage, code)
	assert.Contains(t, errOut, "use bash, zsh or fish")
}

// The man page holds every command and the flags of certify, and renders
// without a roff error (man -l, else groff, where installed).
func TestManPage(t *testing.T) {
	code, page, errOut := cli(t, "man")
	require.Equal(t, idemcheck.ExitHeld, code, errOut)
	require.True(t, strings.HasPrefix(page, ".TH IDEMCHECK 1 "), page[:min(40, len(page))])
	for _, want := range []string{".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SS certify", ".SS soak", `.B \-\-effect\-sql`, ".SH EXIT STATUS"} {
		assert.Contains(t, page, want)
	}
	file := filepath.Join(t.TempDir(), "idemcheck.1")
	require.NoError(t, os.WriteFile(file, []byte(page), 0o600))
	var cmd *exec.Cmd
	if _, err := exec.LookPath("man"); err == nil {
		cmd = exec.Command("man", "-l", file)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=100")
	} else if _, err := exec.LookPath("groff"); err == nil {
		cmd = exec.Command("groff", "-man", "-Tutf8", file)
	} else {
		t.Log("neither man nor groff is installed: the page's structure alone is checked")
		return
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	assert.NotContains(t, stderr.String(), "error")
	// groff justifies lines by widening spaces, on alternate sides from
	// line to line: words are compared with their spacing collapsed.
	text := strings.Join(strings.Fields(string(out)), " ")
	assert.Contains(t, text, "IDEMCHECK(1)")
	assert.Contains(t, text, "The --cmd contract")
	assert.Contains(t, text, "--effect-sql")
}
