// Package scenarios says what to send to a target: each check's scenario is
// a value (how many rounds, and per round the steps of attempts of one
// intent, released together or one after another, through which fault), and
// Run sends them, recording every attempt in a History.
package scenarios

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
)

// Step is one part of a round: Attempts sends of the round's intent, all
// released at the same instant when Together, else one after another, each
// through Fault's link.
type Step struct {
	Attempts int
	Together bool
	Fault    faults.Fault
}

// Scenario is what a check sends: Rounds rounds, each with a fresh intent
// that goes through Steps in order.
type Scenario struct {
	Check  string
	Rounds int
	Steps  []Step
}

// Attempts is how many attempts the scenario sends.
func (s Scenario) Attempts() int {
	n := 0
	for _, st := range s.Steps {
		n += st.Attempts
	}
	return n * s.Rounds
}

// Options size the default scenarios.
type Options struct {
	// BurstSize is how many same-key attempts concurrent-burst releases together.
	BurstSize int
	// BurstRounds is how many bursts it sends, each with a fresh intent.
	BurstRounds int
	// Rounds is how many rounds the sequential checks run.
	Rounds int
}

// Defaults are the sizes a certification uses unless told otherwise. A
// check-then-insert race whose window is one database round trip shows in
// nearly every burst of 32; five bursts make missing it unlikely.
var Defaults = Options{BurstSize: 32, BurstRounds: 5, Rounds: 3}

// Limits bound what a flag may ask for.
const (
	MaxBurstSize = 1024
	MaxRounds    = 10000
)

// Validate names the option that is out of range.
func (o Options) Validate() error {
	switch {
	case o.BurstSize < 2 || o.BurstSize > MaxBurstSize:
		return fmt.Errorf("burst size %d is out of range: use 2 to %d", o.BurstSize, MaxBurstSize)
	case o.BurstRounds < 1 || o.BurstRounds > MaxRounds:
		return fmt.Errorf("burst rounds %d is out of range: use 1 to %d", o.BurstRounds, MaxRounds)
	case o.Rounds < 1 || o.Rounds > MaxRounds:
		return fmt.Errorf("rounds %d is out of range: use 1 to %d", o.Rounds, MaxRounds)
	}
	return nil
}

// ConcurrentBurst sends n attempts of one intent released together, for rounds rounds.
func ConcurrentBurst(n, rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckConcurrentBurst, Rounds: rounds, Steps: []Step{{Attempts: n, Together: true}}}
}

// SequentialReplay sends an intent, waits for its reply, and sends it again.
func SequentialReplay(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckSequentialReplay, Rounds: rounds, Steps: []Step{{Attempts: 1}, {Attempts: 1}}}
}

// LostReply sends an intent whose reply is cut after the server committed,
// then retries it with the same key.
func LostReply(rounds int) Scenario {
	return Scenario{Check: idemcheck.CheckLostReply, Rounds: rounds, Steps: []Step{{Attempts: 1, Fault: faults.CutReply}, {Attempts: 1}}}
}

var builders = map[string]func(Options) Scenario{
	idemcheck.CheckConcurrentBurst:  func(o Options) Scenario { return ConcurrentBurst(o.BurstSize, o.BurstRounds) },
	idemcheck.CheckSequentialReplay: func(o Options) Scenario { return SequentialReplay(o.Rounds) },
	idemcheck.CheckLostReply:        func(o Options) Scenario { return LostReply(o.Rounds) },
}

// Names lists the checks that have a scenario, in the order a
// certification runs them.
func Names() []string {
	return []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckSequentialReplay, idemcheck.CheckLostReply}
}

// ByNames returns the scenarios of the named checks, in the order given.
// An unknown name is an error listing the known ones.
func ByNames(names []string, o Options) ([]Scenario, error) {
	var out []Scenario
	for _, n := range names {
		b, ok := builders[n]
		if !ok {
			known := Names()
			sort.Strings(known)
			return nil, fmt.Errorf("unknown check %q (known: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, b(o))
	}
	return out, nil
}
