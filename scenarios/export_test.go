package scenarios

import (
	"slices"
	"testing"
)

// Register adds c, sending build's scenarios sized by Options.Rounds, to
// the registry for the rest of the test: how the external tests stand a
// new check up and run it through the runner (package runner), which this
// package cannot import.
func Register(t *testing.T, c Check, build func(rounds int) Scenario) {
	t.Helper()
	c.build = rounds(build)
	saved := registry
	registry = append(slices.Clone(registry), c)
	t.Cleanup(func() { registry = saved })
}
