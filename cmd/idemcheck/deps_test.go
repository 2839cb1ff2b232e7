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

// The binary links no test library: no package it depends on is testify
// or testcontainers-go, or imports one. The container layer (targets, for
// --image) speaks to the Docker engine through the engine's API client;
// testcontainers-go, whose root package imports testify's require, is for
// tests alone. The importer is named, so a helper of tests that crept into
// the binary's code shows where it came in.
func TestBinaryLinksNoTestLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	libraries := []string{"github.com/stretchr/testify", "github.com/testcontainers/testcontainers-go"}
	within := func(p, mod string) bool { return p == mod || strings.HasPrefix(p, mod+"/") }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		for _, imp := range strings.Fields(imports) {
			for _, lib := range libraries {
				if within(imp, lib) && !within(pkg, lib) {
					t.Errorf("the binary links %s through %s", imp, pkg)
				}
			}
		}
	}
}
