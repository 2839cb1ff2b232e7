package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shipped binary links no example code: the demo and the example API
// are a program of their own (examples/demo). Only this package's tests
// start an example, through their own test binary.
func TestBinaryLinksNoExampleCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		assert.NotContains(t, p, "github.com/idemcheck/idemcheck/examples", "cmd/idemcheck depends on example code")
	}
}
