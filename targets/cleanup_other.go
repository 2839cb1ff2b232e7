//go:build !unix

package targets

// removeWhenGone does nothing outside Unix: a killed run's data directory
// is removed by a later run's stale-directory sweep.
func removeWhenGone(pid int, dir string) error { return nil }
