// Package runner sends what package scenarios says to send and records
// every attempt. Runner.Run sends a plan's scenarios round by round (the
// one-by-one sends, the bursts, the holds with the kill or the retry that
// meets them, the redeliveries), through the faults each step names on the
// client link, the database link and the provider doubles, and records
// every attempt, with the links its fault acted on, in a History.
//
// A soak (Soak) is the same runner in another mode: vegeta paces its first
// attempts instead of rounds of steps, but its sends become attempts
// through the same fill, and every record of both modes goes through one
// recorder interface: in memory for a certification, streamed to a
// history encoder and a counter for a soak. Counting a soak's duplicates
// and lost effects is the checker's (assert.SoakTally), from those
// records. The effect counters (Effects in SQL, HTTPEffects over HTTP)
// serve both modes.
//
// Both modes are run through certify, the entry point: certify.Run for a
// certification, certify.Soak for a soak (its checks, pre-flight,
// outputs, tally and report); the command never drives a Soak itself.
//
// It speaks the root package's vocabulary, takes its checks and steps from
// scenarios and drives the faults and wire packages; it gets the Powers a
// started target lends it from package targets. It never imports the
// checker (assert), the reports, the commands or certify: they use it,
// and the checker learns what it needs of a check from the history alone.
package runner
