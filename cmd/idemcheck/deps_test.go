package main

import (
	"os/exec"
	"slices"
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

// The binary links no test library through code of its own: no package it
// depends on imports testify or testcontainers-go except the one way each
// arrives today. testcontainers-go is the container layer's (targets, for
// --image: it starts the target's and its database's containers), and its
// root package imports testify's require for its test helpers (testing.go,
// no build tag), so testify comes with it and through nothing else. A
// helper of tests imported by the binary's code would show here.
func TestBinaryLinksNoTestLibraryOfItsOwn(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	// allowed: for each test library, the packages outside it that may
	// import it.
	allowed := map[string][]string{
		"github.com/stretchr/testify":                 {"github.com/testcontainers/testcontainers-go"},
		"github.com/testcontainers/testcontainers-go": {"github.com/idemcheck/idemcheck/targets"},
	}
	within := func(p, mod string) bool { return p == mod || strings.HasPrefix(p, mod+"/") }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		for _, imp := range strings.Fields(imports) {
			for lib, by := range allowed {
				if within(imp, lib) && !within(pkg, lib) && !slices.Contains(by, pkg) {
					t.Errorf("the binary links %s through %s", imp, pkg)
				}
			}
		}
	}
}
