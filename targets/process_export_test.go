package targets

// SwapPickPort replaces how process targets pick their ports, so a test can
// hand out a taken one; it returns the function that restores the original.
// Tests that call it must not run in parallel.
func SwapPickPort(pick func() (int, error)) (restore func()) {
	saved := pickPort
	pickPort = pick
	return func() { pickPort = saved }
}
